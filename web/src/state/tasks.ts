/** Sub-agent cards: a pure reducer folding the gateway's `task_*` custom events into one card per task. */

export interface TaskEvent {
  type: string;
  task_id: string;
  subagent_type?: string;
  description?: string;
  status?: string;
  error?: string | null;
  step?: number;
  tool_calls?: string[];
  usage?: { total_tokens?: number; input_tokens?: number; output_tokens?: number };
  duration_s?: number;
  model?: string;
  attempt?: number;
  tokens?: number;
  /** task_generating: the tool a call is being written to (a model that sends its calls whole at the end). */
  writing?: string;
  /** What the sub-agent's completion check still found missing in its last answer. */
  unresolved?: string[];
}

export type TaskStatus = "queued" | "running" | "completed" | "failed" | "timed_out" | "cancelled" | "retrying";

export interface TaskCard {
  id: string;
  subagentType: string;
  description: string;
  status: TaskStatus;
  startedAt: number;
  endedAt?: number;
  durationS?: number;
  tokens: number;
  /** Tokens the model call in progress has streamed so far (an estimate; 0 between calls). */
  liveTokens: number;
  /** What it is doing now: "writing", "calling bash", "answered", "" before its first call. */
  activity: string;
  steps: string[];
  error?: string;
  model?: string;
}

export type Tasks = Record<string, TaskCard>;

const FINAL: Record<string, TaskStatus> = {
  task_completed: "completed",
  task_failed: "failed",
  task_timed_out: "timed_out",
  task_cancelled: "cancelled",
};

/** Whether a custom stream event is one of the sub-agent events. */
export function isTaskEvent(data: unknown): data is TaskEvent {
  const d = data as TaskEvent | null;
  return !!d && typeof d === "object" && typeof d.type === "string" && d.type.startsWith("task_") && typeof d.task_id === "string";
}

/** The cards after one event (`now` is the page's clock, for elapsed time). */
export function applyTaskEvent(tasks: Tasks, event: TaskEvent, now: number): Tasks {
  const prev: TaskCard = tasks[event.task_id] ?? {
    id: event.task_id,
    subagentType: event.subagent_type ?? "sub-agent",
    description: event.description ?? "",
    status: "queued",
    startedAt: now,
    tokens: 0,
    liveTokens: 0,
    activity: "",
    steps: [],
  };
  const card: TaskCard = { ...prev };
  if (event.usage?.total_tokens != null) card.tokens = event.usage.total_tokens;
  switch (event.type) {
    case "task_queued":
      card.status = "queued";
      break;
    case "task_started":
      card.status = "running";
      card.model = event.model ?? card.model;
      if (prev.status === "queued") card.startedAt = now;
      break;
    case "task_generating":
      card.status = "running";
      card.liveTokens = event.tokens ?? prev.liveTokens;
      card.activity = event.writing ? `writing a call to ${event.writing}` : "writing";
      break;
    case "task_progress":
      card.status = "running";
      card.liveTokens = 0;
      card.activity = event.tool_calls?.length ? `calling ${event.tool_calls.join(", ")}` : "answered";
      // A step is numbered; the same step reported twice replaces itself.
      card.steps = [...prev.steps];
      card.steps[event.step != null && event.step > 0 ? event.step - 1 : prev.steps.length] =
        event.tool_calls?.length ? event.tool_calls.join(", ") : "answer";
      card.steps = Array.from(card.steps, (s) => s ?? "…");
      break;
    default:
      if (event.type === "task_failed" && (event as { will_retry?: boolean }).will_retry) {
        card.status = "retrying";
        card.error = event.error ?? undefined;
        break;
      }
      if (FINAL[event.type]) {
        card.status = FINAL[event.type];
        card.liveTokens = 0;
        card.activity = "";
        card.endedAt = now;
        card.durationS = event.duration_s ?? (now - prev.startedAt) / 1000;
        card.error = event.error ?? (event.unresolved?.length ? `still missing: ${event.unresolved.join("; ")}` : undefined);
      }
  }
  return { ...tasks, [event.task_id]: card };
}

/** Cards for finished tasks from the thread state's `usage` (keys `task:<id>`), for threads opened later. */
export function tasksFromUsage(usage: Record<string, Record<string, unknown>> | undefined): Tasks {
  const out: Tasks = {};
  for (const [key, u] of Object.entries(usage ?? {})) {
    if (!key.startsWith("task:")) continue;
    const id = key.slice(5);
    out[id] = {
      id,
      subagentType: String(u.subagent_type ?? "sub-agent"),
      description: String(u.description ?? ""),
      status: (String(u.status ?? "completed") as TaskStatus),
      startedAt: 0,
      tokens: Number(u.total_tokens ?? 0),
      liveTokens: 0,
      activity: "",
      steps: [],
    };
  }
  return out;
}

/** "3.2 s" / "1 m 05 s". */
export function formatElapsed(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const m = Math.floor(seconds / 60);
  return `${m} m ${String(Math.floor(seconds % 60)).padStart(2, "0")} s`;
}

/** The sub-agent cards placed with the turn that started them: by the index of the agent message
 * whose task or run_plan call started each (its id is the call's id, or the call's id and a
 * plan task's id), and the rest (not matched yet), shown after the conversation. */
export function placeCards(
  messages: { type: string; tool_calls?: { name: string; id?: string }[] }[],
  tasks: Tasks,
): { byMessage: Map<number, TaskCard[]>; rest: TaskCard[] } {
  const byMessage = new Map<number, TaskCard[]>();
  const placed = new Set<string>();
  messages.forEach((m, i) => {
    if (m.type !== "ai") return;
    for (const call of m.tool_calls ?? []) {
      if (!call.id || (call.name !== "task" && call.name !== "run_plan")) continue;
      const mine = Object.values(tasks).filter((c) => !placed.has(c.id) && (c.id === call.id || c.id.startsWith(`${call.id}-`)));
      if (mine.length === 0) continue;
      mine.forEach((c) => placed.add(c.id));
      byMessage.set(i, [...(byMessage.get(i) ?? []), ...mine]);
    }
  });
  return { byMessage, rest: Object.values(tasks).filter((c) => !placed.has(c.id)) };
}
