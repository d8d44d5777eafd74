// The window's theme: `light`, `dark`, or `system` (follow the desktop). The choice is stored in
// the core (`ui.theme`) and mirrored in localStorage so the first paint already has the right
// colours; app.css keys its variables on `data-theme` on the root element.
import type { Theme } from "../gen";

export const THEMES: ReadonlyArray<{ id: Theme; label: string }> = [
  { id: "system", label: "Follow the system" },
  { id: "light", label: "Light" },
  { id: "dark", label: "Dark" },
];

const STORAGE_KEY = "osprey.theme";

/** The colours to paint with: the chosen theme, or the system's when it follows the system. */
export function resolveTheme(theme: Theme, systemDark: boolean): "light" | "dark" {
  if (theme === "system") {
    return systemDark ? "dark" : "light";
  }
  return theme;
}

export function isTheme(value: unknown): value is Theme {
  return value === "system" || value === "light" || value === "dark";
}

function systemDark(): boolean {
  return typeof window !== "undefined" && !!window.matchMedia?.("(prefers-color-scheme: dark)").matches;
}

/** Paints `theme` on the root element and remembers it for the next start's first paint. */
export function applyTheme(theme: Theme, root: HTMLElement = document.documentElement): void {
  root.dataset.theme = resolveTheme(theme, systemDark());
  root.dataset.themeChoice = theme;
  try {
    localStorage.setItem(STORAGE_KEY, theme);
  } catch {
    // Storage may be unavailable; the core still has the choice.
  }
}

/** The theme remembered from the last run (before the core answers). */
export function rememberedTheme(): Theme {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return isTheme(value) ? value : "system";
  } catch {
    return "system";
  }
}

/**
 * `applyTheme(rememberedTheme())` for the first paint, before any module has loaded: the built
 * index.html runs this function's source inline in its head (src/prerender.ts; main.ts calls it
 * on the dev server's empty page). So it uses nothing from outside its own body; theme.test.ts
 * runs its source alone and holds it to `applyTheme`.
 */
export function paintRememberedTheme(): void {
  let theme = "system";
  try {
    const value = localStorage.getItem("osprey.theme");
    if (value === "light" || value === "dark" || value === "system") theme = value;
  } catch {
    // No storage: follow the system.
  }
  const dark = typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
  const root = document.documentElement;
  root.dataset.theme = theme === "system" ? (dark ? "dark" : "light") : theme;
  root.dataset.themeChoice = theme;
}

/** Repaints when the system switches between light and dark while following it. */
export function followSystem(current: () => Theme): () => void {
  const query = window.matchMedia?.("(prefers-color-scheme: dark)");
  if (!query) return () => {};
  const onChange = () => {
    if (current() === "system") applyTheme("system");
  };
  query.addEventListener("change", onChange);
  return () => query.removeEventListener("change", onChange);
}
