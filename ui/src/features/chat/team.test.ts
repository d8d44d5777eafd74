// The team panel's logic: grouping the task graph, durations and names, and the feed that keeps a
// conversation's team current from core events, loading through a mocked IPC (`session_team`).
import { beforeEach, describe, expect, it, vi } from "vitest";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const ipc = await import("../../ipc");
const team = await import("./team");
type TeamView = import("../../ipc").TeamView;
type TeamGraphTask = import("../../ipc").TeamGraphTask;
type TeamAgent = import("../../ipc").TeamAgent;

function agent(overrides: Partial<TeamAgent> = {}): TeamAgent {
  return {
    id: 1,
    session_id: "chat/task-1",
    parent_session_id: "chat",
    depth: 1,
    agent_type: "researcher",
    prompt: "Find the sources",
    status: "running",
    interactive: false,
    delivered: false,
    started_ms: 1_000,
    ...overrides,
  };
}

function task(overrides: Partial<TeamGraphTask> = {}): TeamGraphTask {
  return {
    id: 1,
    title: "Gather",
    status: "open",
    depends_on: [],
    blocked_by: [],
    created_by: "chat",
    updated_ms: 0,
    ...overrides,
  };
}

function view(overrides: Partial<TeamView> = {}): TeamView {
  return { session_id: "chat", agents: [], branches: [], graph: [], ...overrides };
}

/** A promise and the function that settles it, to hold a load open. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("the team panel's logic", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("groups the graph by where each task stands, in working order, and names dependencies", () => {
    const graph = [
      task({ id: 1, title: "Gather", status: "done" }),
      task({ id: 2, title: "Write", depends_on: [1, 3], blocked_by: [3] }),
      task({ id: 3, title: "Outline", status: "deferred", feedback: "too thin" }),
      task({ id: 4, title: "Check", status: "submitted", submitted_by: "chat/task-1" }),
      task({ id: 5, title: "Polish" }),
    ];
    const groups = team.groupGraph(graph);
    expect(groups.map((g) => [g.key, g.tasks.map((t) => t.id)])).toEqual([
      ["ready", [3, 5]],
      ["blocked", [2]],
      ["submitted", [4]],
      ["done", [1]],
    ]);
    expect(team.dependencyNames(graph[1], graph)).toEqual(["#1 Gather", "#3 Outline (not done)"]);
    expect(team.groupGraph([task({ status: "done" })]).map((g) => g.key)).toEqual(["done"]);
  });

  it("writes durations, names and the summary line", () => {
    expect(team.durationLabel(0, 4_900, 0)).toBe("4 s");
    expect(team.durationLabel(0, 125_000, 0)).toBe("2 min 5 s");
    expect(team.durationLabel(0, 120_000, 0)).toBe("2 min");
    expect(team.durationLabel(0, 3_780_000, 0)).toBe("1 h 3 min");
    // Still running: until now.
    expect(team.durationLabel(1_000, null, 31_000)).toBe("30 s");
    expect(team.durationLabel(5_000, undefined, 1_000)).toBe("0 s");
    expect(team.agentName(agent({ id: 7 }))).toBe("researcher #7");
    expect(team.agentName(agent({ id: 7, agent_type: undefined }))).toBe("sub-agent #7");
    expect(team.taskTitle("First line\nsecond")).toBe("First line");
    expect(team.taskTitle("x".repeat(100), 10)).toBe("xxxxxxxxx…");

    const full = view({
      agents: [agent(), agent({ id: 2, session_id: "chat/task-2", status: "done" })],
      branches: [agent({ id: 3, status: "done", delivered: true })],
      graph: [task(), task({ id: 2, status: "done" })],
    });
    expect(team.teamSummary(full)).toBe("1 of 2 sub-agents running · 1 branch · 2 tasks, 1 done");
    expect(team.whoLabel("chat/task-2", full)).toBe("researcher #2");
    expect(team.whoLabel("chat", full)).toBe("the conversation");
    expect(team.branchLabel(full.branches[0])).toBe("Result delivered");
    expect(team.branchLabel(agent({ status: "done", delivered: false }))).toMatch(/^Pending/);
    expect(team.isEmptyTeam(view())).toBe(true);
    expect(team.isEmptyTeam(null)).toBe(true);
    expect(team.isEmptyTeam(full)).toBe(false);
    expect(team.anyRunning(full)).toBe(true);
    expect(team.anyRunning(view({ agents: [agent({ status: "failed" })] }))).toBe(false);
  });

  it("loads the shown conversation's team and reloads on its team_changed events only", async () => {
    invoke.mockResolvedValueOnce(view({ agents: [agent({ progress: undefined })] }));
    const seen: (TeamView | null)[] = [];
    const feed = new team.TeamFeed(ipc.sessionTeam, (f) => seen.push(f.team));
    await feed.show("chat");
    expect(invoke).toHaveBeenCalledWith("session_team", { sessionId: "chat" });
    expect(feed.team?.agents[0].progress).toBeUndefined();

    // Another conversation's change does not reload.
    await feed.handle({ type: "team_changed", session_id: "other" });
    expect(invoke).toHaveBeenCalledTimes(1);

    invoke.mockResolvedValueOnce(view({ agents: [agent({ progress: "Read 3 of 5 pages" })] }));
    await feed.handle({ type: "team_changed", session_id: "chat" });
    expect(invoke).toHaveBeenCalledTimes(2);
    expect(feed.team?.agents[0].progress).toBe("Read 3 of 5 pages");

    // The end of a turn reloads too (a sub-agent may have ended with it).
    invoke.mockResolvedValueOnce(view({ agents: [agent({ status: "done", finished_ms: 9_000 })] }));
    await feed.handle({ type: "chat_turn_finished", session_id: "chat", stop: "end_turn", text: "" });
    expect(feed.team?.agents[0].status).toBe("done");
    expect(seen.length).toBeGreaterThanOrEqual(4);
  });

  it("coalesces changes that arrive during a load and drops an answer for a conversation left", async () => {
    const first = deferred<TeamView>();
    invoke.mockReturnValueOnce(first.promise);
    const feed = new team.TeamFeed(ipc.sessionTeam);
    const showing = feed.show("chat");
    // Three changes while the first load is under way: one more load after it, not three.
    void feed.handle({ type: "team_changed", session_id: "chat" });
    void feed.handle({ type: "team_changed", session_id: "chat" });
    void feed.handle({ type: "team_changed", session_id: "chat" });
    invoke.mockResolvedValueOnce(view({ graph: [task({ title: "Latest" })] }));
    first.resolve(view({ graph: [task({ title: "Stale" })] }));
    await showing;
    expect(invoke).toHaveBeenCalledTimes(2);
    expect(feed.team?.graph[0].title).toBe("Latest");

    // Switching conversations while a load runs: the old answer is dropped.
    const slow = deferred<TeamView>();
    invoke.mockReturnValueOnce(slow.promise);
    const reloading = feed.reload();
    invoke.mockResolvedValueOnce(view({ session_id: "next" }));
    const switching = feed.show("next");
    slow.resolve(view({ graph: [task({ title: "From chat" })] }));
    await Promise.all([reloading, switching]);
    expect(invoke.mock.calls.at(-1)).toEqual(["session_team", { sessionId: "next" }]);
    expect(feed.team?.session_id).toBe("next");
    expect(feed.team?.graph).toEqual([]);
  });

  it("keeps a load's refusal as the feed's error and cancels through cancel_subagent", async () => {
    invoke.mockRejectedValueOnce({ code: "storage", message: "the database is locked" });
    const feed = new team.TeamFeed(ipc.sessionTeam);
    await feed.show("chat");
    expect(feed.error).toBe("the database is locked");
    expect(feed.team).toBeNull();

    invoke.mockResolvedValueOnce(agent({ status: "cancelled" }));
    const cancelled = await ipc.cancelSubagent("chat", 1);
    expect(invoke).toHaveBeenLastCalledWith("cancel_subagent", { sessionId: "chat", taskId: 1 });
    expect(cancelled.status).toBe("cancelled");
  });
});
