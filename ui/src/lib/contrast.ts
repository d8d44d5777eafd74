// WCAG 2.x contrast: relative luminance and the (L1 + 0.05) / (L2 + 0.05) ratio, plus the pairs
// of theme colours the app paints text and controls with. The formula is ten lines from the
// spec (https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio); an npm package for it would add a
// colour parser we do not need (app.css uses hex only), so it lives here and contrast.test.ts
// checks every pair in both themes. The end-to-end suite (tests/e2e/desktop_a11y.rs) checks the
// colours the real page computes.

/** The red, green and blue channels (0 to 255) of `#rgb` or `#rrggbb`; null for anything else. */
export function parseHex(colour: string): [number, number, number] | null {
  const match = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(colour.trim());
  if (!match) return null;
  const hex = match[1].length === 3 ? [...match[1]].map((c) => c + c).join("") : match[1];
  return [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
}

/** Relative luminance of an sRGB colour, 0 (black) to 1 (white). */
export function luminance([r, g, b]: [number, number, number]): number {
  const linear = (channel: number) => {
    const c = channel / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}

/** The contrast ratio of two colours, 1 to 21, whichever is lighter. */
export function contrastRatio(a: [number, number, number], b: [number, number, number]): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

/** AA minimums: body text, large text (24 px, or 18.66 px bold), and UI component edges and
 * focus rings. */
export const AA = { text: 4.5, large: 3, ui: 3 } as const;

/** A foreground variable painted on a background variable, and the minimum it needs. */
export interface ThemePair {
  fg: string;
  bg: string;
  min: number;
  what: string;
}

const textOn = (fg: string, bgs: string[], what: string): ThemePair[] =>
  bgs.map((bg) => ({ fg, bg, min: AA.text, what }));

/** Every pairing of theme colours the UI uses for text and for controls' edges. */
export const THEME_PAIRS: ThemePair[] = [
  ...textOn("--text", ["--bg", "--surface"], "body text"),
  ...textOn("--muted", ["--bg", "--surface"], "secondary text and placeholders"),
  ...textOn("--accent", ["--bg", "--surface"], "links"),
  { fg: "--accent-text", bg: "--accent", min: AA.text, what: "primary buttons, the current page, your messages" },
  { fg: "--danger-text", bg: "--danger-bg", min: AA.text, what: "errors and the Stop button" },
  { fg: "--warning-text", bg: "--warning-bg", min: AA.text, what: "warnings" },
  ...textOn("--success-text", ["--bg", "--surface"], "saved and copied notes"),
  ...["--hl-keyword", "--hl-string", "--hl-number", "--hl-title", "--hl-comment", "--hl-type", "--hl-attr"].map(
    (fg) => ({ fg, bg: "--bg", min: AA.text, what: "syntax colours in code blocks" }),
  ),
  { fg: "--hl-deletion", bg: "--hl-deletion-bg", min: AA.text, what: "removed lines in a diff" },
  { fg: "--hl-addition", bg: "--hl-addition-bg", min: AA.text, what: "added lines in a diff" },
  { fg: "--control-border", bg: "--bg", min: AA.ui, what: "input and button edges" },
  { fg: "--control-border", bg: "--surface", min: AA.ui, what: "input and button edges" },
  { fg: "--accent", bg: "--bg", min: AA.ui, what: "the focus ring" },
  { fg: "--accent", bg: "--surface", min: AA.ui, what: "the focus ring" },
  { fg: "--danger-text", bg: "--bg", min: AA.ui, what: "the Stop button's edge" },
];

/** The custom properties declared in the first block of `css` whose selector is `selector`. */
export function customProperties(css: string, selector: string): Record<string, string> {
  const start = css.indexOf(`${selector} {`);
  if (start < 0) return {};
  const body = css.slice(css.indexOf("{", start) + 1, css.indexOf("}", start));
  const properties: Record<string, string> = {};
  for (const match of body.matchAll(/(--[\w-]+)\s*:\s*([^;]+);/g)) {
    properties[match[1]] = match[2].trim();
  }
  return properties;
}
