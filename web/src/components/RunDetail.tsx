/** The line under the header: while a run works, what it does now (the step, the command running
 * and for how long, the call being written, the sub-agents and their last tool) and how long a
 * model step takes here (an estimate measured in this page); once it ended, how (done, not
 * delivered with the check's findings, failed, stopped). */
import { useEffect, useRef, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { draftHeadline, type Draft } from "../state/drafts";
import { doingNow, typicalStep, type Outcome } from "../state/progress";
import type { TaskCard } from "../state/tasks";
import { formatElapsed } from "../state/tasks";

/** Model step durations measured in this page (seconds), kept across runs and threads: the machine's pace. */
const stepDurations: number[] = [];

function seconds(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : formatElapsed(s);
}

export function RunDetail(props: {
  running: boolean;
  messages: Message[];
  tasks: Record<string, TaskCard>;
  outcome: Outcome | null;
  /** The call the model is writing, sent as drafts (a model that sends its calls whole at the end). */
  draft?: Draft | null;
}) {
  const { running, messages, tasks, outcome, draft } = props;
  const [now, setNow] = useState(Date.now());
  const since = useRef<{ key: string; at: number }>({ key: "", at: Date.now() });
  const thinking = useRef<number | null>(null);
  let doing = doingNow(messages, tasks);
  if (draft && doing.kind === "thinking") {
    doing = { ...doing, kind: "writing", what: `${draft.name ?? ""} ${draftHeadline(draft.text, 80)} · ${draft.chars} characters`.trim() };
  }
  const key = `${doing.step}:${doing.kind}:${doing.callId ?? ""}`;
  if (since.current.key !== key) since.current = { key, at: Date.now() };
  // A model step is measured from when the agent starts thinking to when it has written its reply.
  useEffect(() => {
    if (running && doing.kind === "thinking") {
      thinking.current ??= Date.now();
    } else if (thinking.current != null) {
      stepDurations.push((Date.now() - thinking.current) / 1000);
      thinking.current = null;
    }
  }, [running, doing.kind, key]);
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [running]);
  if (!running) {
    if (!outcome || outcome.status === "done") return null;
    return <div className={`run-outcome run-${outcome.status.replace(" ", "-")}`} role="status" data-testid="run-outcome" data-status={outcome.status}>{outcome.text}</div>;
  }
  const elapsed = seconds(now - since.current.at);
  const typical = typicalStep(stepDurations);
  let what: string;
  if (doing.kind === "running") what = `running ${doing.what} · ${elapsed}`;
  else if (doing.kind === "writing") what = `writing the call ${doing.what}`;
  else if (doing.kind === "subagents") what = `sub-agents working: ${doing.what}`;
  else what = `the model is thinking · ${elapsed}`;
  return (
    <div className="run-detail" role="status" data-testid="run-detail" data-kind={doing.kind}>
      <span data-testid="run-step">step {doing.step}</span>
      {" · "}
      <span data-testid="run-doing">{what}</span>
      {doing.kind === "thinking" && (
        <span className="run-estimate" data-testid="run-estimate">
          {" · "}
          {typical == null
            ? "no model step measured yet on this machine"
            : `a model step takes about ${seconds(typical * 1000)} here (an estimate from the last ${Math.min(stepDurations.length, 8)})`}
        </span>
      )}
    </div>
  );
}
