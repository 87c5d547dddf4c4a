/** The line under the header: while a run works, what it does now (the step, the command running
 * and for how long, the call being written, the sub-agents and their last tool) and how long a
 * model step takes here (the gateway's estimate from the recent steps of this model); once it
 * ended, how (done, not delivered with the check's findings, failed, stopped). */
import { useEffect, useRef, useState } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import type { StepEstimate } from "../api/rest";
import { draftHeadline, type Draft } from "../state/drafts";
import { useLang } from "../state/lang";
import { say, type Lang } from "../state/words";
import { doingNow, type Doing, type Outcome } from "../state/progress";
import type { TaskCard } from "../state/tasks";
import { formatElapsed } from "../state/tasks";

function seconds(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? `${s} s` : formatElapsed(s);
}

/** The estimate in words, in `lang`: "about N s per step here, estimated from the last K, P tokens/s". */
export function estimateText(estimate: StepEstimate | null | undefined, lang: Lang = "en"): string {
  if (!estimate || !estimate.samples || estimate.seconds == null) return say("run.no_estimate", lang);
  const rate = estimate.output_tokens_per_second ? Math.round(estimate.output_tokens_per_second * 10) / 10 : 0;
  const pace = rate ? say("run.pace", lang, { rate }) : "";
  const per = seconds(Math.max(estimate.seconds, 1) * 1000);
  return say("run.estimate", lang, { per, n: estimate.samples, pace });
}

/** The line while a run works, in `lang`: what it does now ("running bash ls · 4 s"). */
export function doingText(doing: Doing, elapsed: string, lang: Lang = "en"): string {
  if (doing.kind === "running") return say("run.running", lang, { what: doing.what, elapsed });
  if (doing.kind === "writing") return say("run.writing", lang, { what: doing.what });
  if (doing.kind === "subagents") return say("run.subagents", lang, { what: doing.what });
  return say("run.thinking", lang, { elapsed });
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
  const lang = useLang();
  const [now, setNow] = useState(Date.now());
  const since = useRef<{ key: string; at: number }>({ key: "", at: Date.now() });
  let doing = doingNow(messages, tasks, lang);
  if (draft && doing.kind === "thinking") {
    const chars = say("run.characters", lang, { n: draft.chars });
    doing = { ...doing, kind: "writing", what: `${draft.name ?? ""} ${draftHeadline(draft.text, 80)} · ${chars}`.trim() };
  }
  const key = `${doing.step}:${doing.kind}:${doing.callId ?? ""}`;
  if (since.current.key !== key) since.current = { key, at: Date.now() };
  useEffect(() => {
    if (!running) return;
    // a quarter second: the step's time is counted from its own start, not from the run's, so a
    // tick a second apart showed it up to a second late ("0 s" after more than a second)
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [running]);
  if (!running) {
    if (!outcome || outcome.status === "done") return null;
    return <div className={`run-outcome run-${outcome.status.replace(" ", "-")}`} role="status" data-testid="run-outcome" data-status={outcome.status}>{outcome.text}</div>;
  }
  const what = doingText(doing, seconds(now - since.current.at), lang);
  return (
    <div className="run-detail" role="status" data-testid="run-detail" data-kind={doing.kind}>
      <span data-testid="run-step">{say("run.step", lang, { n: doing.step })}</span>
      {" · "}
      <span data-testid="run-doing">{what}</span>
      {doing.kind === "thinking" && (
        <span className="run-estimate" data-testid="run-estimate">
          {" · "}
          {estimateText(estimate, lang)}
        </span>
      )}
    </div>
  );
}
