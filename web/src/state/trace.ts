/** The trace of a thread (GET /api/threads/{id}/trace) and the pure helpers its view uses. */

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

export interface FileChange {
  path: string;
  action: string;
}

export interface BashRun {
  command: string;
  exit_code: number;
  stdout: string | null;
  stderr: string | null;
  /** stdout and stderr together, when the sandbox could not tell them apart. */
  output: string | null;
  timed_out: boolean;
}

export interface TraceStep {
  index: number;
  kind: "input" | "model" | "tool";
  run_id: string | null;
  message_id: string | null;
  text: string;
  model: string | null;
  usage: TokenUsage | null;
  tool_calls: { id: string | null; name: string; args: Record<string, unknown> }[];
  tool: string | null;
  tool_call_id: string | null;
  args: Record<string, unknown>;
  status: "success" | "error" | null;
  bash: BashRun | null;
  files_changed: FileChange[];
  files_changed_incomplete: boolean;
  /** For task and run_plan: each sub-agent it started and the steps it took (when kept). */
  subagents?: SubagentTrace[];
}

export interface SubagentTrace {
  task_id: string;
  subagent_type: string | null;
  description: string | null;
  status: string | null;
  steps: TraceStep[];
}

export interface TraceRun {
  run_id: string | null;
  first_step: number;
  step_count: number;
  model_calls: number;
  tool_calls: number;
  usage: TokenUsage;
}

export interface Trace {
  thread_id: string;
  run_id: string | null;
  steps: TraceStep[];
  runs: TraceRun[];
  usage: TokenUsage;
}

/** Characters of one output the view shows before cutting it. */
export const VIEW_CHARS = 4000;

/** `text` cut to `limit` characters, and how many were left out (0: none). */
export function clip(text: string, limit = VIEW_CHARS): { text: string; cut: number } {
  return text.length <= limit ? { text, cut: 0 } : { text: text.slice(0, limit), cut: text.length - limit };
}

/** A token count for people: 950, 12.3k, 1.2M. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** One line about a step for its header: what ran, or what was said. */
export function stepTitle(step: TraceStep): string {
  if (step.kind === "input") return `User: ${firstLine(step.text)}`;
  if (step.kind === "model") {
    const calls = step.tool_calls.map((c) => c.name);
    const who = step.model ?? "model";
    return calls.length ? `${who} → ${calls.join(", ")}` : `${who}: ${firstLine(step.text) || "(no text)"}`;
  }
  if (step.bash) return `bash: ${firstLine(step.bash.command)}`;
  const tool = `${step.tool ?? "tool"}${step.status === "error" ? " (error)" : ""}`;
  const delegated = (step.subagents ?? []).map((s) => s.description ?? s.task_id);
  return delegated.length ? `${tool}: ${firstLine(delegated.join(", "))}` : tool;
}

function firstLine(text: string, limit = 80): string {
  const line = text.split("\n", 1)[0].trim();
  return line.length > limit ? `${line.slice(0, limit)}…` : line;
}

/** Whether a step went wrong: a tool error, a non-zero exit code or a timeout. */
export function failed(step: TraceStep): boolean {
  return step.status === "error" || (step.bash != null && (step.bash.exit_code !== 0 || step.bash.timed_out));
}

/** The position `delta` steps away from `current` in a list of `count` steps, kept in range. */
export function move(current: number, delta: number, count: number): number {
  if (count <= 0) return 0;
  return Math.min(count - 1, Math.max(0, current + delta));
}

/** The run a step belongs to, as "Run 2 of 3" (runs in trace order). */
export function runLabel(trace: Trace, run: TraceRun): string {
  return `Run ${trace.runs.indexOf(run) + 1} of ${trace.runs.length}`;
}

/** JSON of tool arguments, pretty and short enough for the view. */
export function argsText(args: Record<string, unknown>): string {
  return JSON.stringify(args, null, 2);
}
