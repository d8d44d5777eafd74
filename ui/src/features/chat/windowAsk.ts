// "Ask about the current window" (tray): the snapshot the tray took is attached to a new chat;
// the message sent carries the annotated image (sent beside the text, see `sendMessage`) and the
// person's question with the window's name, the snapshot id and its element list, so the model
// sees the window and can act on the IDs with the `desktop` tool or look again with
// `screenshot see`.
import type { WindowSnapshot } from "../../gen";

/** A short name for the window: its title, else its application, else "the screen". */
export function windowName(snapshot: WindowSnapshot): string {
  const title = snapshot.title?.trim();
  if (title) return `“${title}”`;
  const app = snapshot.app?.trim();
  return app ? `a window of ${app}` : "the screen";
}

/** The draft a new chat starts with. */
export function defaultQuestion(snapshot: WindowSnapshot): string {
  return `What can you tell me about ${windowName(snapshot)}?`;
}

/** The message sent for `question` with the snapshot attached. */
export function messageWithSnapshot(question: string, snapshot: WindowSnapshot): string {
  const text = question.trim() || defaultQuestion(snapshot);
  return [
    text,
    "",
    `[Attached: a snapshot of ${windowName(snapshot)} (snapshot ${snapshot.snapshot_id}, ${snapshot.width}×${snapshot.height}). ` +
      "Its element IDs work with the desktop tool while the snapshot lives.]",
    snapshot.elements.trim(),
  ]
    .join("\n")
    .trim();
}
