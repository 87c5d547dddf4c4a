/** One tool call, collapsible: its name, arguments and (when back) its result. */
import { memo } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { callHeadline, messageText, toolStatus } from "../state/messages";

const MAX_SHOWN = 20_000;

function clip(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters not shown)` : text;
}

/** `writing`: the model is still writing this call (its arguments stream in and grow here). */
export const ToolCall = memo(function ToolCall(props: { name: string; args: unknown; result?: Message; writing?: boolean }) {
  const { name, args, result, writing } = props;
  const { status, label } = writing && !result ? { status: "writing", label: "being written…" } : toolStatus(result);
  const headline = callHeadline(args);
  return (
    <details className={`tool-call tool-${status}`} data-testid="tool-call" data-status={status}>
      <summary>
        <span className="tool-name">{name}</span> <span className="tool-status" data-testid="tool-status">{label}</span>
        {headline && <code className="tool-headline" data-testid="tool-headline">{headline}</code>}
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

/** A reply of the model that is no answer, shown as a failed step, collapsed, with what the model
 * wrote inside (never rendered as the agent's message): a tool call written as text (`title`: the
 * tools it named), or a copy of the harness's own note. */
export const FailedStep = memo(function FailedStep(props: { title: string; label: string; text: string; testId: string }) {
  return (
    <details className="tool-call tool-error" data-testid={props.testId}>
      <summary>
        <span className="tool-name">{props.title}</span>{" "}
        <span className="tool-status" data-testid="tool-status">{props.label}</span>
      </summary>
      <div className="tool-label">What the model wrote</div>
      <pre>{clip(props.text)}</pre>
    </details>
  );
});
