import { describe, expect, it } from "vitest";
import { applyTaskEvent, formatElapsed, isTaskEvent, placeCards, tasksFromUsage, type Tasks } from "./tasks";

const base = { task_id: "t1", subagent_type: "general-purpose", description: "Read the CSV" };

describe("task cards", () => {
  it("follows a task from start to completion", () => {
    let tasks: Tasks = {};
    tasks = applyTaskEvent(tasks, { type: "task_started", ...base }, 1000);
    expect(tasks.t1.status).toBe("running");
    tasks = applyTaskEvent(tasks, { type: "task_progress", ...base, step: 1, tool_calls: ["ls"], usage: { total_tokens: 40 } }, 1500);
    expect(tasks.t1.steps).toEqual(["ls"]);
    tasks = applyTaskEvent(tasks, { type: "task_progress", ...base, step: 1, tool_calls: ["ls"] }, 1600);
    expect(tasks.t1.steps).toEqual(["ls"]);
    expect(tasks.t1.tokens).toBe(40);
    tasks = applyTaskEvent(tasks, { type: "task_completed", ...base, status: "completed", duration_s: 2.5, usage: { total_tokens: 90 } }, 3500);
    expect(tasks.t1).toMatchObject({ status: "completed", durationS: 2.5, tokens: 90 });
  });

  it("counts tokens while the model writes and says what the sub-agent is doing", () => {
    let tasks: Tasks = {};
    tasks = applyTaskEvent(tasks, { type: "task_started", ...base }, 0);
    expect(tasks.t1.activity).toBe("");
    tasks = applyTaskEvent(tasks, { type: "task_generating", ...base, step: 1, tokens: 12 }, 100);
    tasks = applyTaskEvent(tasks, { type: "task_generating", ...base, step: 1, tokens: 30 }, 200);
    expect(tasks.t1).toMatchObject({ liveTokens: 30, activity: "writing", steps: [] });
    tasks = applyTaskEvent(tasks, { type: "task_generating", ...base, step: 1, tokens: 41, writing: "bash" }, 250);
    expect(tasks.t1).toMatchObject({ liveTokens: 41, activity: "writing a call to bash" });
    tasks = applyTaskEvent(tasks, { type: "task_progress", ...base, step: 1, tool_calls: ["bash"], usage: { total_tokens: 400 } }, 300);
    expect(tasks.t1).toMatchObject({ liveTokens: 0, tokens: 400, activity: "calling bash", steps: ["bash"] });
    tasks = applyTaskEvent(tasks, { type: "task_completed", ...base, status: "completed", usage: { total_tokens: 500 } }, 400);
    expect(tasks.t1).toMatchObject({ liveTokens: 0, activity: "", tokens: 500 });
  });

  it("shows a rejected attempt retrying, then what the check still found in the last answer", () => {
    let tasks: Tasks = {};
    tasks = applyTaskEvent(tasks, { type: "task_started", ...base }, 0);
    tasks = applyTaskEvent(tasks, { type: "task_failed", ...base, error: "rejected by the completion check: out.txt was not made", will_retry: true } as never, 100);
    expect(tasks.t1).toMatchObject({ status: "retrying", error: "rejected by the completion check: out.txt was not made" });
    tasks = applyTaskEvent(tasks, { type: "task_started", ...base, attempt: 2 }, 200);
    tasks = applyTaskEvent(tasks, { type: "task_completed", ...base, status: "completed", error: null, unresolved: ["out.txt was not made"] }, 300);
    expect(tasks.t1).toMatchObject({ status: "completed", error: "still missing: out.txt was not made" });
  });

  it("keeps several tasks apart", () => {
    let tasks: Tasks = {};
    for (const id of ["a", "b", "c"]) tasks = applyTaskEvent(tasks, { type: "task_started", task_id: id }, 0);
    expect(Object.keys(tasks)).toEqual(["a", "b", "c"]);
  });

  it("recognises task events and rebuilds cards from usage", () => {
    expect(isTaskEvent({ type: "task_started", task_id: "x" })).toBe(true);
    expect(isTaskEvent({ progress: 1 })).toBe(false);
    const cards = tasksFromUsage({ "task:x": { subagent_type: "coder", description: "d", status: "failed", total_tokens: 5 }, lead: {} });
    expect(cards.x).toMatchObject({ subagentType: "coder", status: "failed", tokens: 5 });
    expect(formatElapsed(65)).toBe("1 m 05 s");
  });
});

describe("cards with their turn", () => {
  it("places each card after the message whose task or run_plan call started it", () => {
    let tasks: Tasks = {};
    for (const id of ["call-a", "call-p-x", "call-p-y", "orphan"]) {
      tasks = applyTaskEvent(tasks, { type: "task_started", ...base, task_id: id }, 1000);
    }
    const messages = [
      { type: "human" },
      { type: "ai", tool_calls: [{ name: "task", id: "call-a" }] },
      { type: "tool" },
      { type: "human" },
      { type: "ai", tool_calls: [{ name: "run_plan", id: "call-p" }] },
    ];
    const { byMessage, rest } = placeCards(messages, tasks);
    expect(byMessage.get(1)!.map((c) => c.id)).toEqual(["call-a"]);
    expect(byMessage.get(4)!.map((c) => c.id)).toEqual(["call-p-x", "call-p-y"]);
    expect(rest.map((c) => c.id)).toEqual(["orphan"]);
  });
});
