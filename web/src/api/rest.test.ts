import { describe, expect, it } from "vitest";
import { dispositionName } from "./rest";

describe("dispositionName", () => {
  it("reads the file name of an attachment, quoted or not", () => {
    expect(dispositionName('attachment; filename="herdsman-memory-local.json"')).toBe("herdsman-memory-local.json");
    expect(dispositionName("attachment; filename=report.md")).toBe("report.md");
  });
  it("is null without a name", () => {
    expect(dispositionName("inline")).toBeNull();
    expect(dispositionName(null)).toBeNull();
  });
});
