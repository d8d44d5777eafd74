// The Store page's Skills tab, apart from its markup so it can be tested against a mocked IPC:
// the store's skills (searched and paged), installing one at the version and archive the person
// was shown (asked first, with its files), updating and removing.

import { installStoreSkill, storeSkills, toUiError, uninstallStoreSkill, type UiError } from "../../ipc";
import type { StoreSkillPage, StoreSkillSummary } from "../../gen";

/** What the skill's button does here: install it, update it to the store's version, or remove it. */
export type SkillAction = "install" | "update" | "remove";

export function skillAction(skill: StoreSkillSummary): SkillAction {
  if (skill.installed_version === null) {
    return "install";
  }
  return skill.installed_version === skill.version ? "remove" : "update";
}

export class SkillsShelf {
  /** What the search box searched for (empty: every skill). */
  query = $state("");
  page = $state(1);
  results = $state<StoreSkillPage | null>(null);
  listError = $state<UiError | null>(null);
  loading = $state(false);
  /** The skill the install question is about. */
  asking = $state<StoreSkillSummary | null>(null);
  /** The skill being installed or removed now. */
  busy = $state<string | null>(null);
  /** What the last install or removal did, in a sentence. */
  notice = $state<string | null>(null);
  actionError = $state<UiError | null>(null);
  /** Counts list requests, so a slow answer to an older search never replaces a newer one. */
  private listRequest = 0;

  async load(): Promise<void> {
    const request = ++this.listRequest;
    this.loading = true;
    this.listError = null;
    try {
      const results = await storeSkills(this.query, null, this.page);
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
    await this.load();
  }

  async goToPage(page: number): Promise<void> {
    this.page = Math.max(1, page);
    await this.load();
  }

  /** Install or Update: the question opens, showing what the skill puts on this computer. */
  ask(skill: StoreSkillSummary): void {
    this.actionError = null;
    this.notice = null;
    this.asking = skill;
  }

  cancel(): void {
    this.asking = null;
  }

  /** The person said yes: install exactly what they were shown. */
  async confirm(): Promise<void> {
    const skill = this.asking;
    if (!skill || this.busy) {
      return;
    }
    this.asking = null;
    await this.run(skill.name, () => installStoreSkill(skill.name, skill.version, skill.sha256));
  }

  async remove(skill: StoreSkillSummary): Promise<void> {
    if (this.busy) {
      return;
    }
    this.actionError = null;
    this.notice = null;
    await this.run(skill.name, () => uninstallStoreSkill(skill.name));
  }

  private async run(name: string, action: () => Promise<{ message: string }>): Promise<void> {
    this.busy = name;
    this.actionError = null;
    try {
      this.notice = (await action()).message;
    } catch (reason) {
      this.actionError = toUiError(reason);
    }
    this.busy = null;
    await this.load();
  }
}
