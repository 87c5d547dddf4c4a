import { describe, expect, it } from "vitest";
import { clip, failed, formatTokens, move, runLabel, stepTitle, type Trace, type TraceStep } from "./trace";

function step(over: Partial<TraceStep>): TraceStep {
  return {
    index: 1, kind: "tool", run_id: "r1", message_id: null, text: "", model: null, usage: null, tool_calls: [],
    tool: null, tool_call_id: null, args: {}, status: "success", bash: null, files_changed: [], files_changed_incomplete: false,
    ...over,
  };
}

const bash = (exit_code: number, command = "ls nope") =>
  step({ tool: "bash", bash: { command, exit_code, stdout: "", stderr: "", output: null, timed_out: false } });

describe("trace helpers", () => {
  it("cuts long text and says how much was left out", () => {
    expect(clip("short", 10)).toEqual({ text: "short", cut: 0 });
    expect(clip("x".repeat(25), 10)).toEqual({ text: "x".repeat(10), cut: 15 });
  });

  it("formats token counts", () => {
    expect(formatTokens(950)).toBe("950");
    expect(formatTokens(12_345)).toBe("12k");
    expect(formatTokens(1_500)).toBe("1.5k");
    expect(formatTokens(2_000_000)).toBe("2.0M");
  });

  it("titles steps by what ran", () => {
    expect(stepTitle(step({ kind: "input", text: "hello\nmore" }))).toBe("User: hello");
    expect(stepTitle(step({ kind: "model", model: "gpt", tool_calls: [{ id: "1", name: "bash", args: {} }] }))).toBe("gpt → bash");
    expect(stepTitle(step({ kind: "model", text: "done" }))).toBe("model: done");
    expect(stepTitle(bash(0, "echo a\necho b"))).toBe("bash: echo a");
    expect(stepTitle(step({ tool: "read_file", status: "error" }))).toBe("read_file (error)");
    const sub = (description: string | null, task_id: string) => ({ task_id, description, subagent_type: "general-purpose", status: "completed", steps: [] });
    expect(stepTitle(step({ tool: "run_plan", subagents: [sub("Research alpha", "t1"), sub(null, "t2")] }))).toBe("run_plan: Research alpha, t2");
  });

  it("flags errors and non-zero exit codes", () => {
    expect(failed(bash(0))).toBe(false);
    expect(failed(bash(2))).toBe(true);
    expect(failed(step({ status: "error" }))).toBe(true);
  });

  it("steps forward and back within the list", () => {
    expect(move(0, -1, 5)).toBe(0);
    expect(move(3, 1, 5)).toBe(4);
    expect(move(4, 1, 5)).toBe(4);
    expect(move(0, 1, 0)).toBe(0);
  });

  it("labels runs in order", () => {
    const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    const runs = [1, 2].map((n) => ({ run_id: `r${n}`, first_step: n, step_count: 1, model_calls: 1, tool_calls: 0, usage }));
    const trace: Trace = { thread_id: "t", run_id: null, steps: [], runs, usage };
    expect(runLabel(trace, runs[1])).toBe("Run 2 of 2");
  });
});
