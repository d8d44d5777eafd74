// The pages other than Chat are chunks of their own, loaded the first time one is shown or when
// the pointer or the keyboard focus reaches its link (a person about to open it). Chat is the
// first view of every launch and stays in the first script; without the other pages that
// script is half the size, and a window that is only chatted in never parses them.
import type { Component } from "svelte";
import type { RouteId } from "./lib/router";

export type LazyRoute = Exclude<RouteId, "chat">;

export type ViewLoaders = Record<LazyRoute, () => Promise<{ default: Component }>>;

const LOADERS: ViewLoaders = {
  approvals: () => import("./features/approvals/ApprovalsView.svelte"),
  store: () => import("./features/store/StoreView.svelte"),
  apps: () => import("./features/apps/AppsView.svelte"),
  settings: () => import("./features/settings/SettingsView.svelte"),
};

/** Whether `route` is a page loaded on demand (every known page but Chat). */
export function isLazy(route: RouteId | null): route is LazyRoute {
  return route !== null && route !== "chat";
}

/** A loader of pages through `loaders`: each is imported once, whoever asks first; a failed
 * import (the app's files changed under it) is tried again by the next call. */
export function viewLoader(loaders: ViewLoaders): (route: LazyRoute) => Promise<Component> {
  const pending = new Map<LazyRoute, Promise<Component>>();
  return (route) => {
    let load = pending.get(route);
    if (!load) {
      load = loaders[route]().then(
        (module) => module.default,
        (reason: unknown) => {
          pending.delete(route);
          throw reason;
        },
      );
      pending.set(route, load);
    }
    return load;
  };
}

export const loadView = viewLoader(LOADERS);
