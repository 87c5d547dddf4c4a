import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { languageOf, threadLanguage } from "./lang";
import { say } from "./words";

const human = (content: string, name?: string) => ({ type: "human", content, name }) as unknown as Message;

describe("the language of a request", () => {
  it("is told by the script of its letters, paths and code aside", () => {
    expect(languageOf("Make a bar chart of the totals as a PNG in outputs.")).toBe("en");
    expect(languageOf("请把 outputs/sales.csv 里的总数画成柱状图")).toBe("zh");
    expect(languageOf("把结果保存到 /mnt/user-data/outputs/total.txt")).toBe("zh");
    expect(languageOf("Explain what 你好 means")).toBe("en"); // a quoted name is no Chinese request
    expect(languageOf("ファイルを読んでください")).toBe("ja");
    expect(languageOf("outputs/a.txt 123")).toBe("und");
  });

  it("of a thread is its latest user message's, not a note of the harness's, else the fallback", () => {
    const messages = [human("hello"), { type: "ai", content: "hi" } as Message, human("写一首关于雨的诗"),
      human("[harness check] Not done yet: the file is missing", "harness")];
    expect(threadLanguage(messages)).toBe("zh");
    expect(threadLanguage(messages.slice(0, 2), "zh")).toBe("en");
    expect(threadLanguage([], "zh")).toBe("zh");
    expect(threadLanguage([human("Привет")], "en")).toBe("en"); // no sentences in Russian: English
  });
});

describe("the harness's sentences", () => {
  it("are filled in, in the language asked, English where a language has none", () => {
    expect(say("checks.findings", "en", { n: 2 })).toBe("2 findings");
    expect(say("checks.findings", "en", { n: 1 })).toBe("1 finding");
    expect(say("checks.findings", "zh", { n: 2 })).toBe("2 个问题");
    expect(say("outcome.failed", "zh", { error: "boom" })).toBe("失败：boom");
  });
});
