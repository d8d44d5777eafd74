// The page's one reader of the desktop shell's event feed (src-tauri/src/ui_feed.rs): the core's
// events, the tray's window snapshots and the pages the tray asks to show, in the order they
// happened. It long-polls `next_ui_events`: each answer is everything that came since the last
// one, so a streamed reply arrives in a few answers instead of one script per token, and the app
// process never evaluates anything in the page (see the Rust module for why that matters).
//
// The first call takes a cursor at the end of the feed: a subscriber is live once `onCore` or
// `onAsk` resolves, as a Tauri listener was once `listen` resolved. Later failures (the app
// stopping, a refused call) are retried after `retryMs`; subscribers keep their place.

import type { CoreEvent, UiEvent, UiEventBatch, WindowAsk } from "../gen";

export type ReadFeed = (after: number | null) => Promise<UiEventBatch>;

export class EventFeed {
  #core = new Set<(event: CoreEvent) => void>();
  #asks = new Set<(ask: WindowAsk) => void>();
  #started: Promise<void> | null = null;
  #closed = false;

  constructor(
    private readonly read: ReadFeed,
    private readonly navigate: (route: string) => void,
    private readonly retryMs = 1000,
  ) {}

  /** Calls `handler` with every core event until the returned function is called. */
  onCore(handler: (event: CoreEvent) => void): Promise<() => void> {
    return this.#subscribe(this.#core, handler);
  }

  /** Calls `handler` with each window snapshot the tray takes, until the returned function is
   * called. */
  onAsk(handler: (ask: WindowAsk) => void): Promise<() => void> {
    return this.#subscribe(this.#asks, handler);
  }

  /** Stops reading after the call in flight (for tests: a page keeps its feed for its life). */
  close(): void {
    this.#closed = true;
  }

  async #subscribe<T>(handlers: Set<(value: T) => void>, handler: (value: T) => void): Promise<() => void> {
    handlers.add(handler);
    try {
      await this.#start();
    } catch (reason) {
      handlers.delete(handler);
      throw reason;
    }
    return () => {
      handlers.delete(handler);
    };
  }

  #start(): Promise<void> {
    this.#started ??= this.read(null).then(
      (first) => {
        void this.#run(first.next);
      },
      (reason: unknown) => {
        // The next subscriber tries again.
        this.#started = null;
        throw reason;
      },
    );
    return this.#started;
  }

  async #run(after: number): Promise<void> {
    while (!this.#closed) {
      let batch: UiEventBatch;
      try {
        batch = await this.read(after);
      } catch (reason) {
        console.error("Osprey: could not read the app's events; trying again", reason);
        await new Promise((resolve) => setTimeout(resolve, this.retryMs));
        continue;
      }
      if (this.#closed) return;
      for (const event of batch.events) this.#dispatch(event);
      after = batch.next;
    }
  }

  #dispatch(event: UiEvent): void {
    switch (event.kind) {
      case "core":
        for (const handler of [...this.#core]) deliver(handler, event.event);
        break;
      case "ask_about_window":
        for (const handler of [...this.#asks]) deliver(handler, event.ask);
        break;
      case "navigate":
        deliver(this.navigate, event.route);
        break;
      default:
      // A kind this page does not know (a newer shell): ignored, as the type says.
    }
  }
}

/** One handler's failure must not keep the event from the others or stop the feed. */
function deliver<T>(handler: (value: T) => void, value: T): void {
  try {
    handler(value);
  } catch (reason) {
    console.error("Osprey: an event handler failed", reason);
  }
}
