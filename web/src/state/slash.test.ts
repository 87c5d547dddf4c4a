import { describe, expect, it } from "vitest";
import {
  agentChoices, agentCommand, composeMessage, filterChoices, moveActive, slashAt, togglePicked, withoutQuery,
} from "./slash";

const skills = [
  { name: "data-analysis", description: "Analyze a CSV" },
  { name: "deep-research", description: "Research a question" },
  { name: "report-writing", description: "Write a report" },
];
const names = (cs: { name: string }[]) => cs.map((c) => c.name);

describe("/ typed anywhere in the text", () => {
  it("opens at the start of the text or after a space, with the name typed so far", () => {
    expect(slashAt("/")).toEqual({ start: 0, end: 1, query: "" });
    expect(slashAt("/da")).toEqual({ start: 0, end: 3, query: "da" });
    expect(slashAt("chart sales.csv with /da")).toEqual({ start: 21, end: 24, query: "da" });
    expect(slashAt("line one\n/rep")?.query).toBe("rep");
  });
  it("follows the caret, not the end of the text", () => {
    const text = "please /de then more";
    expect(slashAt(text, 10)).toEqual({ start: 7, end: 10, query: "de" });
    expect(slashAt(text, 9)).toBeNull(); // the word goes on after the caret
  });
  it("is quiet once a space ends the name, inside words and paths", () => {
    expect(slashAt("/data-analysis chart it")).toBeNull();
    expect(slashAt("and/or")).toBeNull();
    expect(slashAt("/mnt/user-data")).toBeNull();
    expect(slashAt("a/")).toBeNull();
  });
  it("leaves the text without the /name once a skill is picked", () => {
    const text = "chart /da sales.csv";
    expect(withoutQuery(text, slashAt(text, 9)!)).toBe("chart sales.csv");
    expect(withoutQuery("/da", slashAt("/da")!)).toBe("");
  });
});

describe("the picker's filter", () => {
  it("lists every skill for an empty filter, and names that start with the filter first", () => {
    expect(names(filterChoices(skills, ""))).toEqual(["data-analysis", "deep-research", "report-writing"]);
    expect(names(filterChoices(skills, "d"))).toEqual(["data-analysis", "deep-research"]);
    expect(names(filterChoices(skills, "re"))).toEqual(["report-writing", "deep-research"]);
  });
  it("finds a skill by a word of its description, from three letters, in any case", () => {
    expect(names(filterChoices(skills, "CSV"))).toEqual(["data-analysis"]);
    expect(names(filterChoices(skills, "question"))).toEqual(["deep-research"]);
    expect(filterChoices(skills, "zz")).toEqual([]);
  });
});

describe("keyboard and picking several", () => {
  it("moves the highlight with the arrows, wrapping, and ignores other keys", () => {
    expect(moveActive(0, "ArrowDown", 3)).toBe(1);
    expect(moveActive(2, "ArrowDown", 3)).toBe(0);
    expect(moveActive(0, "ArrowUp", 3)).toBe(2);
    expect(moveActive(1, "End", 3)).toBe(2);
    expect(moveActive(1, "a", 3)).toBeNull();
    expect(moveActive(0, "ArrowDown", 0)).toBeNull();
  });
  it("picks several skills, a second pick takes one away, and sends them as /name commands", () => {
    let picked = togglePicked([], "data-analysis");
    picked = togglePicked(picked, "report-writing");
    expect(picked).toEqual(["data-analysis", "report-writing"]);
    expect(togglePicked(picked, "data-analysis")).toEqual(["report-writing"]);
    expect(composeMessage(picked, "  chart it ")).toBe("/data-analysis /report-writing chart it");
    expect(composeMessage([], "hi")).toBe("hi");
    expect(composeMessage(["deep-research"], "")).toBe("/deep-research");
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
    expect(names(filterChoices(menu, "d"))).toEqual(["data-analysis", "deep-research", "dia-de-datos"]);
    expect(filterChoices(menu, "sales")[0].agentId).toBe("a1");
  });
  it("gives a name with no letters a command still", () => {
    expect(agentCommand("!!!")).toBe("agent");
  });
});
