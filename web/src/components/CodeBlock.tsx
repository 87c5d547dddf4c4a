/** A code block with syntax highlighting and a copy button, used for fenced code in Markdown and
 * for code-file previews.
 *
 * Highlighting uses highlight.js *core* with a handful of registered languages (not the full
 * bundle) to keep the page small. highlight.js returns HTML text; rather than inject it with
 * innerHTML, `tokens()` reads its few shapes (`<span class="...">`, `</span>`, escaped text) back
 * into React elements, so the UI never sets innerHTML. */
import { memo, useState, type ReactNode } from "react";
import "./CodeBlock.css";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

hljs.registerLanguage("python", python);
hljs.registerLanguage("typescript", typescript);
hljs.registerLanguage("javascript", javascript);
hljs.registerLanguage("bash", bash);
hljs.registerLanguage("json", json);
hljs.registerLanguage("yaml", yaml);
hljs.registerLanguage("sql", sql);
hljs.registerLanguage("markdown", markdown);
hljs.registerLanguage("xml", xml);
hljs.registerLanguage("css", css);
hljs.registerAliases(["shell", "console", "shellsession"], { languageName: "bash" });
hljs.registerAliases(["python3", "py3"], { languageName: "python" });

const EXTENSIONS: Record<string, string> = {
  py: "python", pyi: "python", ts: "typescript", tsx: "typescript", mts: "typescript",
  js: "javascript", jsx: "javascript", mjs: "javascript", cjs: "javascript",
  sh: "bash", bash: "bash", zsh: "bash", json: "json", jsonl: "json", yaml: "yaml", yml: "yaml",
  sql: "sql", md: "markdown", markdown: "markdown", html: "xml", htm: "xml", xml: "xml",
  svg: "xml", css: "css",
};

/** The highlight.js language for a file name (e.g. `"outputs/primes.py"` -> `"python"`), or
 * `""` when the extension is not one of the registered languages. */
export function languageOf(fileName: string): string {
  const ext = fileName.toLowerCase().split(/[\\/]/).pop()?.split(".").slice(1).pop() ?? "";
  return EXTENSIONS[ext] ?? "";
}

/** Whether `language` (a name or alias such as "py", "sh", "html") can be highlighted. */
export function canHighlight(language: string | undefined): boolean {
  return !!language && !!hljs.getLanguage(language);
}

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'", "&#39;": "'" };
const unescape = (s: string) => s.replace(/&(?:amp|lt|gt|quot|#x27|#39);/g, (e) => ENTITIES[e]);

/** React nodes for highlight.js HTML output: nested `<span class>` elements and plain text. */
export function tokens(html: string): ReactNode[] {
  const root: ReactNode[] = [];
  const stack: { className: string; children: ReactNode[] }[] = [];
  let key = 0;
  const top = () => (stack.length ? stack[stack.length - 1].children : root);
  for (const m of html.matchAll(/<span class="([^"]*)">|<\/span>|[^<]+/g)) {
    if (m[1] !== undefined) stack.push({ className: m[1], children: [] });
    else if (m[0] === "</span>") {
      const done = stack.pop();
      if (done) top().push(<span key={key++} className={done.className}>{done.children}</span>);
    } else top().push(unescape(m[0]));
  }
  while (stack.length) {
    const open = stack.pop()!;
    top().push(<span key={key++} className={open.className}>{open.children}</span>);
  }
  return root;
}

/** A highlighted, copyable code block. `language` is a highlight.js name or alias ("python",
 * "py", "ts", "sh", "html"...); unknown or empty languages are shown as plain text. */
export const CodeBlock = memo(function CodeBlock({ code, language }: { code: string; language?: string }) {
  const [copied, setCopied] = useState<"" | "Copied" | "Copy failed">("");
  const lang = (language ?? "").trim().toLowerCase();
  let body: ReactNode[] | string = code;
  if (canHighlight(lang)) {
    try {
      body = tokens(hljs.highlight(code, { language: lang, ignoreIllegals: true }).value);
    } catch {
      body = code; // highlighting is cosmetic: fall back to plain text
    }
  }
  const copy = () => {
    const done = (r: "Copied" | "Copy failed") => {
      setCopied(r);
      window.setTimeout(() => setCopied(""), 1500);
    };
    if (!navigator.clipboard) return done("Copy failed");
    navigator.clipboard.writeText(code).then(() => done("Copied"), () => done("Copy failed"));
  };
  return (
    <div className="code-block">
      <div className="code-head">
        {lang && <span className="code-lang">{lang}</span>}
        <button type="button" className="code-copy" onClick={copy} title="Copy code to the clipboard">
          {copied || "Copy"}
        </button>
      </div>
      <pre className="code" data-lang={lang || undefined}>
        <code className={canHighlight(lang) ? `hljs language-${lang}` : undefined}>{body}</code>
      </pre>
    </div>
  );
});
