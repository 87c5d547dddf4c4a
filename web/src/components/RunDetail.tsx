/** The line under the header: while a run works, what it does now (the step, the command running
 * and for how long, the call being written, the sub-agents and their last tool) and how long a
 * model step takes here (the gateway's estimate from the recent steps of this model); once it
 * ended, how (done, not delivered with the check's findings, failed, stopped). */
import { useEffect, useRef, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import type { StepEstimate } from "../api/rest";
import { draftHeadline, type Draft } from "../state/drafts";
import { doingNow, type Outcome } from "../state/progress";
import type { TaskCard } from "../state/tasks";
import { formatElapsed } from "../state/tasks";

function seconds(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : formatElapsed(s);
}

/** The estimate in words: "about N s per step here, estimated from the last K (P tokens/s)". */
export function estimateText(estimate: StepEstimate | null | undefined): string {
  if (!estimate || !estimate.samples || estimate.seconds == null) return "no model step measured yet on this machine";
  const pace = estimate.output_tokens_per_second ? `, ${Math.round(estimate.output_tokens_per_second * 10) / 10} tokens/s` : "";
  const per = seconds(Math.max(estimate.seconds, 1) * 1000);
  return `about ${per} per step here, estimated from the last ${estimate.samples}${pace}`;
}

export function RunDetail(props: {
  running: boolean;
  messages: Message[];
  tasks: Record<string, TaskCard>;
  outcome: Outcome | null;
  /** The call the model is writing, sent as drafts (a model that sends its calls whole at the end). */
  draft?: Draft | null;
  /** How long a model step takes here (the gateway's, from the recent steps of this model). */
  estimate?: StepEstimate | null;
}) {
  const { running, messages, tasks, outcome, draft, estimate } = props;
  const [now, setNow] = useState(Date.now());
  const since = useRef<{ key: string; at: number }>({ key: "", at: Date.now() });
  let doing = doingNow(messages, tasks);
  if (draft && doing.kind === "thinking") {
    doing = { ...doing, kind: "writing", what: `${draft.name ?? ""} ${draftHeadline(draft.text, 80)} · ${draft.chars} characters`.trim() };
  }
  const key = `${doing.step}:${doing.kind}:${doing.callId ?? ""}`;
  if (since.current.key !== key) since.current = { key, at: Date.now() };
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
          {estimateText(estimate)}
        </span>
      )}
    </div>
  );
}
