// The pages other than Chat are chunks of their own, loaded the first time one is shown or when
// the pointer or the keyboard focus reaches its link (a person about to open it). Chat is the
// first view of every launch and stays in the first script; without the other pages that
// script is half the size, and a window that is only chatted in never parses them.
import type { Component } from "svelte";
import { LazyImport } from "./lib/lazyImport.svelte";
import type { RouteId } from "./lib/router";

export type LazyRoute = Exclude<RouteId, "chat">;

type Page = { default: Component };

const PAGES: Record<LazyRoute, LazyImport<Page>> = {
  approvals: new LazyImport<Page>(() => import("./features/approvals/ApprovalsView.svelte")),
  store: new LazyImport<Page>(() => import("./features/store/StoreView.svelte")),
  apps: new LazyImport<Page>(() => import("./features/apps/AppsView.svelte")),
  settings: new LazyImport<Page>(() => import("./features/settings/SettingsView.svelte")),
};

/** Whether `route` is a page loaded on demand (every known page but Chat). */
export function isLazy(route: RouteId | null): route is LazyRoute {
  return route !== null && route !== "chat";
}

/** Loads a page (once; a failed import is tried again by the next call). */
export async function loadView(route: LazyRoute): Promise<void> {
  await PAGES[route].load();
}

/** The page's component once loaded, else undefined; reactive, like `LazyImport.value`. */
export function loadedView(route: LazyRoute): Component | undefined {
  return PAGES[route].value?.default;
}
