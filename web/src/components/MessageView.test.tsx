import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Message } from "@langchain/langgraph-sdk";
import { LangContext } from "../state/lang";
import { MessageView, type MessageActions } from "./MessageView";

const actions: MessageActions = { edit: () => {}, regenerate: () => {} };

function html(message: Message): string {
  return renderToStaticMarkup(
    <MessageView message={message} index={1} regenerateFrom={null} busy={false} results={new Map()} actions={actions} />,
  );
}

describe("a tool call the model wrote as text", () => {
  const raw = '<tool_call>\n{"name": "write_file", "arguments": {"path": "t.py", "content": "assert p(\'a\')"}}\n</tool_call>';

  it("is a failed step, collapsed, not the agent's message", () => {
    const out = html({ type: "ai", content: raw, additional_kwargs: { herdsman_call_as_text: ["write_file"] } } as unknown as Message);
    expect(out).not.toContain('data-testid="message-agent"');
    expect(out).toMatch(/<details class="tool-call tool-error" data-testid="text-call"><summary><span class="tool-name">write_file<\/span>/);
    expect(out).toContain("failed · written as text, not run");
    expect(out).not.toContain("<details open");
  });

  it("is a failed step too in a thread from before the harness marked it (read from the text)", () => {
    const out = html({ type: "ai", content: `Here is the test:\n${raw}` } as unknown as Message);
    expect(out).toContain('data-testid="text-call"');
    expect(out).not.toContain('data-testid="message-agent"');
  });

  it("is said in the thread's language", () => {
    const message = { type: "ai", content: raw, additional_kwargs: { herdsman_call_as_text: ["write_file"] } } as unknown as Message;
    const out = renderToStaticMarkup(
      <LangContext.Provider value="zh">
        <MessageView message={message} index={1} regenerateFrom={null} busy={false} results={new Map()} actions={actions} />
      </LangContext.Provider>,
    );
    expect(out).toContain("失败 · 写成了文字，没有执行");
    expect(out).not.toContain("written as text");
  });

  it("leaves a plain answer as the agent's message", () => {
    const out = html({ type: "ai", content: 'The totals are {"north": 2.5}.' } as unknown as Message);
    expect(out).toContain('data-testid="message-agent"');
    expect(out).not.toContain("text-call");
  });
});

describe("a reply that copied the harness's note", () => {
  it("is a failed step, not the agent's message", () => {
    const note = "The request is about 'NOTE', but none of your tool calls looked for it.";
    const out = html({ type: "ai", content: note, additional_kwargs: { herdsman_echoes_note: true } } as unknown as Message);
    expect(out).not.toContain('data-testid="message-agent"');
    expect(out).toContain('data-testid="note-echo"');
    expect(out).toContain("failed · repeated the harness&#x27;s note");
  });
});
