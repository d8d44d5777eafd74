// What a failed store or install call means to a person: one place maps each code to what
// happened and what to do, so the Store page, the install dialog and the Apps page say the same.

import type { UiError } from "../../ipc";

export interface Explained {
  /** What happened, in one short sentence. */
  title: string;
  /** What the person can do about it. */
  action: string;
}

/** Explains a store, install or update failure; the core's message stays available as detail. */
export function explainStoreError(error: UiError): Explained {
  switch (error.code) {
    case "store_unavailable":
      if (/no store is set/i.test(error.message)) {
        return {
          title: "No store is set up.",
          action: "Enter the store's address in Settings, then come back here.",
        };
      }
      return {
        title: "The store could not be reached.",
        action: "Check your internet connection and the store address in Settings, then try again.",
      };
    case "store_refused":
      return {
        title: "The store refused the request.",
        action: "Try again later; if it keeps happening, the store may have removed this app.",
      };
    case "unknown_app":
      return {
        title: "The store has no such app.",
        action: "It may have been removed. Go back to the store and search for it again.",
      };
    case "signature_invalid":
    case "key_invalid":
      return {
        title: "The package's signature does not match the store's key.",
        action:
          "Nothing was installed. The download may have been tampered with: do not install it from elsewhere, and tell the store.",
      };
    case "revoked":
      return {
        title: "The store has revoked this app.",
        action: "It is no longer considered safe, so it was not installed. Look for an alternative.",
      };
    case "revocation_unavailable":
      return {
        title: "The store's list of revoked apps could not be checked.",
        action:
          "Osprey installs and runs store apps only with a recent list. Connect to the internet and try again.",
      };
    case "package_rejected":
    case "manifest_invalid":
    case "binary_invalid":
      return {
        title: "The package is not a valid Osprey app.",
        action: "Nothing was installed. Tell the app's publisher.",
      };
    case "already_installed":
      return {
        title: "This version is already installed.",
        action: "Nothing to do.",
      };
    case "not_installed":
      return {
        title: "That app is not installed.",
        action: "Refresh the page; it may have been removed meanwhile.",
      };
    case "no_pending_update":
      return {
        title: "No update is waiting for approval.",
        action: "It was approved or rejected meanwhile. Refresh the page.",
      };
    case "launch_failed":
      if (/sandbox/i.test(error.message)) {
        return {
          title: "Apps cannot run here: the sandbox is unavailable.",
          action:
            "Osprey runs store apps only inside its sandbox. Reinstall Osprey, or see the Apps page for details.",
        };
      }
      return {
        title: "The app was installed but did not start.",
        action: "See the Apps page for why, then try again.",
      };
    case "io":
    case "storage":
      return {
        title: "Osprey could not write to its data folder.",
        action: "Check that the disk has free space and that the folder is writable.",
      };
    case "core_unavailable":
      return {
        title: "Osprey's core did not start.",
        action: "Restart Osprey.",
      };
    case "ipc_unavailable":
    case "ipc_error":
      return {
        title: "The window lost contact with Osprey.",
        action: "Restart Osprey.",
      };
    default:
      return {
        title: "Something went wrong.",
        action: "Try again; if it keeps happening, the detail below says what failed.",
      };
  }
}
