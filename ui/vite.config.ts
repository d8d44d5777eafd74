import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vitest/config";

// The desktop shell embeds ui/dist (tauri.conf.json `frontendDist`), so `npm run build` must run
// before `cargo build -p osprey-desktop`. The dev server port matches tauri.conf.json `devUrl`.
export default defineConfig({
  plugins: [svelte()],
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // WebKitGTK 2.40+ and WebView2 both handle this comfortably.
    target: "es2022",
  },
  test: {
    environment: "node",
    include: ["src/**/*.test.ts"],
    // app.css is read as text by lib/contrast.test.ts; vitest empties CSS it does not include.
    css: { include: [/app\.css/] },
  },
});
