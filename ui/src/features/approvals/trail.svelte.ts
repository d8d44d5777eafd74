// The Approvals page's audit trail and grants: loaded on demand, filtered, paged ("Show older")
// and revoked, apart from the markup so it can be tested against a mocked IPC.

import { auditLog, listGrants, revokeGrant, toUiError, type UiError } from "../../ipc";
import type { AuditRow, GrantRow } from "../../gen";
import { EMPTY_FILTER, toFilter, withoutGrant, type FilterForm } from "./audit";

/** Rows per page of the trail. */
export const PAGE = 50;

export class Trail {
  rows = $state<AuditRow[]>([]);
  form = $state<FilterForm>({ ...EMPTY_FILTER });
  /** More rows may be older than the last one shown. */
  more = $state(false);
  loading = $state(false);
  error = $state<UiError | null>(null);
  grants = $state<GrantRow[]>([]);
  grantsLoaded = $state(false);
  grantsError = $state<UiError | null>(null);
  /** The grant being revoked. */
  revoking = $state<number | null>(null);

  /** Loads the newest rows matching the form. */
  async load(): Promise<void> {
    this.loading = true;
    this.error = null;
    try {
      const rows = await auditLog(toFilter(this.form, undefined, PAGE));
      this.rows = rows;
      this.more = rows.length === PAGE;
    } catch (reason) {
      this.error = toUiError(reason);
    }
    this.loading = false;
  }

  /** Appends the next older page. */
  async loadMore(): Promise<void> {
    const last = this.rows[this.rows.length - 1];
    if (!last) {
      return this.load();
    }
    this.loading = true;
    this.error = null;
    try {
      const rows = await auditLog(toFilter(this.form, last.id, PAGE));
      this.rows = [...this.rows, ...rows];
      this.more = rows.length === PAGE;
    } catch (reason) {
      this.error = toUiError(reason);
    }
    this.loading = false;
  }

  async clearFilter(): Promise<void> {
    this.form = { ...EMPTY_FILTER };
    await this.load();
  }

  async loadGrants(): Promise<void> {
    this.grantsError = null;
    try {
      this.grants = await listGrants();
      this.grantsLoaded = true;
    } catch (reason) {
      this.grantsError = toUiError(reason);
    }
  }

  /** Revokes a grant; it leaves the list once the core confirms. */
  async revoke(id: number): Promise<void> {
    this.revoking = id;
    this.grantsError = null;
    try {
      await revokeGrant(id);
      this.grants = withoutGrant(this.grants, id);
    } catch (reason) {
      const error = toUiError(reason);
      this.grantsError = error;
      if (error.code === "grant_not_found") {
        // Gone already (expired, or revoked elsewhere): the list catches up.
        this.grants = withoutGrant(this.grants, id);
      }
    }
    this.revoking = null;
  }
}
