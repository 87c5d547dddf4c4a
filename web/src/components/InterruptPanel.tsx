/** A paused run: a clarifying question (choices or free text) or tool calls awaiting approval. */
import { useState } from "react";

interface ActionRequest {
  name: string;
  args?: Record<string, unknown>;
  arguments?: Record<string, unknown>;
  description?: string;
}

export type Resume = (value: unknown) => void;

function Clarification({ value, onResume }: { value: { question: string; choices?: string[] }; onResume: Resume }) {
  const [text, setText] = useState("");
  return (
    <div className="interrupt" data-testid="interrupt">
      <div className="interrupt-title">The agent asks</div>
      <div className="interrupt-question">{value.question}</div>
      <div className="interrupt-choices">
        {(value.choices ?? []).map((c) => (
          <button key={c} onClick={() => onResume(c)} data-testid="choice">
            {c}
          </button>
        ))}
      </div>
      <form onSubmit={(e) => { e.preventDefault(); if (text.trim()) onResume(text.trim()); }}>
        <input value={text} onChange={(e) => setText(e.target.value)} placeholder="Or type an answer" data-testid="interrupt-answer" />
        <button type="submit">Answer</button>
      </form>
    </div>
  );
}

function Approval({ requests, onResume }: { requests: ActionRequest[]; onResume: Resume }) {
  const [edits, setEdits] = useState<Record<number, string>>({});
  const [error, setError] = useState("");
  const decide = (kind: "approve" | "reject" | "edit") => {
    setError("");
    try {
      const decisions = requests.map((r, i) => {
        if (kind !== "edit" || edits[i] == null) return kind === "edit" ? { type: "approve" } : { type: kind };
        return { type: "edit", edited_action: { name: r.name, args: JSON.parse(edits[i]) } };
      });
      onResume({ decisions });
    } catch (e) {
      setError(`The edited arguments are not valid JSON: ${(e as Error).message}`);
    }
  };
  return (
    <div className="interrupt" data-testid="interrupt">
      <div className="interrupt-title">Approve {requests.length === 1 ? "this tool call" : "these tool calls"}?</div>
      {requests.map((r, i) => (
        <div key={i} className="approval">
          <div className="tool-name">{r.name}</div>
          {r.description && <div className="approval-desc">{r.description}</div>}
          <textarea
            rows={4}
            defaultValue={JSON.stringify(r.args ?? r.arguments ?? {}, null, 2)}
            onChange={(e) => setEdits({ ...edits, [i]: e.target.value })}
          />
        </div>
      ))}
      {error && <div className="error">{error}</div>}
      <div className="interrupt-choices">
        <button onClick={() => decide("approve")} data-testid="approve">Approve</button>
        <button onClick={() => decide("edit")} data-testid="edit">Approve with edits</button>
        <button onClick={() => decide("reject")} data-testid="reject">Reject</button>
      </div>
    </div>
  );
}

/** Whether an interrupt's value asks something: a stopped run leaves an empty one (no question,
 * no tool calls), which must not show as an empty "The agent asks" box. */
export function asksSomething(value: unknown): boolean {
  if (value == null) return false;
  if (typeof value === "string") return value.trim() !== "";
  if (typeof value === "object") return Object.keys(value as object).length > 0;
  return true;
}

export function InterruptPanel({ value, onResume }: { value: unknown; onResume: Resume }) {
  if (!asksSomething(value)) return null;
  const v = value as Record<string, unknown> | null;
  if (v && typeof v === "object" && Array.isArray(v.action_requests)) {
    return <Approval requests={v.action_requests as ActionRequest[]} onResume={onResume} />;
  }
  if (v && typeof v === "object" && typeof v.question === "string") {
    return <Clarification value={v as { question: string; choices?: string[] }} onResume={onResume} />;
  }
  return <Clarification value={{ question: typeof value === "string" ? value : JSON.stringify(value) }} onResume={onResume} />;
}
