import { describe, expect, it } from "vitest";
import type { Message, ThreadState } from "@langchain/langgraph-sdk";
import { checkpointBefore } from "./branch";

const msg = (id: string, type: "human" | "ai"): Message => ({ id, type, content: id }) as Message;
const state = (id: string, messages: Message[], next: string[] = []): ThreadState =>
  ({ values: { messages }, next, checkpoint: { thread_id: "t", checkpoint_ns: "", checkpoint_id: id, checkpoint_map: null } }) as unknown as ThreadState;

describe("checkpointBefore", () => {
  it("picks the end of the run before the edited message", () => {
    const m = [msg("h1", "human"), msg("a1", "ai"), msg("h2", "human"), msg("a2", "ai")];
    const history = [state("c5", m), state("c4", m.slice(0, 3), ["model"]), state("c3", m.slice(0, 2)), state("c2", m.slice(0, 1), ["model"]), state("c1", [])];
    expect(checkpointBefore(history, 2, m)?.checkpoint_id).toBe("c3");
    expect(checkpointBefore(history, 0, m)?.checkpoint_id).toBe("c1");
    expect(checkpointBefore(history, 1, m)?.checkpoint_id).toBe("c2");
  });
});
