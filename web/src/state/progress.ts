/** What a running agent is doing now, in detail, for the line under the header: the step, the
 * command running (and since when), the call being written, the sub-agents and their last tool;
 * and the outcome of a run that ended (delivered, or not and why). Pure functions over the thread's
 * messages, the sub-agent cards and the completion check's unresolved findings. */
import type { Message } from "@langchain/langgraph-sdk";
import { openFindings } from "./checks";
import { say, type Lang } from "./words";
import { callHeadline, messageText, toolResults, writingCalls } from "./messages";
import type { TaskCard } from "./tasks";

export interface Doing {
  /** The model steps of this turn so far (one per AI message). */
  step: number;
  kind: "thinking" | "writing" | "running" | "subagents";
  /** What is written, run or waited for, in one line; "" while the model thinks. */
  what: string;
  /** The id of the call running (its elapsed time is counted from when it was first seen). */
  callId?: string;
}

/** What the latest turn is doing now (the sub-agents' words in `lang`). */
export function doingNow(messages: Message[], tasks: Record<string, TaskCard>, lang: Lang = "en"): Doing {
  const results = toolResults(messages);
  let start = messages.length;
  while (start > 0 && messages[start - 1].type !== "human") start--;
  const turn = messages.slice(start);
  const step = turn.filter((m) => m.type === "ai").length;
  const last = turn.at(-1);
  if (last && last.type === "ai" && "tool_calls" in last && (last.tool_calls ?? []).length) {
    const calls = last.tool_calls ?? [];
    if (writingCalls(last)) {
      const call = calls.at(-1)!;
      return { step, kind: "writing", what: `${call.name} ${callHeadline(call.args)}`.trim() };
    }
    const open = calls.filter((c) => !c.id || !results.has(c.id));
    if (open.some((c) => c.name === "task" || c.name === "run_plan")) {
      const running = Object.values(tasks).filter((t) => t.status === "running" || t.status === "queued" || t.status === "retrying");
      const said = running.map((t) => `${t.subagentType}${t.steps.length ? ` (${say("run.last_tool", lang, { tool: t.steps.at(-1)! })})` : t.activity ? ` (${t.activity})` : ""}`);
      return { step, kind: "subagents", what: said.join(", ") || say("run.subagents_starting", lang) };
    }
    if (open.length) {
      const call = open[0];
      return { step, kind: "running", what: `${call.name} ${callHeadline(call.args)}`.trim(), callId: call.id ?? undefined };
    }
  }
  return { step: Math.max(step, 1), kind: "thinking", what: "" };
}

export interface Outcome {
  status: "done" | "not delivered" | "failed" | "stopped" | "limit";
  text: string;
}

/** How the harness's own last reply says the run ended, read from its marks (older threads: the
 * start of its words, as herdsman.runtime.run_outcome reads them): the model could not be called
 * (`herdsman_failed`), its replies could not be used, or a limit stopped it (`herdsman_stopped_by`). */
export function harnessEnding(messages: Message[]): { kind: "model_failed" | "unusable" | "limit"; reason?: string } | null {
  const last = messages.at(-1) as (Message & { response_metadata?: Record<string, unknown> }) | undefined;
  if (!last || last.type !== "ai" || (last.tool_calls ?? []).length) return null;
  const meta = last.response_metadata ?? {};
  if (typeof meta.herdsman_stopped_by === "string") return { kind: "limit", reason: meta.herdsman_stopped_by };
  const text = messageText(last);
  if (typeof meta.herdsman_failed === "string" || text.startsWith("Error: the model call failed") || text.startsWith("错误：模型调用失败")) {
    return { kind: "model_failed" };
  }
  if (text.startsWith("The model's reply could not be used")) return { kind: "unusable" };
  return null;
}

/** How the latest run ended, in `lang`: an error, a stop, the harness's own last reply (the model
 * failed, a limit), the completion check's findings left (the deliverable is missing or wrong), or done. */
export function runOutcome(
  opts: { error?: string; stopped?: boolean; unresolved?: unknown; messages?: Message[] },
  lang: Lang = "en",
): Outcome {
  if (opts.error) return { status: "failed", text: say("outcome.failed", lang, { error: opts.error }) };
  if (opts.stopped) return { status: "stopped", text: say("outcome.stopped", lang) };
  const ending = harnessEnding(opts.messages ?? []);
  if (ending?.kind === "limit") return { status: "limit", text: say("outcome.limit", lang, { reason: ending.reason ?? "" }) };
  if (ending) return { status: "failed", text: say(ending.kind === "unusable" ? "outcome.unusable" : "outcome.model_failed", lang) };
  const left = openFindings(opts.unresolved);
  if (left.length) {
    const said = left[0].text || left[0].rule || "";
    return {
      status: "not delivered",
      text: say("outcome.not_delivered", lang, { n: left.length, said: said ? ` (${said.slice(0, 160)})` : "" }),
    };
  }
  return { status: "done", text: say("outcome.done", lang) };
}

/** Whether the thread's last message is an answer a stop cut short (kept with the finish reason
 * `stopped`, see herdsman.runtime.partial_answer): the run was stopped, in this page or before. */
export function stoppedAnswer(messages: Message[]): boolean {
  const last = messages.at(-1) as (Message & { response_metadata?: { finish_reason?: unknown } }) | undefined;
  return last?.type === "ai" && last.response_metadata?.finish_reason === "stopped";
}
