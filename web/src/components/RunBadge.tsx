/** The header's sign of life while a run goes on: what the agent is doing and for how long. */
import { useEffect, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { useLang } from "../state/lang";
import { say } from "../state/words";
import { activity } from "../state/messages";
import { formatElapsed } from "../state/tasks";

/** `writing`: the tool the model is writing a call to, from its drafts ("" before its name is written). */
export function RunBadge(props: { running: boolean; messages: Message[]; writing?: string | null }) {
  const [started, setStarted] = useState<number | null>(null);
  const [now, setNow] = useState(Date.now());
  const lang = useLang();
  useEffect(() => {
    if (!props.running) {
      setStarted(null);
      return;
    }
    setStarted(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [props.running]);
  if (!props.running) return null;
  const seconds = started == null ? 0 : Math.max(0, Math.floor((now - started) / 1000));
  return (
    <span className="running" data-testid="running" title="The agent is working">
      {props.writing != null ? say("badge.writing", lang, { tool: props.writing || say("badge.a_call", lang) }) : activity(props.messages, lang)} · {seconds < 60 ? `${seconds} s` : formatElapsed(seconds)}
    </span>
  );
}
