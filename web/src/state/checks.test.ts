import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { checkLine, foldChecks, openFindings } from "./checks";

const user = (text: string): Message => ({ type: "human", content: text }) as unknown as Message;
const answer = (text: string): Message => ({ type: "ai", content: text }) as unknown as Message;
const call = (id: string, name = "write_file"): Message =>
  ({ type: "ai", content: "", tool_calls: [{ id, name, args: { path: "/mnt/user-data/outputs/a.md" } }] }) as unknown as Message;
const result = (id: string): Message => ({ type: "tool", tool_call_id: id, content: "ok" }) as unknown as Message;
const note = (text: string, rules?: string[], prefix = "[harness check]"): Message =>
  ({
    type: "human",
    name: "harness",
    content: `${prefix} Not done yet:\n- ${text}`,
    additional_kwargs: rules ? { herdsman_findings: rules.map((rule) => ({ rule, message: text })) } : { force_tools: ["any"] },
  }) as unknown as Message;

describe("folding the harness's notes of a turn", () => {
  // a turn where the check sent the answer back twice and the model then wrote the file and answered
  const fixedTurn = [
    user("save a report to /mnt/user-data/outputs/a.md"), // 0
    answer("Here is the report: ..."), // 1 sent back
    note("a.md does not exist", ["missing_file", "code_not_run"]), // 2
    answer("I saved it."), // 3 sent back again
    note("a.md does not exist", ["missing_file"]), // 4
    call("c1"), // 5 a real action: shown
    result("c1"), // 6
    answer("Saved /mnt/user-data/outputs/a.md."), // 7 the final answer
  ];

  it("hides the notes and the replies they sent back, keeps the tool calls and the final answer", () => {
    const { hidden } = foldChecks(fixedTurn);
    expect([...hidden].sort()).toEqual([1, 2, 3, 4]);
  });

  it("makes one fold, with the final answer, that counts findings by rule and says fixed", () => {
    const { byAnchor } = foldChecks(fixedTurn, { unresolved: [] });
    expect([...byAnchor.keys()]).toEqual([7]);
    const fold = byAnchor.get(7)!;
    expect(fold.notes.map((n) => n.rules)).toEqual([["missing_file", "code_not_run"], ["missing_file"]]);
    expect(fold.notes[0].sentBack).toBe("Here is the report: ...");
    expect(fold.notes[0].text).toBe("Not done yet:\n- a.md does not exist");
    expect(checkLine(fold)).toBe("checked: 3 findings, fixed");
  });

  it("says what is left when the state still holds findings after the latest run", () => {
    const fold = foldChecks(fixedTurn, { unresolved: ["a.md is empty"] }).byAnchor.get(7)!;
    expect(fold.status).toBe("left");
    expect(checkLine(fold)).toBe("checked: 3 findings, 1 left");
    expect(fold.left).toEqual([{ rule: null, text: "a.md is empty" }]);
    const typed = foldChecks(fixedTurn, { unresolved: [{ rule: "empty_file", message: "a.md is empty" }] }).byAnchor.get(7)!;
    expect(typed.left).toEqual([{ rule: "empty_file", text: "a.md is empty" }]);
  });

  it("counts notes when they carry no rule ids", () => {
    const turn = [user("count the lines of a.txt"), answer("18"), note("no tool output shows 18"), call("c1", "bash"), result("c1"), answer("12")];
    const { byAnchor, hidden } = foldChecks(turn, { unresolved: [] });
    expect([...hidden].sort()).toEqual([1, 2]);
    const fold = byAnchor.get(5)!;
    expect(fold.notes[0].rules).toBeNull();
    expect(checkLine(fold)).toBe("checked: 1 note, fixed");
  });

  it("tells the verifier's review from the rules' check", () => {
    const turn = [user("explain x"), answer("x is"), note("the request is not carried out", undefined, "[harness review]"), answer("x is y")];
    const fold = foldChecks(turn).byAnchor.get(3)!;
    expect(fold.notes[0].kind).toBe("review");
    expect(fold.notes[0].text).toBe("Not done yet:\n- the request is not carried out");
  });

  it("keeps each turn's notes with that turn, and the state's findings with the latest turn only", () => {
    const turns = [
      user("first"), answer("a"), note("x", ["r1"]), answer("b"), // 0-3
      user("second"), answer("c"), note("y", ["r2"]), answer("d"), // 4-7
    ];
    const { byAnchor } = foldChecks(turns, { unresolved: ["y still"] });
    expect([...byAnchor.keys()].sort()).toEqual([3, 7]);
    expect(byAnchor.get(3)!.turn).toBe(0);
    // an earlier turn: the state no longer says whether its findings were fixed, so the line does not claim it
    expect(checkLine(byAnchor.get(3)!)).toBe("checked: 1 finding, then answered");
    expect(checkLine(byAnchor.get(7)!)).toBe("checked: 1 finding, 1 left");
    expect(checkLine(foldChecks(turns, { unresolved: [] }).byAnchor.get(7)!)).toBe("checked: 1 finding, fixed");
    expect(checkLine(foldChecks(turns).byAnchor.get(7)!)).toBe("checked: 1 finding, then answered"); // state not loaded
  });

  it("leaves a turn without notes alone", () => {
    expect(foldChecks([user("hi"), answer("hello")], { unresolved: [] }).byAnchor.size).toBe(0);
    expect(foldChecks([]).byAnchor.size).toBe(0);
  });

  it("shows findings the check kept without sending the model back (no rounds)", () => {
    const fold = foldChecks([user("save a.md"), answer("done")], { unresolved: ["a.md does not exist"] }).byAnchor.get(1)!;
    expect(checkLine(fold)).toBe("checked: 1 finding left");
  });

  it("is checking while the turn's run goes on, and ignores the previous run's findings then", () => {
    const running = [user("save a.md"), answer("ok"), note("a.md does not exist", ["missing_file"]), call("c1")];
    const fold = foldChecks(running, { busy: true, unresolved: ["stale"] }).byAnchor.get(3)!;
    expect(fold.left).toEqual([]);
    expect(checkLine(fold)).toBe("checking: 1 finding so far");
    expect(foldChecks([user("next")], { busy: true, unresolved: ["stale"] }).byAnchor.size).toBe(0);
  });

  it("says so when the turn ended without an answer after its last note (a stopped run)", () => {
    const stopped = [user("save a.md"), answer("ok"), note("a.md does not exist", ["missing_file"]), call("c1"), result("c1")];
    const { byAnchor } = foldChecks(stopped, { unresolved: [] });
    expect([...byAnchor.keys()]).toEqual([3]); // after the last shown message, not the hidden note or the tool result
    expect(checkLine(byAnchor.get(3)!)).toBe("checked: 1 finding, no answer after");
  });
});

describe("the state's unresolved findings", () => {
  it("reads texts, findings with a rule, and nothing", () => {
    expect(openFindings(undefined)).toEqual([]);
    expect(openFindings(["a"])).toEqual([{ rule: null, text: "a" }]);
    expect(openFindings([{ rule: "r" }])).toEqual([{ rule: "r", text: "" }]);
  });
});
