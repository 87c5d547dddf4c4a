/** A small Markdown renderer to React elements (never innerHTML): headings, paragraphs, lists,
 * fenced code (highlighted, with a copy button: see CodeBlock), block quotes, inline code, bold,
 * italic and links.
 * Written here to keep the bundle small; it covers what agents write, not all of CommonMark. */
import { memo, type ReactNode } from "react";
import { CodeBlock } from "./CodeBlock";

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\((?:https?:\/\/|\/|#)[^)\s]*\))/g;

export function inline(text: string, key = ""): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  let i = 0;
  for (const m of text.matchAll(INLINE)) {
    const at = m.index ?? 0;
    if (at > last) out.push(text.slice(last, at));
    const tok = m[0];
    const k = `${key}-${i++}`;
    if (m[1]) out.push(<code key={k}>{tok.slice(1, -1)}</code>);
    else if (m[2]) out.push(<strong key={k}>{inline(tok.slice(2, -2), k)}</strong>);
    else if (m[3]) out.push(<em key={k}>{inline(tok.slice(1, -1), k)}</em>);
    else {
      const close = tok.indexOf("](");
      out.push(
        <a key={k} href={tok.slice(close + 2, -1)} target="_blank" rel="noreferrer noopener">
          {tok.slice(1, close)}
        </a>,
      );
    }
    last = at + tok.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export type Block =
  | { kind: "code"; lang: string; text: string }
  | { kind: "heading"; level: number; text: string }
  | { kind: "list"; ordered: boolean; items: string[]; start?: number }
  | { kind: "quote"; text: string }
  | { kind: "para"; text: string };

/** The blocks of a Markdown text. */
export function parseBlocks(source: string): Block[] {
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)/);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
      i++;
      blocks.push({ kind: "code", lang: fence[1], text: body.join("\n") });
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      blocks.push({ kind: "heading", level: heading[1].length, text: heading[2] });
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      // Indented lines after an item continue it.
      while (i < lines.length && (item.test(lines[i]) || /^\s+\S/.test(lines[i]))) {
        if (item.test(lines[i])) items.push(lines[i++].replace(item, ""));
        else items[items.length - 1] += " " + lines[i++].trim();
      }
      const start = ordered ? parseInt(line.trim(), 10) : 1;
      blocks.push(start === 1 ? { kind: "list", ordered, items } : { kind: "list", ordered, items, start });
      continue;
    }
    if (line.startsWith(">")) {
      const body: string[] = [];
      while (i < lines.length && lines[i].startsWith(">")) body.push(lines[i++].replace(/^>\s?/, ""));
      blocks.push({ kind: "quote", text: body.join("\n") });
      continue;
    }
    if (!line.trim()) {
      i++;
      continue;
    }
    const body: string[] = [];
    while (i < lines.length && lines[i].trim() && !/^(```|#{1,6}\s|>|\s*([-*+]|\d+[.)])\s)/.test(lines[i])) body.push(lines[i++]);
    blocks.push({ kind: "para", text: body.join("\n") });
  }
  return blocks;
}

function render(block: Block, key: number): ReactNode {
  switch (block.kind) {
    case "code":
      return (
        <CodeBlock key={key} code={block.text} language={block.lang} />
      );
    case "heading": {
      const Tag = `h${Math.min(6, block.level + 2)}` as "h3";
      return <Tag key={key}>{inline(block.text, String(key))}</Tag>;
    }
    case "list": {
      const Tag = block.ordered ? "ol" : "ul";
      return <Tag key={key} start={block.start}>{block.items.map((t, j) => <li key={j}>{inline(t, `${key}.${j}`)}</li>)}</Tag>;
    }
    case "quote":
      return <blockquote key={key}>{inline(block.text, String(key))}</blockquote>;
    default:
      return <p key={key}>{inline(block.text, String(key))}</p>;
  }
}

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return <div className="markdown">{parseBlocks(text).map(render)}</div>;
});
