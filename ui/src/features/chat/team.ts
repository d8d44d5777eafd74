// The team panel's logic (TeamPanel.svelte shows it): who the sub-agents are, how long they ran,
// the task graph grouped by where each task stands, and a feed that keeps one conversation's team
// current from the core's `team_changed` events. Pure apart from the loader the feed is given, so
// it is tested without a Tauri runtime (team.test.ts).

import type { CoreEvent, TeamAgent, TeamGraphTask, TeamView } from "../../ipc";

/** True when the conversation has no sub-agents, branches or graph tasks (the panel hides). */
export function isEmptyTeam(team: TeamView | null): boolean {
  return !team || (team.agents.length === 0 && team.branches.length === 0 && team.graph.length === 0);
}

/** `researcher #3`, or `sub-agent #3` for an untyped child. */
export function agentName(agent: TeamAgent): string {
  return `${agent.agent_type ?? "sub-agent"} #${agent.id}`;
}

/** How long it ran (until now while it runs): `4 s`, `2 min 5 s`, `1 h 3 min`. */
export function durationLabel(startedMs: number, finishedMs: number | null | undefined, nowMs: number): string {
  const end = finishedMs ?? nowMs;
  const seconds = Math.max(0, Math.floor((end - startedMs) / 1000));
  if (seconds < 60) {
    return `${seconds} s`;
  }
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) {
    const rest = seconds % 60;
    return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
  }
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest ? `${hours} h ${rest} min` : `${hours} h`;
}

/** The time of day it started, as the person's locale writes it. */
export function startedLabel(startedMs: number): string {
  return new Date(startedMs).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

/** A sub-agent's status in words. */
export function statusLabel(status: string): string {
  switch (status) {
    case "running":
      return "Running";
    case "done":
      return "Done";
    case "failed":
      return "Failed";
    case "cancelled":
      return "Cancelled";
    case "timed_out":
      return "Timed out";
    case "interrupted":
      return "Interrupted";
    default:
      return status;
  }
}

/** A branch's state: running, or ended and waiting to join the conversation, or delivered. */
export function branchLabel(branch: TeamAgent): string {
  if (branch.status === "running") {
    return "Thinking";
  }
  return branch.delivered ? "Result delivered" : "Pending: joins at the next turn";
}

/** The first line of what it was asked, cut to `max` characters. */
export function taskTitle(prompt: string, max = 90): string {
  const line = prompt.trim().split("\n")[0] ?? "";
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

/** Who a session is in this team: a sub-agent's name, or the conversation itself. */
export function whoLabel(sessionId: string | null | undefined, team: TeamView): string {
  if (!sessionId || sessionId === team.session_id) {
    return "the conversation";
  }
  const agent = [...team.agents, ...team.branches].find((a) => a.session_id === sessionId);
  return agent ? agentName(agent) : sessionId;
}

export type GraphGroupKey = "ready" | "blocked" | "submitted" | "done";

export interface GraphGroup {
  key: GraphGroupKey;
  label: string;
  tasks: TeamGraphTask[];
}

const GROUPS: { key: GraphGroupKey; label: string }[] = [
  { key: "ready", label: "Ready" },
  { key: "blocked", label: "Waiting on dependencies" },
  { key: "submitted", label: "Submitted for review" },
  { key: "done", label: "Done" },
];

/** Where a task stands: `open` and `deferred` tasks are ready or blocked by their dependencies. */
export function graphGroupOf(task: TeamGraphTask): GraphGroupKey {
  if (task.status === "done") {
    return "done";
  }
  if (task.status === "submitted") {
    return "submitted";
  }
  return task.blocked_by.length > 0 ? "blocked" : "ready";
}

/** The graph's tasks grouped by where they stand, in working order; empty groups left out. */
export function groupGraph(tasks: TeamGraphTask[]): GraphGroup[] {
  return GROUPS.map(({ key, label }) => ({
    key,
    label,
    tasks: tasks.filter((t) => graphGroupOf(t) === key),
  })).filter((group) => group.tasks.length > 0);
}

/** A task's dependencies by title (`#2 Gather sources`), the ones not done marked as waiting. */
export function dependencyNames(task: TeamGraphTask, all: TeamGraphTask[]): string[] {
  return task.depends_on.map((id) => {
    const dependency = all.find((t) => t.id === id);
    const name = dependency ? `#${id} ${dependency.title}` : `#${id}`;
    return task.blocked_by.includes(id) ? `${name} (not done)` : name;
  });
}

/** The collapsed panel's one line: `1 of 2 sub-agents running · 3 tasks, 1 done`. */
export function teamSummary(team: TeamView): string {
  const parts: string[] = [];
  if (team.agents.length > 0) {
    const running = team.agents.filter((a) => a.status === "running").length;
    const noun = team.agents.length === 1 ? "sub-agent" : "sub-agents";
    parts.push(running > 0 ? `${running} of ${team.agents.length} ${noun} running` : `${team.agents.length} ${noun}`);
  }
  if (team.branches.length > 0) {
    parts.push(`${team.branches.length} ${team.branches.length === 1 ? "branch" : "branches"}`);
  }
  if (team.graph.length > 0) {
    const done = team.graph.filter((t) => t.status === "done").length;
    parts.push(`${team.graph.length} ${team.graph.length === 1 ? "task" : "tasks"}, ${done} done`);
  }
  return parts.join(" · ");
}

/** True while any sub-agent or branch runs (the panel ticks durations only then). */
export function anyRunning(team: TeamView | null): boolean {
  return !!team && [...team.agents, ...team.branches].some((a) => a.status === "running");
}

/**
 * One conversation's team, kept current: `show` a session to load its team, then hand every core
 * event to `handle`; a `team_changed` (or the end of a turn) for the session shown reloads it.
 * Reloads do not pile up: while one is under way, further changes ask for one more after it. An
 * answer for a session no longer shown is dropped.
 */
export class TeamFeed {
  team: TeamView | null = null;
  error: string | null = null;
  private sessionId: string | null = null;
  private loading = false;
  private again = false;

  constructor(
    private readonly load: (sessionId: string) => Promise<TeamView>,
    private readonly changed: (feed: TeamFeed) => void = () => {},
  ) {}

  /** Shows `sessionId`'s team (none for a new chat). */
  async show(sessionId: string | null): Promise<void> {
    if (sessionId === this.sessionId) {
      return;
    }
    this.sessionId = sessionId;
    this.team = null;
    this.error = null;
    this.changed(this);
    await this.reload();
  }

  /** Reloads when `event` concerns the conversation shown. */
  async handle(event: CoreEvent): Promise<void> {
    const concerns =
      (event.type === "team_changed" || event.type === "chat_turn_finished" || event.type === "chat_turn_failed") &&
      event.session_id === this.sessionId;
    if (concerns) {
      await this.reload();
    }
  }

  /** Loads the shown session's team again (one load at a time; the last change always lands). */
  async reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    try {
      do {
        this.again = false;
        const sessionId = this.sessionId;
        if (sessionId === null) {
          return;
        }
        try {
          const team = await this.load(sessionId);
          if (sessionId === this.sessionId) {
            this.team = team;
            this.error = null;
            this.changed(this);
          }
        } catch (reason) {
          if (sessionId === this.sessionId) {
            this.error = (reason as { message?: string })?.message ?? String(reason);
            this.changed(this);
          }
        }
      } while (this.again);
    } finally {
      this.loading = false;
    }
  }
}
