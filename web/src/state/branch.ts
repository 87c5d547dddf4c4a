/** Editing and regenerating from a checkpoint: find the checkpoint a message was sent from. */
import type { Checkpoint, Message, ThreadState } from "@langchain/langgraph-sdk";

/**
 * The checkpoint whose state held exactly the first `index` messages (the ones before the
 * message being edited), preferring one where a run had ended. History is newest first.
 */
export function checkpointBefore(history: ThreadState[], index: number, messages: Message[]): Checkpoint | null {
  const prefix = messages.slice(0, index).map((m) => m.id);
  const matches = history.filter((s) => {
    const msgs = ((s.values as { messages?: Message[] })?.messages ?? []);
    return msgs.length === index && msgs.every((m, i) => !prefix[i] || m.id === prefix[i]);
  });
  const ended = matches.find((s) => s.next.length === 0) ?? matches[0];
  return ended ? ended.checkpoint : null;
}
