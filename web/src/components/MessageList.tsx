/** The conversation, kept scrolled to the newest message while the user is at the bottom. */
import { Fragment, useLayoutEffect, useMemo, useRef } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { foldChecks } from "../state/checks";
import { isHarnessNote, toolResults } from "../state/messages";
import { placeCards, type Tasks } from "../state/tasks";
import { CheckFold } from "./CheckFold";
import { MessageView, type MessageActions } from "./MessageView";
import { SubagentCards } from "./SubagentCards";

export function MessageList(props: {
  messages: Message[];
  busy: boolean;
  actions: MessageActions;
  /** Sub-agent cards, shown with the turn that started them. */
  tasks?: Tasks;
  /** Stop one running sub-agent (by its task id). */
  onStopTask?: (id: string) => void;
  /** The thread state's `completion_unresolved`: what the completion check still found when the latest run ended. */
  unresolved?: unknown;
  children?: React.ReactNode;
}) {
  const { messages, busy, actions } = props;
  const results = useMemo(() => toolResults(messages), [messages]);
  const cards = useMemo(() => placeCards(messages as never, props.tasks ?? {}), [messages, props.tasks]);
  // The harness's notes (and the replies they sent back) folded into one line per turn.
  const checks = useMemo(() => foldChecks(messages, { unresolved: props.unresolved, busy }), [messages, props.unresolved, busy]);
  // The agent's last text answer can be regenerated from the human message before it.
  const [lastAnswer, lastHuman] = useMemo(() => {
    let human = -1;
    for (let i = messages.length - 1; i >= 0; i--) if (messages[i].type === "human" && !isHarnessNote(messages[i])) { human = i; break; }
    let answer = -1;
    for (let i = messages.length - 1; i > human; i--) if (messages[i].type === "ai" && !checks.hidden.has(i)) { answer = i; break; }
    return [answer, human];
  }, [messages, checks]);
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
      {messages.map((m, i) => (
        <Fragment key={m.id ?? i}>
          {!checks.hidden.has(i) && (
            <MessageView
              message={m}
              index={i}
              busy={busy}
              regenerateFrom={i === lastAnswer && lastHuman >= 0 ? lastHuman : null}
              results={results}
              actions={actions}
            />
          )}
          {cards.byMessage.has(i) && <SubagentCards tasks={Object.fromEntries(cards.byMessage.get(i)!.map((c) => [c.id, c]))} onStop={props.onStopTask} />}
          {checks.byAnchor.has(i) && <CheckFold fold={checks.byAnchor.get(i)!} />}
        </Fragment>
      ))}
      {cards.rest.length > 0 && <SubagentCards tasks={Object.fromEntries(cards.rest.map((c) => [c.id, c]))} onStop={props.onStopTask} />}
      {props.children}
    </div>
  );
}
