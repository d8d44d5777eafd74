import { beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreSkillPage, StoreSkillSummary } from "../../gen";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const { SkillsShelf, skillAction } = await import("./skillsShelf.svelte");

function skill(name: string, installed: string | null = null): StoreSkillSummary {
  return {
    name,
    description: `Works with ${name} files`,
    version: "1.1.0",
    author: "Ana",
    license: "MIT",
    publisher: null,
    category: null,
    files: ["SKILL.md", "scripts/run.py"],
    size: 2048,
    installs: 3,
    featured: false,
    sha256: `sha-${name}`,
    installed_version: installed,
  };
}

function page(...skills: StoreSkillSummary[]): StoreSkillPage {
  return { skills, total: skills.length, page: 1, per_page: 24 };
}

describe("the store's skills", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("offer install, update or removal by what is installed here", () => {
    expect(skillAction(skill("pdf"))).toBe("install");
    expect(skillAction(skill("pdf", "1.0.0"))).toBe("update");
    expect(skillAction(skill("pdf", "1.1.0"))).toBe("remove");
  });

  it("install exactly the version and archive the person was shown, after asking", async () => {
    let installed: string | null = null;
    invoke.mockImplementation(async (command: string, args: Record<string, unknown>) => {
      if (command === "store_skills") return page(skill("pdf", installed));
      if (command === "install_store_skill") {
        installed = "1.1.0";
        return { name: args.name, version: "1.1.0", message: "Installed the skill pdf 1.1.0." };
      }
      throw { code: "internal", message: `unexpected ${command}` };
    });
    const shelf = new SkillsShelf();
    await shelf.load();
    const shown = shelf.results!.skills[0];
    // Asking installs nothing; cancelling neither.
    shelf.ask(shown);
    shelf.cancel();
    expect(invoke.mock.calls.map((c) => c[0])).toEqual(["store_skills"]);
    shelf.ask(shown);
    await shelf.confirm();
    expect(invoke).toHaveBeenCalledWith("install_store_skill", { name: "pdf", version: "1.1.0", sha256: "sha-pdf" });
    expect(shelf.notice).toBe("Installed the skill pdf 1.1.0.");
    expect(shelf.asking).toBeNull();
    expect(skillAction(shelf.results!.skills[0])).toBe("remove");
  });

  it("show what went wrong and keep the list when an install is refused", async () => {
    invoke.mockImplementation(async (command: string) => {
      if (command === "store_skills") return page(skill("pdf"));
      throw { code: "signature_invalid", message: "the archive's signature does not verify" };
    });
    const shelf = new SkillsShelf();
    await shelf.load();
    shelf.ask(shelf.results!.skills[0]);
    await shelf.confirm();
    expect(shelf.actionError?.code).toBe("signature_invalid");
    expect(shelf.notice).toBeNull();
    expect(shelf.busy).toBeNull();
    expect(shelf.results!.skills).toHaveLength(1);
  });

  it("search from the first page and ignore an older, slower answer", async () => {
    let release: (value: StoreSkillPage) => void = () => {};
    invoke.mockImplementation(async (_command: string, args: { query: string }) => {
      if (args.query === "old") return new Promise<StoreSkillPage>((resolve) => (release = resolve));
      return page(skill(args.query || "all"));
    });
    const shelf = new SkillsShelf();
    shelf.page = 3;
    const older = shelf.search("old");
    await shelf.search("pdf");
    release(page(skill("stale")));
    await older;
    expect(shelf.page).toBe(1);
    expect(shelf.results!.skills.map((s) => s.name)).toEqual(["pdf"]);
  });
});
