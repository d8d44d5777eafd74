import { beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreAppDetails, StoreAppSummary, StoreHome } from "../../gen";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const { StorePage } = await import("./storePage.svelte");

function summary(id: string, installed: string | null = null): StoreAppSummary {
  return {
    id,
    name: id.toUpperCase(),
    description: "",
    version: "2.0.0",
    size: 1000,
    publisher: "Acme",
    category: "productivity",
    rating: null,
    review_count: 0,
    downloads: 0,
    featured: true,
    installed_version: installed,
  };
}

function details(state: StoreAppDetails["install_state"]): StoreAppDetails {
  return {
    app: summary("notes", state === "not_installed" ? null : "1.0.0"),
    permissions: [
      { permission: "network:api.example.com", explanation: "Connect to api.example.com over the internet", sensitivity: "medium" },
    ],
    added_permissions: state === "update_available" ? ["network:api.example.com"] : [],
    install_state: state,
    reviews: [],
    published_ms: 0,
    sha256: "",
  };
}

const home: StoreHome = { featured: [summary("notes")], popular: [], categories: [], store_url: "http://store" };

/** Answers each command from a table; a function value is called with the arguments. */
function answer(table: Record<string, unknown>) {
  invoke.mockImplementation(async (command: string, args: unknown) => {
    if (!(command in table)) throw { code: "internal", message: `unexpected ${command}` };
    const value = table[command];
    if (value instanceof Error) throw { code: "store_unavailable", message: value.message };
    return typeof value === "function" ? (value as (a: unknown) => unknown)(args) : value;
  });
}

describe("the store page", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("searches within a category from page 1 and pages on", async () => {
    const page = new StorePage();
    answer({ store_catalog: { apps: [summary("notes")], total: 30, page: 1, per_page: 24 } });
    await page.chooseCategory("productivity");
    await page.search("  notes ");
    expect(invoke).toHaveBeenLastCalledWith("store_catalog", { query: "notes", category: "productivity", page: 1 });
    await page.goToPage(2);
    expect(invoke).toHaveBeenLastCalledWith("store_catalog", { query: "notes", category: "productivity", page: 2 });
    expect(page.browsing).toBe(true);
    await page.chooseCategory(null);
    await page.search("");
    expect(page.browsing).toBe(false);
    expect(page.results).toBeNull();
  });

  it("shows an unreachable store as an error, not an empty page", async () => {
    const page = new StorePage();
    answer({ store_home: new Error("the store at http://store could not be reached") });
    await page.loadHome();
    expect(page.home).toBeNull();
    expect(page.homeError?.code).toBe("store_unavailable");
  });

  it("installs after the prompt, following progress events, and refreshes the app page", async () => {
    const page = new StorePage();
    let installed = false;
    answer({
      store_app: () => details(installed ? "installed" : "not_installed"),
      store_home: home,
      install_store_app: () => {
        // Progress arrives as events while the call runs.
        page.onEvent({ type: "app_install_progress", app_id: "notes", stage: "downloading", received: 5, total: 10 });
        expect(page.flow).toMatchObject({ phase: "downloading", received: 5 });
        installed = true;
        return { app_id: "notes", version: "2.0.0", outcome: "installed", from_version: null, new_permissions: [], message: "" };
      },
    });
    await page.openApp("notes");
    page.askInstall();
    expect(page.flow.phase).toBe("confirm");
    expect(page.target?.permissions?.[0].explanation).toContain("api.example.com");
    expect(invoke).not.toHaveBeenCalledWith("install_store_app", expect.anything());
    await page.confirm();
    expect(invoke).toHaveBeenCalledWith("install_store_app", { appId: "notes" });
    expect(page.flow.phase).toBe("done");
    expect(page.details?.install_state).toBe("installed");
  });

  it("offers an update with its added permissions and approves the staged one", async () => {
    const page = new StorePage();
    answer({
      store_app: details("update_available"),
      store_home: home,
      install_store_app: {
        app_id: "notes",
        version: "2.0.0",
        outcome: "pending_approval",
        from_version: null,
        new_permissions: ["network:api.example.com"],
        message: "",
      },
      approve_app_update: {},
    });
    await page.openApp("notes");
    page.askInstall();
    expect(page.target).toMatchObject({ isUpdate: true, added: ["network:api.example.com"] });
    await page.confirm();
    expect(page.flow).toMatchObject({ phase: "done", report: { outcome: "pending_approval" } });
    await page.approve("notes");
    expect(invoke).toHaveBeenCalledWith("approve_app_update", { appId: "notes" });
    expect(page.flow.phase).toBe("idle");
  });

  it("keeps a refused install as the dialog's error", async () => {
    const page = new StorePage();
    invoke.mockImplementation(async (command: string) => {
      if (command === "install_app") throw { code: "signature_invalid", message: "bad signature" };
      if (command === "store_home") return home;
      return null;
    });
    page.askInstallFile("/tmp/evil.napp");
    expect(page.target?.name).toBe("evil.napp");
    await page.confirm();
    expect(invoke).toHaveBeenCalledWith("install_app", { source: "/tmp/evil.napp" });
    expect(page.flow).toMatchObject({ phase: "failed", error: { code: "signature_invalid" } });
  });
});
