import { describe, expect, it } from "vitest";
import { DEFAULT_ROUTE, ROUTES, hrefFor, routeFromHash, routeLabel } from "./router";

describe("routeFromHash", () => {
  it("maps an empty hash to the default route", () => {
    expect(routeFromHash("")).toBe(DEFAULT_ROUTE);
    expect(routeFromHash("#")).toBe(DEFAULT_ROUTE);
    expect(routeFromHash("#/")).toBe(DEFAULT_ROUTE);
  });

  it("round-trips every route through its href", () => {
    for (const route of ROUTES) {
      expect(routeFromHash(hrefFor(route.id))).toBe(route.id);
    }
  });

  it("tolerates a trailing slash, a query and letter case", () => {
    expect(routeFromHash("#/settings/")).toBe("settings");
    expect(routeFromHash("#/store?tab=skills")).toBe("store");
    expect(routeFromHash("#/Apps")).toBe("apps");
  });

  it("returns null for unknown routes instead of guessing", () => {
    expect(routeFromHash("#/nope")).toBeNull();
    expect(routeFromHash("#/settings/secret")).toBeNull();
  });
});

describe("routeLabel", () => {
  it("gives the navigation label", () => {
    expect(routeLabel("settings")).toBe("Settings");
    expect(routeLabel("chat")).toBe("Chat");
  });
});
