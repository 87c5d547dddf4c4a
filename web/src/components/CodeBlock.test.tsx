import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { CodeBlock, languageOf, tokens } from "./CodeBlock";
import { Markdown } from "./Markdown";

describe("code blocks", () => {
  it("highlights python with hljs classes and a copy button", () => {
    const html = renderToStaticMarkup(<CodeBlock code={'def f(x):\n    return "a<b"  # note'} language="python" />);
    expect(html).toContain('<span class="hljs-keyword">def</span>');
    expect(html).toContain('<span class="hljs-comment"># note</span>');
    expect(html).toContain("&quot;a&lt;b&quot;"); // the code's own text stays text, escaped once
    expect(html).toContain(">Copy</button>");
  });

  it("accepts aliases and shows unknown languages as plain text", () => {
    expect(renderToStaticMarkup(<CodeBlock code="echo hi" language="sh" />)).toContain("hljs-built_in");
    const plain = renderToStaticMarkup(<CodeBlock code="<b>x</b>" language="brainfuck" />);
    expect(plain).not.toContain("hljs");
    expect(plain).toContain("&lt;b&gt;x&lt;/b&gt;");
  });

  it("turns highlight.js output into nested elements without innerHTML", () => {
    const html = renderToStaticMarkup(<>{tokens('<span class="a">x <span class="b">&lt;y&gt;</span></span> &amp; z')}</>);
    expect(html).toBe('<span class="a">x <span class="b">&lt;y&gt;</span></span> &amp; z');
  });

  it("renders fenced code in Markdown through CodeBlock", () => {
    const html = renderToStaticMarkup(<Markdown text={"Here:\n\n```python\nimport os\n```"} />);
    expect(html).toContain('<span class="hljs-keyword">import</span>');
    expect(html).toContain("code-copy");
  });

  it("maps file names to languages", () => {
    expect(languageOf("outputs/primes.py")).toBe("python");
    expect(languageOf("/mnt/user-data/page.HTML")).toBe("xml");
    expect(languageOf("Makefile")).toBe("");
    expect(languageOf("notes.txt")).toBe("");
  });
});
