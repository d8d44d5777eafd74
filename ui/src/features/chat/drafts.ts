// What the person typed and did not send, per session: kept in memory while they switch chats
// and in localStorage so a reload keeps it too. A new chat (no session id yet) has its own slot.

/** The localStorage key holding every draft as one JSON object. */
export const DRAFTS_KEY = "osprey.chat.drafts";
/** The slot of the chat not sent yet (no session id). */
export const NEW_CHAT_SLOT = "(new)";
/** At most this many drafts are kept (the oldest written go first), each at most MAX_CHARS. */
export const MAX_DRAFTS = 50;
export const MAX_CHARS = 20_000;

/** The part of `Storage` drafts use; `null` keeps them in memory only. */
export type DraftStorage = Pick<Storage, "getItem" | "setItem" | "removeItem">;

function slot(sessionId: string | null): string {
  return sessionId ?? NEW_CHAT_SLOT;
}

export class Drafts {
  // Insertion order is write order, so the first key is the oldest draft.
  private drafts = new Map<string, string>();

  constructor(private storage: DraftStorage | null) {
    try {
      const saved: unknown = JSON.parse(storage?.getItem(DRAFTS_KEY) ?? "{}");
      if (saved && typeof saved === "object" && !Array.isArray(saved)) {
        for (const [key, text] of Object.entries(saved)) {
          if (typeof text === "string" && text) {
            this.drafts.set(key, text.slice(0, MAX_CHARS));
          }
        }
      }
    } catch {
      // An unreadable entry (edited by hand, another version) starts empty.
    }
  }

  /** The session's draft, or "" (a new chat when `sessionId` is null). */
  get(sessionId: string | null): string {
    return this.drafts.get(slot(sessionId)) ?? "";
  }

  /** Keeps `text` as the session's draft; blank text forgets it. */
  set(sessionId: string | null, text: string): void {
    const key = slot(sessionId);
    const had = this.drafts.get(key);
    this.drafts.delete(key);
    if (text.trim()) {
      this.drafts.set(key, text.slice(0, MAX_CHARS));
      while (this.drafts.size > MAX_DRAFTS) {
        const oldest = this.drafts.keys().next().value;
        if (oldest === undefined) {
          break;
        }
        this.drafts.delete(oldest);
      }
    } else if (had === undefined) {
      return;
    }
    this.save();
  }

  /** Forgets the session's draft (sent, or the session deleted). */
  clear(sessionId: string | null): void {
    this.set(sessionId, "");
  }

  private save(): void {
    if (!this.storage) {
      return;
    }
    try {
      if (this.drafts.size === 0) {
        this.storage.removeItem(DRAFTS_KEY);
      } else {
        this.storage.setItem(DRAFTS_KEY, JSON.stringify(Object.fromEntries(this.drafts)));
      }
    } catch {
      // A full or refused storage keeps the drafts in memory only.
    }
  }
}

/** The page's localStorage, when it has one that works (not in unit tests or a locked-down page). */
export function browserStorage(): DraftStorage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null;
  }
}
