/** Helpers over LangGraph messages: their text, tool results by call id, and files the agent wrote. */
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
