import { hydrate, mount } from "svelte";
import App from "./App.svelte";
import "./app.css";
import { reportInteractive } from "./ipc";
import { paintRememberedTheme } from "./lib/theme";

const target = document.getElementById("app");
if (!target) {
  throw new Error("index.html has no #app element");
}

// The built page already shows the first view in the remembered theme (src/prerender.ts): take
// that markup over. The dev server's page is empty: paint the theme and build the view. App then
// reads the stored choice from the core.
let app;
if (target.firstChild) {
  app = hydrate(App, { target });
} else {
  paintRememberedTheme();
  app = mount(App, { target });
}
// The view works from here on; until now it was the page's plain markup. What waits for the app
// (the end-to-end harness, the start-up benchmark's probe) waits for this.
document.documentElement.dataset.app = "running";
reportInteractive();

export default app;
