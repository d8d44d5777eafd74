// The Store page's state and actions, apart from its markup so they can be tested against a
// mocked IPC: the front page, search, categories and paging, an app's page, and the install
// flow (prompt, progress from core events, result, approving an update's new permissions).

import {
  approveAppUpdate,
  installApp,
  installStoreApp,
  rejectAppUpdate,
  storeApp,
  storeCatalog,
  storeHome,
  toUiError,
  uninstallApp,
  type UiError,
} from "../../ipc";
import type {
  CoreEvent,
  PermissionExplained,
  StoreAppDetails,
  StoreCatalogPage,
  StoreHome,
} from "../../gen";
import {
  IDLE,
  applyInstallProgress,
  askToInstall,
  failInstall,
  finishInstall,
  startInstall,
  type InstallFlow,
} from "./store";

/** What the install dialog is about: a store app (with its permissions) or a package file. */
export interface InstallTarget {
  /** The store id, or the file's path. */
  source: string;
  fromFile: boolean;
  name: string;
  version: string;
  permissions: PermissionExplained[] | null;
  added: string[];
  isUpdate: boolean;
}

export class StorePage {
  home = $state<StoreHome | null>(null);
  homeError = $state<UiError | null>(null);
  /** What the search box searched for (empty: no search). */
  query = $state("");
  category = $state<string | null>(null);
  page = $state(1);
  results = $state<StoreCatalogPage | null>(null);
  listError = $state<UiError | null>(null);
  loading = $state(false);
  details = $state<StoreAppDetails | null>(null);
  detailsError = $state<UiError | null>(null);
  /** An error of an action on the app's page (uninstall, approve, reject). */
  actionError = $state<UiError | null>(null);
  busy = $state(false);
  flow = $state<InstallFlow>(IDLE);
  target = $state<InstallTarget | null>(null);
  /** Counts list requests, so a slow answer to an older search never replaces a newer one. */
  private listRequest = 0;

  /** True when the page lists search or category results rather than the front page. */
  get browsing(): boolean {
    return this.query !== "" || this.category !== null;
  }

  async loadHome(): Promise<void> {
    this.homeError = null;
    try {
      this.home = await storeHome();
    } catch (reason) {
      this.homeError = toUiError(reason);
    }
  }

  private async list(): Promise<void> {
    const request = ++this.listRequest;
    this.loading = true;
    this.listError = null;
    try {
      const results = await storeCatalog(this.query, this.category, this.page);
      if (request === this.listRequest) {
        this.results = results;
      }
    } catch (reason) {
      if (request === this.listRequest) {
        this.results = null;
        this.listError = toUiError(reason);
      }
    }
    if (request === this.listRequest) {
      this.loading = false;
    }
  }

  async search(query: string): Promise<void> {
    this.query = query.trim();
    this.page = 1;
    this.details = null;
    if (!this.browsing) {
      this.results = null;
      return;
    }
    await this.list();
  }

  async chooseCategory(category: string | null): Promise<void> {
    this.category = category;
    this.page = 1;
    this.details = null;
    if (!this.browsing) {
      this.results = null;
      return;
    }
    await this.list();
  }

  async goToPage(page: number): Promise<void> {
    this.page = Math.max(1, page);
    await this.list();
  }

  async openApp(id: string): Promise<void> {
    this.detailsError = null;
    this.actionError = null;
    try {
      this.details = await storeApp(id);
    } catch (reason) {
      this.details = null;
      this.detailsError = toUiError(reason);
    }
  }

  closeApp(): void {
    this.details = null;
    this.detailsError = null;
    this.actionError = null;
  }

  /** Reloads what the page shows after something changed (an install, an uninstall). */
  async refresh(): Promise<void> {
    const open = this.details?.app.id;
    await Promise.all([
      this.loadHome(),
      this.browsing ? this.list() : Promise.resolve(),
      open ? this.openApp(open) : Promise.resolve(),
    ]);
  }

  /** Install or Update on the open app's page: the permission prompt opens. */
  askInstall(): void {
    const details = this.details;
    if (!details) {
      return;
    }
    const isUpdate = details.install_state === "update_available";
    this.target = {
      source: details.app.id,
      fromFile: false,
      name: details.app.name,
      version: details.app.version,
      permissions: details.permissions,
      added: isUpdate ? details.added_permissions : [],
      isUpdate,
    };
    this.flow = askToInstall(details.app.id);
  }

  /** Install from a `.napp` file: asked first too (its permissions show once verified). */
  askInstallFile(path: string): void {
    const source = path.trim();
    if (source === "") {
      return;
    }
    const name = source.split(/[\\/]/).pop() ?? source;
    this.target = {
      source,
      fromFile: true,
      name,
      version: "",
      permissions: null,
      added: [],
      isUpdate: false,
    };
    this.flow = askToInstall(source);
  }

  /** The person agreed in the prompt: install and report. */
  async confirm(): Promise<void> {
    const target = this.target;
    if (!target || this.flow.phase !== "confirm") {
      return;
    }
    this.flow = startInstall(this.flow);
    if (target.fromFile) {
      // A local file has nothing to download.
      this.flow = { phase: "verifying", appId: target.source };
    }
    try {
      const report = target.fromFile
        ? await installApp(target.source)
        : await installStoreApp(target.source);
      if (target.fromFile) {
        this.target = { ...target, name: report.app_id, version: report.version };
      }
      this.flow = finishInstall(this.flow, report);
    } catch (reason) {
      this.flow = failInstall(this.flow, toUiError(reason));
    }
    await this.refresh();
  }

  /** Approves the staged update the install just reported (or the open app's). */
  async approve(appId: string): Promise<void> {
    await this.act(() => approveAppUpdate(appId));
  }

  async reject(appId: string): Promise<void> {
    await this.act(() => rejectAppUpdate(appId));
  }

  async uninstall(appId: string): Promise<void> {
    await this.act(() => uninstallApp(appId));
  }

  private async act(action: () => Promise<unknown>): Promise<void> {
    this.busy = true;
    this.actionError = null;
    try {
      await action();
      this.closeDialog();
    } catch (reason) {
      const error = toUiError(reason);
      if (this.flow.phase !== "idle") {
        this.flow = failInstall(this.flow, error);
      } else {
        this.actionError = error;
      }
    }
    this.busy = false;
    await this.refresh();
  }

  closeDialog(): void {
    this.flow = IDLE;
    this.target = null;
  }

  /** Core events: install progress; an app's state changed (refresh the open page). */
  onEvent(event: CoreEvent): void {
    this.flow = applyInstallProgress(this.flow, event);
  }
}
