import { describe, expect, it } from "vitest";
import { pickSkill, slashMatches } from "./slash";

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
