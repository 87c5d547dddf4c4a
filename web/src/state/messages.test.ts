import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { hasTextToolCall, isHarnessNote, toolStatus } from "./messages";

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
