import { describe, expect, it } from "vitest";
import css from "../app.css?raw";
import { AA, THEME_PAIRS, contrastRatio, customProperties, parseHex } from "./contrast";

const light = customProperties(css, ":root");
// The dark block overrides the light one; what it leaves out is the light value.
const dark = { ...light, ...customProperties(css, ':root[data-theme="dark"]') };

describe("contrastRatio", () => {
  it("follows the WCAG formula", () => {
    expect(contrastRatio([0, 0, 0], [255, 255, 255])).toBeCloseTo(21, 5);
    expect(contrastRatio([255, 255, 255], [255, 255, 255])).toBe(1);
    // WebAIM's checker: #767676 on white is 4.54:1, the lightest grey that passes AA.
    expect(contrastRatio(parseHex("#767676")!, parseHex("#fff")!)).toBeCloseTo(4.54, 2);
    expect(contrastRatio(parseHex("#777777")!, parseHex("#ffffff")!)).toBeLessThan(AA.text);
  });

  it("reads hex colours only", () => {
    expect(parseHex("#1f5fbf")).toEqual([31, 95, 191]);
    expect(parseHex("#abc")).toEqual([170, 187, 204]);
    expect(parseHex("red")).toBeNull();
    expect(parseHex("#12345")).toBeNull();
  });
});

describe.each([
  ["light", light],
  ["dark", dark],
])("the %s theme", (_name, theme) => {
  it("declares every colour the pairs use, as hex", () => {
    for (const name of new Set(THEME_PAIRS.flatMap((p) => [p.fg, p.bg]))) {
      expect(parseHex(theme[name] ?? ""), name).not.toBeNull();
    }
  });

  it.each(THEME_PAIRS.map((p) => [`${p.fg} on ${p.bg} (${p.what})`, p] as const))(
    "%s passes WCAG AA",
    (_label, pair) => {
      const ratio = contrastRatio(parseHex(theme[pair.fg])!, parseHex(theme[pair.bg])!);
      expect(ratio, `${pair.fg} ${theme[pair.fg]} on ${pair.bg} ${theme[pair.bg]}`).toBeGreaterThanOrEqual(pair.min);
    },
  );
});

describe("the dark block", () => {
  it("gives every colour a dark value of its own", () => {
    const own = customProperties(css, ':root[data-theme="dark"]');
    for (const name of Object.keys(light).filter((n) => parseHex(light[n]))) {
      expect(own[name], `${name} has no dark value`).toBeDefined();
    }
  });
});
