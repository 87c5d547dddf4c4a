/** One tool call, collapsible: its name, arguments and (when back) its result. */
import { memo } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { messageText, toolStatus } from "../state/messages";

const MAX_SHOWN = 20_000;

function clip(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters not shown)` : text;
}

export const ToolCall = memo(function ToolCall(props: { name: string; args: unknown; result?: Message }) {
  const { name, args, result } = props;
  const { status, label } = toolStatus(result);
  return (
    <details className={`tool-call tool-${status}`} data-testid="tool-call">
      <summary>
        <span className="tool-name">{name}</span> <span className="tool-status" data-testid="tool-status">{label}</span>
      </summary>
      <div className="tool-label">Arguments</div>
      <pre>{clip(JSON.stringify(args, null, 2))}</pre>
      {result && (
        <>
          <div className="tool-label">Result</div>
          <pre>{clip(messageText(result))}</pre>
        </>
      )}
    </details>
  );
});

/** A tool call the model wrote as text instead of making it: shown as a failed step, collapsed,
 * with what the model wrote inside (never rendered as the agent's message). */
export const TextCallStep = memo(function TextCallStep(props: { names: string[]; text: string }) {
  const shown = props.names.filter((n) => n !== "?").join(", ") || "tool call";
  return (
    <details className="tool-call tool-error" data-testid="text-call">
      <summary>
        <span className="tool-name">{shown}</span>{" "}
        <span className="tool-status" data-testid="tool-status">failed · written as text, not run</span>
      </summary>
      <div className="tool-label">What the model wrote</div>
      <pre>{clip(props.text)}</pre>
    </details>
  );
});
