import { describe, expect, it } from "vitest";
import { wrappedFocus } from "./focusTrap";

describe("wrappedFocus", () => {
  it("wraps Tab from the last control to the first and Shift+Tab from the first to the last", () => {
    expect(wrappedFocus(3, 2, false)).toBe(0);
    expect(wrappedFocus(3, 0, true)).toBe(2);
  });

  it("steps to the neighbour in between", () => {
    expect(wrappedFocus(3, 0, false)).toBe(1);
    expect(wrappedFocus(3, 1, false)).toBe(2);
    expect(wrappedFocus(3, 1, true)).toBe(0);
    expect(wrappedFocus(3, 2, true)).toBe(1);
  });

  it("brings a focus that escaped back in, at the end Tab comes from", () => {
    expect(wrappedFocus(3, -1, false)).toBe(0);
    expect(wrappedFocus(3, -1, true)).toBe(2);
  });

  it("keeps a single control focused and does nothing without controls", () => {
    expect(wrappedFocus(1, 0, false)).toBe(0);
    expect(wrappedFocus(1, 0, true)).toBe(0);
    expect(wrappedFocus(0, -1, false)).toBeNull();
  });
});
