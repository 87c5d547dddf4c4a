import { describe, expect, it } from "vitest";
import { agentChoices, agentCommand, pickSkill, slashMatches } from "./slash";

const skills = [
  { name: "data-analysis", description: "Analyze a CSV" },
  { name: "deep-research", description: "Research a question" },
  { name: "report-writing", description: "Write a report" },
];

describe("slash autocomplete", () => {
  it("lists the skills that start with what is typed", () => {
    expect(slashMatches("/", skills).map((s) => s.name)).toEqual(["data-analysis", "deep-research", "report-writing"]);
    expect(slashMatches("/d", skills).map((s) => s.name)).toEqual(["data-analysis", "deep-research"]);
    expect(slashMatches("/rep", skills).map((s) => s.name)).toEqual(["report-writing"]);
  });
  it("is quiet once the command is typed, and for text that is not a command", () => {
    expect(slashMatches("/data-analysis chart it", skills)).toEqual([]);
    expect(slashMatches("hello /d", skills)).toEqual([]);
    expect(slashMatches("/mnt/user-data", skills)).toEqual([]);
  });
  it("picks a skill as its command and a space", () => {
    expect(pickSkill("data-analysis")).toBe("/data-analysis ");
  });
});

describe("custom agents in the / menu", () => {
  const agents = [
    { assistant_id: "lead_agent", name: "lead_agent" },
    { assistant_id: "a1", name: "Sales Report", description: "Weekly sales. Uses the CSVs." },
    { assistant_id: "a2", name: "Día de datos!" },
  ];
  it("names each custom agent by a command made of its name, not the built-in one", () => {
    const choices = agentChoices(agents, "lead_agent");
    expect(choices.map((c) => [c.name, c.agentId])).toEqual([["sales-report", "a1"], ["dia-de-datos", "a2"]]);
    expect(choices[1].description).toContain("Día de datos!");
  });
  it("lists agents after the skills that match", () => {
    const menu = [...skills, ...agentChoices(agents, "lead_agent")];
    expect(slashMatches("/d", menu).map((c) => c.name)).toEqual(["data-analysis", "deep-research", "dia-de-datos"]);
    expect(slashMatches("/sales", menu)[0].agentId).toBe("a1");
  });
  it("gives a name with no letters a command still", () => {
    expect(agentCommand("!!!")).toBe("agent");
  });
});
