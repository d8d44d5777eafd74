import { hydrate, mount } from "svelte";
import App from "./App.svelte";
import "./app.css";
import { applyTheme, rememberedTheme } from "./lib/theme";

// The last chosen theme (the built page has painted it already, src/prerender.ts); App reads the
// stored choice from the core.
applyTheme(rememberedTheme());

const target = document.getElementById("app");
if (!target) {
  throw new Error("index.html has no #app element");
}

// The built page already shows the first view (src/prerender.ts): take that markup over. The dev
// server's page is empty: build it.
const app = target.firstChild ? hydrate(App, { target }) : mount(App, { target });
// The view works from here on; until now it was the page's plain markup. What waits for the app
// (the end-to-end harness) waits for this.
document.documentElement.dataset.app = "running";

export default app;
