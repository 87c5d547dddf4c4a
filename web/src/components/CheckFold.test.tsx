import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { foldChecks } from "../state/checks";
import { CheckFold } from "./CheckFold";

describe("the folded check line", () => {
  it("is a closed details whose summary is the line, with no note text until it opens", () => {
    const messages = [
      { type: "human", content: "save a.md" },
      { type: "ai", content: "Here it is" },
      { type: "human", name: "harness", content: "[harness check] Not done yet:\n- a.md does not exist" },
      { type: "ai", content: "Saved a.md" },
    ] as unknown as Message[];
    const fold = foldChecks(messages, { unresolved: [] }).byAnchor.get(3)!;
    const html = renderToStaticMarkup(<CheckFold fold={fold} />);
    expect(html).toMatch(/^<details[^>]*data-testid="check-fold"[^>]*><summary data-testid="check-line">checked: 1 note, fixed<\/summary><\/details>$/);
    expect(html).not.toContain("does not exist");
    expect(html).not.toContain("Here it is");
  });
});
