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

describe("a run that ended on the harness's own reply", () => {
  it("failed when the model could not be called: read from the reply's mark, or its words in older threads", () => {
    const marked = { type: "ai", content: "错误：模型调用失败（ConnectError：refused）。", id: "e",
      response_metadata: { herdsman_failed: "model_call" } } as unknown as Message;
    expect(runOutcome({ messages: [human, marked] }, "zh")).toEqual({ status: "failed", text: "失败：无法调用模型（原因见回复）" });
    const old = { type: "ai", content: "Error: the model call failed (ConnectError: refused).", id: "o" } as Message;
    expect(runOutcome({ messages: [human, old] }).status).toBe("failed");
    expect(runOutcome({ messages: [human, done] }).status).toBe("done");
  });

  it("stopped at a limit, named", () => {
    const limit = { type: "ai", content: "I stopped after 25 model calls", id: "l",
      response_metadata: { herdsman_stopped_by: "max_steps" } } as unknown as Message;
    expect(runOutcome({ messages: [human, limit] })).toEqual({ status: "limit", text: "Stopped at a limit (max_steps): the run did not finish" });
  });

  it("is said in the thread's language when the deliverable is missing", () => {
    expect(runOutcome({ unresolved: [{ rule: "path.missing", text: "outputs/a.png is missing" }] }, "zh").text)
      .toBe("未交付：完成检查仍发现 1 个问题 (outputs/a.png is missing)");
  });
});
