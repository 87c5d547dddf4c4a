import { describe, expect, it } from "vitest";
import { dispositionName, failureDetail } from "./rest";

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

describe("failureDetail", () => {
  it("says what the gateway said, else the status text", async () => {
    const json = (body: unknown) => new Response(JSON.stringify(body), { status: 400, statusText: "Bad Request" });
    expect(await failureDetail(json({ detail: "no such file" }))).toBe("no such file");
    expect(await failureDetail(json({ detail: [{ msg: "field required" }] }))).toBe('[{"msg":"field required"}]');
    expect(await failureDetail(new Response("<html>", { status: 502, statusText: "Bad Gateway" }))).toBe("Bad Gateway");
  });
});
