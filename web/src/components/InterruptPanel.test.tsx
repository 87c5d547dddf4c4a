import { describe, expect, it } from "vitest";
import { asksSomething } from "./InterruptPanel";

describe("an interrupt that asks nothing", () => {
  it("is not shown (a stopped run leaves one)", () => {
    expect(asksSomething(undefined)).toBe(false);
    expect(asksSomething(null)).toBe(false);
    expect(asksSomething({})).toBe(false);
    expect(asksSomething("  ")).toBe(false);
  });
  it("is shown when it holds a question or tool calls to approve", () => {
    expect(asksSomething({ question: "Which color?" })).toBe(true);
    expect(asksSomething({ action_requests: [{ name: "glob" }] })).toBe(true);
    expect(asksSomething("Continue?")).toBe(true);
  });
});
