import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { activity, hasTextToolCall, isHarnessNote, textCallNames, toolStatus } from "./messages";

const tool = (extra: Record<string, unknown>): Message =>
  ({ type: "tool", tool_call_id: "c1", content: "out", ...extra }) as unknown as Message;

describe("tool card status", () => {
  it("is running until the result comes", () => {
    expect(toolStatus(undefined)).toEqual({ status: "running", label: "running" });
  });
  it("says failed with the exit code for a command that exited non-zero", () => {
    expect(toolStatus(tool({ artifact: { command: "python x", exit_code: 127, timed_out: false } }))).toEqual({
      status: "error",
      label: "failed · exit 127",
    });
  });
  it("says timed out, and failed for an error result", () => {
    expect(toolStatus(tool({ artifact: { exit_code: -9, timed_out: true } })).label).toBe("timed out");
    expect(toolStatus(tool({ status: "error" }))).toEqual({ status: "error", label: "failed" });
  });
  it("is done for a command that exited 0 and for a plain result", () => {
    expect(toolStatus(tool({ artifact: { exit_code: 0, timed_out: false } })).status).toBe("done");
    expect(toolStatus(tool({}))).toEqual({ status: "done", label: "done" });
  });
});

describe("harness notes and calls written as text", () => {
  it("tells a harness note from the user's message", () => {
    const note = { type: "human", name: "harness", content: "[harness check] Not done yet" } as unknown as Message;
    const user = { type: "human", content: "hi" } as unknown as Message;
    expect(isHarnessNote(note)).toBe(true);
    expect(isHarnessNote(user)).toBe(false);
  });
  it("spots a tool call the model wrote as text, not JSON the answer shows", () => {
    expect(hasTextToolCall('<tool_call>\n{"name": "write_file", "arguments": {"path": "a"}}')).toBe(true);
    expect(hasTextToolCall('{"name": "bash", "arguments": {"command": "ls"}}')).toBe(true);
    expect(hasTextToolCall('The totals are {"north": 2.5}.')).toBe(false);
    expect(hasTextToolCall("Saved the file.")).toBe(false);
  });
});

describe("what a running agent is doing", () => {
  const human = { type: "human", content: "go" } as unknown as Message;
  const call = (name: string, id: string) =>
    ({ type: "ai", content: "", tool_calls: [{ name, id, args: {} }] }) as unknown as Message;
  const result = (id: string) => ({ type: "tool", tool_call_id: id, content: "ok" }) as unknown as Message;
  it("thinks until it calls a tool, and after the result", () => {
    expect(activity([human])).toBe("thinking");
    expect(activity([human, call("bash", "c1")])).toBe("calling bash");
    expect(activity([human, call("bash", "c1"), result("c1")])).toBe("thinking");
  });
  it("waits for sub-agents while a task call is open", () => {
    expect(activity([human, call("task", "t1")])).toBe("waiting for sub-agents");
  });
});

describe("calls written as text", () => {
  const ai = (content: string, extra: Record<string, unknown> = {}): Message => ({ type: "ai", content, ...extra }) as unknown as Message;
  it("are named by the harness's mark first, else read from the text", () => {
    expect(textCallNames(ai("anything", { additional_kwargs: { herdsman_call_as_text: ["lighthouse"] } }))).toEqual(["lighthouse"]);
    expect(textCallNames(ai('{"name": "bash", "arguments": {"command": "ls"}}'))).toEqual(["bash"]);
    expect(textCallNames(ai("<tool_call>\n{broken"))).toEqual(["?"]);
  });
  it("are none in a plain answer or a user's message", () => {
    expect(textCallNames(ai("A lighthouse works by..."))).toBeNull();
    expect(textCallNames({ type: "human", content: '{"name": "bash", "arguments": {}}' } as unknown as Message)).toBeNull();
  });
});

describe("the header's badge in Chinese", () => {
  it("says what the agent does in the thread's language", () => {
    const human = { type: "human", content: "画图", id: "h" } as Message;
    const call = { type: "ai", content: "", id: "a", tool_calls: [{ name: "bash", args: {}, id: "c1" }] } as unknown as Message;
    expect(activity([human], "zh")).toBe("思考中");
    expect(activity([human, call], "zh")).toBe("正在调用 bash");
  });
});
