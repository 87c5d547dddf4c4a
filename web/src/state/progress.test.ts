import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { runOutcome, stoppedAnswer } from "./progress";

const human = { type: "human", content: "essay please", id: "h" } as Message;
const cut = { type: "ai", content: "Once upon", id: "a", response_metadata: { finish_reason: "stopped" } } as unknown as Message;
const done = { type: "ai", content: "The end.", id: "b", response_metadata: { finish_reason: "stop" } } as unknown as Message;

describe("a stopped run", () => {
  it("is known from the answer a stop cut short, after a reload too", () => {
    expect(stoppedAnswer([human, cut])).toBe(true);
    expect(stoppedAnswer([human, done])).toBe(false);
    expect(stoppedAnswer([human, cut, human])).toBe(false); // a new turn began
    expect(runOutcome({ stopped: stoppedAnswer([human, cut]) }).text).toBe("Stopped: what was written so far is kept");
  });
});
