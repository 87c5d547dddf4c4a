import { describe, expect, it } from "vitest";
import { splitSkillFile } from "./SkillsTab";

describe("SKILL.md", () => {
  it("splits the front matter from the body", () => {
    expect(splitSkillFile("---\nname: a\ndescription: b\n---\n# Steps\n1. x\n")).toEqual({ front: "name: a\ndescription: b", body: "# Steps\n1. x\n" });
    expect(splitSkillFile("---\r\nname: a\r\n---\r\nbody")).toEqual({ front: "name: a", body: "body" });
  });

  it("keeps a file without front matter whole", () => {
    expect(splitSkillFile("# Just text\n---\n")).toEqual({ front: "", body: "# Just text\n---\n" });
  });
});
