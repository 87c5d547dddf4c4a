import { describe, expect, it } from "vitest";
import { agentLabel, contextOf, EMPTY_FORM, formOf, formProblem, toggleSkill } from "./agents";

describe("agent form", () => {
  it("reads an agent's settings and writes them back, keeping the ones it does not edit", () => {
    const agent = {
      assistant_id: "a1", name: "Parrot", description: "talks",
      context: { instructions: "Squawk.", model_name: "gpt", skills: ["data-analysis"], tools: ["bash"], max_steps: 3 },
    };
    const form = formOf(agent);
    expect(form).toEqual({ name: "Parrot", description: "talks", instructions: "Squawk.", model: "gpt", skills: ["data-analysis"] });
    expect(contextOf({ ...form, instructions: "  Quiet.  ", model: "" }, agent.context)).toEqual({
      instructions: "Quiet.", skills: ["data-analysis"], tools: ["bash"], max_steps: 3,
    });
  });
  it("leaves empty fields unset", () => {
    expect(contextOf({ ...EMPTY_FORM, name: "x" })).toEqual({});
    expect(formOf({ assistant_id: "a", name: "n" })).toEqual({ ...EMPTY_FORM, name: "n" });
  });
  it("needs a name", () => {
    expect(formProblem(EMPTY_FORM)).toMatch(/name/);
    expect(formProblem({ ...EMPTY_FORM, name: "ok" })).toBeNull();
  });
  it("toggles skills, back to every skill when all are on", () => {
    const all = ["a", "b"];
    expect(toggleSkill(null, "a", all)).toEqual(["b"]);
    expect(toggleSkill(["b"], "a", all)).toBeNull();
    expect(toggleSkill(["b"], "b", all)).toEqual([]);
  });
});

describe("agent labels", () => {
  const agents = [{ assistant_id: "a1", name: "Parrot" }];
  it("names a thread's custom agent, not the built-in one", () => {
    expect(agentLabel("a1", agents)).toBe("Parrot");
    expect(agentLabel("lead_agent", agents)).toBeNull();
    expect(agentLabel(undefined, agents)).toBeNull();
    expect(agentLabel("gone", agents)).toBeNull();
  });
});
