import { describe, expect, it } from "vitest";
import { parseBlocks } from "./Markdown";

describe("markdown blocks", () => {
  it("splits headings, lists, code and paragraphs", () => {
    const blocks = parseBlocks("# Title\n\nSome *text*.\n\n- a\n- b\n\n```py\nprint(1)\n```\n> quoted");
    expect(blocks.map((b) => b.kind)).toEqual(["heading", "para", "list", "code", "quote"]);
    expect(blocks[3]).toEqual({ kind: "code", lang: "py", text: "print(1)" });
  });

  it("joins indented continuation lines to their list item and keeps the start number", () => {
    expect(parseBlocks("1. **Find** the data\n   by the scripts.\n2. Profile")).toEqual([
      { kind: "list", ordered: true, items: ["**Find** the data by the scripts.", "Profile"] },
    ]);
    expect(parseBlocks("3. third\n4. fourth")).toEqual([{ kind: "list", ordered: true, items: ["third", "fourth"], start: 3 }]);
  });

  it("keeps an unclosed fence as code", () => {
    expect(parseBlocks("```\nstill streaming")).toEqual([{ kind: "code", lang: "", text: "still streaming" }]);
  });
});
