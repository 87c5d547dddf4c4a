/** One chat message: the user's (editable), or the agent's Markdown with its tool calls. Tool messages show inside their call. */
import { memo, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { echoesNote, isHarnessNote, messageText, textCallNames, writingCalls } from "../state/messages";
import { useLang } from "../state/lang";
import { say } from "../state/words";
import { Markdown } from "./Markdown";
import { FailedStep, ToolCall } from "./ToolCall";

export interface MessageActions {
  /** Send `text` in place of the human message at `index` (a new branch from the checkpoint before it). */
  edit: (index: number, text: string) => void;
  /** Answer again the human message at `index`. */
  regenerate: (index: number) => void;
}

interface Props {
  message: Message;
  index: number;
  /** For the agent's last answer: the index of the human message it answers (shows Regenerate). */
  regenerateFrom: number | null;
  busy: boolean;
  results: Map<string, Message>;
  actions: MessageActions;
}

function resultKey(r: Message | undefined): string {
  return r ? `${r.id}:${(r as { status?: string }).status}:${messageText(r).length}` : "";
}

/** Re-render only when this message or the results of its own tool calls changed (values events bring new objects). */
function same(a: Props, b: Props): boolean {
  if (a.index !== b.index || a.regenerateFrom !== b.regenerateFrom || a.busy !== b.busy || a.actions !== b.actions) return false;
  const m = a.message;
  const n = b.message;
  if (m !== n && (m.id !== n.id || m.type !== n.type || messageText(m) !== messageText(n) || writingCalls(m) !== writingCalls(n))) return false;
  const ca = m.type === "ai" ? m.tool_calls ?? [] : [];
  const cb = n.type === "ai" ? n.tool_calls ?? [] : [];
  if (ca.length !== cb.length) return false;
  return cb.every(
    (c, i) =>
      c.id === ca[i].id &&
      (!c.id || resultKey(a.results.get(c.id)) === resultKey(b.results.get(c.id))) &&
      JSON.stringify(c.args) === JSON.stringify(ca[i].args),
  );
}

function Editor({ text, onSave, onCancel }: { text: string; onSave: (t: string) => void; onCancel: () => void }) {
  const [value, setValue] = useState(text);
  return (
    <form className="edit" onSubmit={(e) => { e.preventDefault(); if (value.trim()) onSave(value.trim()); }}>
      <textarea value={value} onChange={(e) => setValue(e.target.value)} data-testid="edit-input" />
      <div className="message-actions">
        <button type="submit" data-testid="edit-save">Send</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

export const MessageView = memo(function MessageView(props: Props) {
  const { message, results, index, actions, busy, regenerateFrom } = props;
  const [editing, setEditing] = useState(false);
  const lang = useLang();
  if (message.type === "tool" || message.type === "system") return null;
  const text = messageText(message);
  const calls = message.type === "ai" ? message.tool_calls ?? [] : [];
  const role = message.type === "human" ? "user" : "agent";
  if (!text && calls.length === 0) return null;
  if (isHarnessNote(message)) return null; // the harness's notes are folded (MessageList, CheckFold)
  if (editing) {
    return (
      <div className="message message-user editing">
        <Editor text={text} onCancel={() => setEditing(false)} onSave={(t) => { setEditing(false); actions.edit(index, t); }} />
      </div>
    );
  }
  // a tool call the model wrote as text, or a copy of the harness's note: a failed step (what the
  // model wrote inside, collapsed), never the agent's words
  const written = textCallNames(message);
  if (written || echoesNote(message)) {
    const title = written ? written.filter((n) => n !== "?").join(", ") || say("step.tool_call", lang) : say("step.reply", lang);
    const label = say(written ? "step.text_call" : "step.note_echo", lang);
    return (
      <div className="message message-step" data-testid="message-step">
        <FailedStep title={title} label={label} text={text} testId={written ? "text-call" : "note-echo"} />
        {calls.map((call, i) => (
          <ToolCall key={call.id ?? i} name={call.name} args={call.args} result={call.id ? results.get(call.id) : undefined} />
        ))}
      </div>
    );
  }
  return (
    <div className={`message message-${role}`} data-testid={`message-${role}`}>
      {text && <div className="message-text">{role === "agent" ? <Markdown text={text} /> : text}</div>}
      {calls.map((call, i) => (
        <ToolCall key={call.id ?? i} name={call.name} args={call.args} result={call.id ? results.get(call.id) : undefined}
          writing={writingCalls(message)} />
      ))}
      {!busy && role === "user" && (
        <div className="message-actions">
          <button onClick={() => setEditing(true)} data-testid="edit">Edit</button>
        </div>
      )}
      {!busy && regenerateFrom != null && (
        <div className="message-actions">
          <button onClick={() => actions.regenerate(regenerateFrom)} data-testid="regenerate">Regenerate</button>
        </div>
      )}
    </div>
  );
}, same);
