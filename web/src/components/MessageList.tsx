/** The conversation, kept scrolled to the newest message while the user is at the bottom. */
import { useLayoutEffect, useMemo, useRef } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { isHarnessNote, toolResults } from "../state/messages";
import { MessageView, type MessageActions } from "./MessageView";

export function MessageList(props: { messages: Message[]; busy: boolean; actions: MessageActions; children?: React.ReactNode }) {
  const { messages, busy, actions } = props;
  const results = useMemo(() => toolResults(messages), [messages]);
  // The agent's last text answer can be regenerated from the human message before it.
  const [lastAnswer, lastHuman] = useMemo(() => {
    let human = -1;
    for (let i = messages.length - 1; i >= 0; i--) if (messages[i].type === "human" && !isHarnessNote(messages[i])) { human = i; break; }
    let answer = -1;
    for (let i = messages.length - 1; i > human; i--) if (messages[i].type === "ai") { answer = i; break; }
    return [answer, human];
  }, [messages]);
  const box = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useLayoutEffect(() => {
    if (pinned.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  });
  return (
    <div
      className="messages"
      ref={box}
      data-testid="messages"
      onScroll={(e) => {
        const el = e.currentTarget;
        pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      }}
    >
      {messages.length === 0 && <div className="empty">Ask Herdsman something to start.</div>}
      {messages.map((m, i) => (
        <MessageView
          key={m.id ?? i}
          message={m}
          index={i}
          busy={busy}
          regenerateFrom={i === lastAnswer && lastHuman >= 0 ? lastHuman : null}
          results={results}
          actions={actions}
        />
      ))}
      {props.children}
    </div>
  );
}
