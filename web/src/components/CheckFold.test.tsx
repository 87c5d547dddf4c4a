import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { foldChecks } from "../state/checks";
import { LangContext } from "../state/lang";
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

  it("is in the thread's language: Chinese for a request in Chinese", () => {
    const messages = [
      { type: "human", content: "把总结保存到 a.md" },
      { type: "ai", content: "好的" },
      { type: "human", name: "harness", content: "[harness check] Not done yet:\n- a.md does not exist",
        additional_kwargs: { herdsman_findings: [{ rule: "path.missing" }, { rule: "reply.wrong_language" }] } },
      { type: "ai", content: "已保存 a.md" },
    ] as unknown as Message[];
    const fold = foldChecks(messages, { unresolved: [] }).byAnchor.get(3)!;
    const html = renderToStaticMarkup(<LangContext.Provider value="zh"><CheckFold fold={fold} /></LangContext.Provider>);
    expect(html).toContain('<summary data-testid="check-line">已检查：2 个问题，已修正</summary>');
    const left = foldChecks(messages, { unresolved: [{ rule: "path.missing", text: "a.md is missing" }] }).byAnchor.get(3)!;
    expect(renderToStaticMarkup(<LangContext.Provider value="zh"><CheckFold fold={left} /></LangContext.Provider>))
      .toContain(">已检查：2 个问题，还剩 1 个</summary>");
  });
});
