// The write state every settings section shares: busy, the error to show in place, "Saved".
import type { SettingsOverview } from "../../gen";
import { toUiError, type UiError } from "../../ipc";

export class SaveState {
  busy = $state(false);
  error = $state<UiError | null>(null);
  saved = $state(false);

  /** Runs `write`, hands its overview to `done`, and keeps the error for the section to show. */
  async run(write: () => Promise<SettingsOverview>, done: (next: SettingsOverview) => void): Promise<boolean> {
    this.busy = true;
    this.error = null;
    this.saved = false;
    try {
      done(await write());
      this.saved = true;
      return true;
    } catch (reason) {
      this.error = toUiError(reason);
      return false;
    } finally {
      this.busy = false;
    }
  }
}
