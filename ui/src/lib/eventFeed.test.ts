import { afterEach, describe, expect, it, vi } from "vitest";
import type { CoreEvent, UiEvent, UiEventBatch } from "../gen";
import { EventFeed } from "./eventFeed";

/** A feed the test answers by hand: each call waits until the test answers it. */
function fakeShell() {
  const calls: { after: number | null; answer: (batch: UiEventBatch) => void; fail: (reason: unknown) => void }[] = [];
  const read = (after: number | null) =>
    new Promise<UiEventBatch>((answer, fail) => {
      calls.push({ after, answer, fail });
    });
  /** The next unanswered call, once the feed has made it. */
  async function next() {
    await vi.waitFor(() => {
      if (calls.length === 0) throw new Error("the feed made no call");
    });
    return calls.shift()!;
  }
  return { read, next, calls };
}

const turnStarted = (sessionId: string): UiEvent => ({
  kind: "core",
  event: { type: "chat_turn_started", session_id: sessionId },
});

describe("EventFeed", () => {
  const feeds: EventFeed[] = [];
  afterEach(() => {
    for (const feed of feeds.splice(0)) feed.close();
    vi.restoreAllMocks();
  });

  function feedOver(shell: ReturnType<typeof fakeShell>, navigate = vi.fn(), retryMs = 1) {
    const feed = new EventFeed(shell.read, navigate, retryMs);
    feeds.push(feed);
    return feed;
  }

  it("subscribes once the cursor is taken, then hands every event in order to every subscriber", async () => {
    const shell = fakeShell();
    const feed = feedOver(shell);
    const first: CoreEvent[] = [];
    const second: CoreEvent[] = [];
    const subscribed = feed.onCore((event) => first.push(event));
    const start = await shell.next();
    expect(start.after).toBeNull();
    let live = false;
    void subscribed.then(() => (live = true));
    await Promise.resolve();
    expect(live).toBe(false);
    start.answer({ events: [], next: 7 });
    await subscribed;
    await feed.onCore((event) => second.push(event));
    // One reader for both subscribers, from the cursor the start gave.
    const poll = await shell.next();
    expect(poll.after).toBe(7);
    expect(shell.calls).toHaveLength(0);
    poll.answer({ events: [turnStarted("a"), turnStarted("b")], next: 9 });
    expect((await shell.next()).after).toBe(9);
    expect(first.map((e) => (e as { session_id: string }).session_id)).toEqual(["a", "b"]);
    expect(second).toEqual(first);
  });

  it("stops calling a handler once it unsubscribes", async () => {
    const shell = fakeShell();
    const feed = feedOver(shell);
    const seen: CoreEvent[] = [];
    const pending = feed.onCore((event) => seen.push(event));
    (await shell.next()).answer({ events: [], next: 0 });
    const stop = await pending;
    const poll = await shell.next();
    stop();
    poll.answer({ events: [turnStarted("a")], next: 1 });
    await shell.next();
    expect(seen).toEqual([]);
  });

  it("routes window snapshots and page requests, and ignores kinds it does not know", async () => {
    const shell = fakeShell();
    const navigate = vi.fn();
    const feed = feedOver(shell, navigate);
    const asks: unknown[] = [];
    const core = vi.fn();
    const pending = Promise.all([feed.onAsk((ask) => asks.push(ask)), feed.onCore(core)]);
    (await shell.next()).answer({ events: [], next: 0 });
    await pending;
    const ask = { error: { code: "not_supported", message: "no display" } } as const;
    (await shell.next()).answer({
      events: [
        { kind: "navigate", route: "chat" },
        { kind: "ask_about_window", ask },
        { kind: "from_a_newer_shell" } as unknown as UiEvent,
      ],
      next: 3,
    });
    await shell.next();
    expect(navigate).toHaveBeenCalledWith("chat");
    expect(asks).toEqual([ask]);
    expect(core).not.toHaveBeenCalled();
  });

  it("keeps delivering when a handler throws", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const shell = fakeShell();
    const feed = feedOver(shell);
    const seen: CoreEvent[] = [];
    const pending = Promise.all([
      feed.onCore(() => {
        throw new Error("broken view");
      }),
      feed.onCore((event) => seen.push(event)),
    ]);
    (await shell.next()).answer({ events: [], next: 0 });
    await pending;
    (await shell.next()).answer({ events: [turnStarted("a")], next: 1 });
    (await shell.next()).answer({ events: [turnStarted("b")], next: 2 });
    await shell.next();
    expect(seen).toHaveLength(2);
  });

  it("rejects the subscription when the start fails, and the next subscriber starts again", async () => {
    const shell = fakeShell();
    const feed = feedOver(shell);
    const first = feed.onCore(() => {});
    (await shell.next()).fail({ code: "ipc_error", message: "not allowed" });
    await expect(first).rejects.toEqual({ code: "ipc_error", message: "not allowed" });
    const second = feed.onCore(() => {});
    const start = await shell.next();
    expect(start.after).toBeNull();
    start.answer({ events: [], next: 4 });
    await second;
    expect((await shell.next()).after).toBe(4);
  });

  it("retries a failed read from the same cursor, losing nothing", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const shell = fakeShell();
    const feed = feedOver(shell);
    const seen: CoreEvent[] = [];
    const pending = feed.onCore((event) => seen.push(event));
    (await shell.next()).answer({ events: [], next: 5 });
    await pending;
    (await shell.next()).fail("the app is stopping");
    const retry = await shell.next();
    expect(retry.after).toBe(5);
    expect(error).toHaveBeenCalled();
    retry.answer({ events: [turnStarted("a")], next: 6 });
    await shell.next();
    expect(seen).toHaveLength(1);
  });
});
