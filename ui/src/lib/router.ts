// A tiny hash router: the app has a handful of fixed areas, so a table beats a dependency.
// Hash routing keeps working when the page is served from Tauri's custom protocol, where there
// is no server to answer deep links.

export type RouteId = "chat" | "approvals" | "store" | "apps" | "settings";

export interface Route {
  id: RouteId;
  /** The label shown in the navigation and used as the page heading. */
  label: string;
}

export const ROUTES: readonly Route[] = [
  { id: "chat", label: "Chat" },
  { id: "approvals", label: "Approvals" },
  { id: "store", label: "Store" },
  { id: "apps", label: "Apps" },
  { id: "settings", label: "Settings" },
];

export const DEFAULT_ROUTE: RouteId = "chat";

/** The href of a route, for `<a href>` (so links stay real links: open, copy, read aloud). */
export function hrefFor(id: RouteId): string {
  return `#/${id}`;
}

/**
 * Reads a `location.hash` value. An empty hash means the default route; anything that is not a
 * known route gives `null`, so the caller can say "not found" rather than silently redirect.
 */
export function routeFromHash(hash: string): RouteId | null {
  const path = hash.replace(/^#\/?/, "").split(/[?#]/, 1)[0].replace(/\/+$/, "");
  if (path === "") {
    return DEFAULT_ROUTE;
  }
  const route = ROUTES.find((r) => r.id === path.toLowerCase());
  return route ? route.id : null;
}

export function routeLabel(id: RouteId): string {
  const route = ROUTES.find((r) => r.id === id);
  return route ? route.label : id;
}
