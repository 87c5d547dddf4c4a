/** Drafts of a tool call being written: a model that sends its calls whole at the end (the
 * embedded model) sends the call's text so far on the run's custom stream meanwhile (a
 * `tool_call_draft` event, see herdsman.models.call_drafts). A draft is shown until the real call
 * arrives: it belongs to the messages as they were when it came, and is stale once they changed. */
import type { Message } from "@langchain/langgraph-sdk";

export interface DraftEvent {
  type: "tool_call_draft";
  /** The call's place in its reply (0 for the first). */
  index: number;
  /** The tool's name once written, else null. */
  name: string | null;
  /** The call's text so far (its end, when long). */
  text: string;
  /** The full length of the call's text so far. */
  chars: number;
}

export interface Draft extends DraftEvent {
  /** {@link draftKey} of the messages when the draft came. */
  key: string;
}

export function isDraftEvent(data: unknown): data is DraftEvent {
  const d = data as DraftEvent | null;
  return !!d && typeof d === "object" && d.type === "tool_call_draft" && typeof d.text === "string";
}

/** What changes when a call arrives: the number of messages and of tool calls in them. */
export function draftKey(messages: Message[]): string {
  let calls = 0;
  for (const m of messages) if (m.type === "ai" && "tool_calls" in m) calls += (m.tool_calls ?? []).length;
  return `${messages.length}:${calls}`;
}

/** The draft to show now: none once the run ended or the messages changed since it came. */
export function currentDraft(draft: Draft | null, messages: Message[], running: boolean): Draft | null {
  return draft && running && draft.key === draftKey(messages) ? draft : null;
}

function unescape(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, c: string) =>
    c.length === 5 ? String.fromCharCode(parseInt(c.slice(1), 16)) : c === "n" ? "\n" : c === "t" ? "\t" : c,
  );
}

/** One line for a draft: the first string argument being written (its end, when long), or the
 * arguments' text so far. */
export function draftHeadline(text: string, max = 120): string {
  const args = text.search(/"arguments"\s*:\s*\{/);
  const rest = args >= 0 ? text.slice(text.indexOf("{", args) + 1) : "";
  const value = /^\s*"[^"]*"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(rest);
  const line = (value ? unescape(value[1]) : rest).replace(/\s+/g, " ").trim();
  return line.length > max ? `…${line.slice(line.length - max)}` : line;
}
