/** Helpers over LangGraph messages: their text, tool results by call id, and files the agent wrote. */
import { say, type Lang } from "./words";
import type { Message } from "@langchain/langgraph-sdk";

export const OUTPUT_TOOLS = new Set(["write_file", "edit_file", "str_replace", "create_file"]);

/** The readable text of a message's content (a string or a list of parts). */
export function messageText(message: Pick<Message, "content">): string {
  const content = message.content as unknown;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : part && typeof part === "object" && "text" in part ? String(part.text) : ""))
      .join("");
  }
  return content == null ? "" : JSON.stringify(content);
}

/** Tool messages keyed by the id of the call they answer. */
export function toolResults(messages: Message[]): Map<string, Message> {
  const out = new Map<string, Message>();
  for (const m of messages) {
    if (m.type === "tool" && "tool_call_id" in m && m.tool_call_id) out.set(m.tool_call_id, m);
  }
  return out;
}

/** A note the harness added to the conversation (the completion check's "[harness check] Not done
 * yet: ..."): a human message by its name, shown as the harness's, not as the user's. */
export function isHarnessNote(message: Message): boolean {
  return message.type === "human" && (message as { name?: string }).name === "harness";
}

const TEXT_CALL = /<tool_call>|"name"\s*:\s*"[\w.-]+"\s*,\s*"(?:arguments|parameters)"\s*:/;

/** Whether an answer holds a tool call the model wrote as text: it was not run (the completion
 * check sends the model back), and the card says so instead of showing it as prose. */
export function hasTextToolCall(text: string): boolean {
  return TEXT_CALL.test(text);
}

/** Whether an AI message is marked as a copy of a note of the harness
 * (`additional_kwargs.herdsman_echoes_note`, see herdsman/middleware/note_echo.py): a failed step,
 * never the agent's answer. */
export function echoesNote(message: Message): boolean {
  return message.type === "ai" && (message as { additional_kwargs?: { herdsman_echoes_note?: unknown } }).additional_kwargs?.herdsman_echoes_note === true;
}

const CALL_NAME = /"name"\s*:\s*"([\w.-]+)"/g;

/** The tools an AI message wrote as text instead of calling them, or null when it wrote none: the
 * names the harness marked (`additional_kwargs.herdsman_call_as_text`, see
 * herdsman/middleware/text_calls.py), else those read from a text that holds such a call (a
 * thread from before the mark). Such a message is a failed step, never the agent's answer. */
export function textCallNames(message: Message): string[] | null {
  if (message.type !== "ai") return null;
  const marked = (message as { additional_kwargs?: { herdsman_call_as_text?: unknown } }).additional_kwargs?.herdsman_call_as_text;
  if (Array.isArray(marked)) return marked.map(String);
  const text = messageText(message);
  if (!hasTextToolCall(text)) return null;
  const names = [...new Set([...text.matchAll(CALL_NAME)].map((m) => m[1]))];
  return names.length ? names : ["?"];
}

/** A tool card's status and label: running, done, or failed (an error result, a command's
 * non-zero exit code or its timeout, from the bash artifact: exit 127 used to show "done"). */
export function toolStatus(result?: Message): { status: "running" | "done" | "error"; label: string } {
  if (!result) return { status: "running", label: "running" };
  const artifact = (result as { artifact?: { exit_code?: unknown; timed_out?: unknown } }).artifact;
  if (artifact?.timed_out === true) return { status: "error", label: "timed out" };
  if (typeof artifact?.exit_code === "number" && artifact.exit_code !== 0) {
    return { status: "error", label: `failed · exit ${artifact.exit_code}` };
  }
  if ((result as { status?: string }).status === "error") return { status: "error", label: "failed" };
  return { status: "done", label: "done" };
}

/** Virtual paths of files the agent (or its sub-agents) wrote, from tool calls and task results. */
export function writtenFiles(messages: Message[]): string[] {
  const files = new Set<string>();
  for (const m of messages) {
    if (m.type === "ai" && "tool_calls" in m) {
      for (const call of m.tool_calls ?? []) {
        const path = (call.args as Record<string, unknown>)?.path;
        if (OUTPUT_TOOLS.has(call.name) && typeof path === "string") files.add(path);
      }
    }
    if (m.type === "tool") {
      const artifact = (m as { artifact?: { results?: { files_written?: string[] }[] } }).artifact;
      for (const r of artifact?.results ?? []) for (const f of r.files_written ?? []) files.add(f);
    }
  }
  return [...files].sort();
}

/** What a running agent is doing now, from the thread's messages: thinking (a model call,
 * streaming or not), calling a tool (a call with no result yet), or waiting for sub-agents
 * (a task or run_plan call with no result yet). */
export function activity(messages: Message[], lang: Lang = "en"): string {
  const results = toolResults(messages);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.type === "human") break;
    if (m.type !== "ai" || !("tool_calls" in m)) continue;
    const open = (m.tool_calls ?? []).filter((c) => !c.id || !results.has(c.id));
    if (open.length === 0) break;
    if (open.some((c) => c.name === "task" || c.name === "run_plan")) return say("badge.subagents", lang);
    return say("badge.calling", lang, { tools: [...new Set(open.map((c) => c.name))].join(", ") });
  }
  return say("badge.thinking", lang);
}

const HEADLINE_KEYS = ["command", "path", "description", "query", "url", "pattern", "question"];

/** The argument that says what a tool call does (a command, a path, a task...), for its card's one
 * line; while the model still writes the call it grows with the streamed arguments. */
export function callHeadline(args: unknown, max = 160): string {
  if (!args || typeof args !== "object") return "";
  const record = args as Record<string, unknown>;
  const key = HEADLINE_KEYS.find((k) => typeof record[k] === "string") ?? Object.keys(record).find((k) => typeof record[k] === "string");
  const value = key ? String(record[key]) : "";
  const line = value.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** Whether an AI message is still being streamed with tool calls (its chunks not yet merged into
 * the thread's state): the model is writing those calls. */
export function writingCalls(message: Message): boolean {
  const chunks = (message as { tool_call_chunks?: unknown[] }).tool_call_chunks;
  return message.type === "ai" && Array.isArray(chunks) && chunks.length > 0;
}
