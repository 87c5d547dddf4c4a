import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { currentDraft, draftHeadline, draftKey, isDraftEvent } from "./drafts";

const human = { type: "human", content: "hi", id: "h" } as Message;
const call = { type: "ai", content: "", id: "a", tool_calls: [{ name: "bash", args: { command: "ls" }, id: "c1" }] } as Message;

describe("drafts", () => {
  it("recognises draft events", () => {
    expect(isDraftEvent({ type: "tool_call_draft", index: 0, name: null, text: "{", chars: 1 })).toBe(true);
    expect(isDraftEvent({ type: "task_started", task_id: "t" })).toBe(false);
    expect(isDraftEvent(null)).toBe(false);
  });

  it("is shown while the run goes on and the messages are as they were", () => {
    const draft = { type: "tool_call_draft" as const, index: 0, name: "bash", text: "{", chars: 1, key: draftKey([human]) };
    expect(currentDraft(draft, [human], true)).toBe(draft);
    expect(currentDraft(draft, [human], false)).toBeNull();
    expect(currentDraft(draft, [human, call], true)).toBeNull(); // the call arrived
  });

  it("says the argument being written, its end when long", () => {
    expect(draftHeadline('{"name": "bash", "arguments": {"command": "ls -l /mnt/user-data/out')).toBe("ls -l /mnt/user-data/out");
    expect(draftHeadline('{"name": "write_file", "arguments": {"path": "a.md", "content": "x')).toBe("a.md");
    expect(draftHeadline('{"name": "bash", "arguments": {"command": "echo \\"a\\"\\nls')).toBe('echo "a" ls');
    expect(draftHeadline('{"name": "bash", "argu')).toBe("");
    expect(draftHeadline(`{"name": "bash", "arguments": {"command": "${"a".repeat(200)}b`, 10)).toBe("…aaaaaaaaab");
  });
});
