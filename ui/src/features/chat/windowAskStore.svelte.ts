// The window's one holder of the tray's "Ask about the current window" answer. The tray brings
// the chat forward and sends the snapshot at the same moment, so the snapshot can arrive while
// another page is open (the chat view is not mounted yet) or before the route has changed: it
// waits here until the chat view takes it, instead of being lost or cleared.
import { onAskAboutWindow, type WindowAsk } from "../../ipc";

export const windowAsks = $state<{ pending: WindowAsk | null }>({ pending: null });

/** Listens for the tray's snapshots (App does it once); returns the function that stops. */
export function followWindowAsks(): () => void {
  let closed = false;
  let unlisten: (() => void) | null = null;
  onAskAboutWindow((ask) => (windowAsks.pending = ask))
    .then((stop) => (closed ? stop() : (unlisten = stop)))
    .catch(() => {});
  return () => {
    closed = true;
    unlisten?.();
  };
}

/** The snapshot (or why there is none) waiting for the chat, removed as it is taken. */
export function takeWindowAsk(): WindowAsk | null {
  const ask = windowAsks.pending;
  windowAsks.pending = null;
  return ask;
}
