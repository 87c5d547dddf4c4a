/** The trace panel: every model call and tool call of the thread, numbered and in order, grouped
 * by run. A step opens to show tokens (model calls), arguments and result (tool calls), the
 * command, exit code, stdout and stderr (bash) and the files it created or changed. Previous and
 * Next step through; the trace is loaded again when a run finishes (`refreshKey`). */
import { Fragment, useEffect, useRef, useState } from "react";
import { call, listFileVersions } from "../api/rest";
import { argsText, clip, failed, formatTokens, move, runLabel, stepTitle, type SubagentTrace, type Trace, type TraceStep } from "../state/trace";

interface Props {
  threadId: string | null;
  refreshKey: number;
  onClose: () => void;
  /** Show a file (by virtual path) in the files panel's preview. */
  onOpenFile?: (path: string) => void;
  onError: (message: string) => void;
  /** Put the files back as they were after a step (by the checkpoint that step wrote). */
  onRestore?: (checkpointId: string) => void;
  /** Run the thread again from the checkpoint after a step. */
  onRunFrom?: (checkpointId: string) => void;
  /** A run is going: the step actions wait. */
  busy?: boolean;
}

/** The actions of a step that has a checkpoint with its files: restore them, or run again from it. */
function StepActions({ checkpointId, busy, onRestore, onRunFrom }: {
  checkpointId: string; busy?: boolean; onRestore?: (id: string) => void; onRunFrom?: (id: string) => void;
}) {
  return (
    <div className="trace-actions">
      {onRestore && (
        <button onClick={() => onRestore(checkpointId)} disabled={busy} data-testid="trace-restore" title="Put the thread's files back as they were after this step">
          Restore files to this step
        </button>
      )}
      {onRunFrom && (
        <button onClick={() => onRunFrom(checkpointId)} disabled={busy} data-testid="trace-run-from" title="Run the agent again from this step, with its files">
          Run again from here
        </button>
      )}
    </div>
  );
}

/** An output cut to VIEW_CHARS characters, with a note saying how much is not shown. */
function Output({ text, testId }: { text: string; testId: string }) {
  const { text: shown, cut } = clip(text);
  return (
    <>
      <pre data-testid={testId}>{shown || "(empty)"}</pre>
      {cut > 0 && (
        <div className="trace-note" data-testid="trace-truncated">
          … {cut.toLocaleString()} more characters not shown
        </div>
      )}
    </>
  );
}

function Tokens({ step }: { step: TraceStep }) {
  if (!step.usage) return null;
  return (
    <div className="trace-tokens" data-testid="trace-tokens">
      tokens in <b>{formatTokens(step.usage.input_tokens)}</b> · out <b>{formatTokens(step.usage.output_tokens)}</b>
      {step.kind === "tool" && " (sub-agents)"}
    </div>
  );
}

/** A step's one-line head: number, kind, title and badges; it opens and closes the details. */
function StepHead({ step, expanded, onToggle }: { step: TraceStep; expanded: boolean; onToggle: () => void }) {
  return (
    <button className="trace-step-head" onClick={onToggle} aria-expanded={expanded}>
      <span className="trace-num">{step.index}</span>
      <span className="trace-kind">{step.kind === "tool" ? "tool" : step.kind === "model" ? "model" : "user"}</span>
      <span className="trace-title">{stepTitle(step)}</span>
      {step.usage && <span className="trace-badge">{formatTokens(step.usage.total_tokens)} tok</span>}
      {step.bash && <span className={`trace-badge ${step.bash.exit_code ? "nonzero" : ""}`}>exit {step.bash.exit_code}</span>}
    </button>
  );
}

/** One step of a sub-agent, opened on its own. */
function SubStep({ step, onOpenFile }: { step: TraceStep; onOpenFile?: (path: string) => void }) {
  const [open, setOpen] = useState(false);
  return (
    <li className={`trace-step trace-${step.kind} ${failed(step) ? "trace-failed" : ""}`} data-testid="trace-substep" data-kind={step.kind}>
      <StepHead step={step} expanded={open} onToggle={() => setOpen((o) => !o)} />
      {open && <StepDetails step={step} onOpenFile={onOpenFile} />}
    </li>
  );
}

/** What the sub-agents of a task or run_plan step did, step by step. */
function Subagents({ subagents, onOpenFile }: { subagents: SubagentTrace[]; onOpenFile?: (path: string) => void }) {
  return (
    <div data-testid="trace-subagents">
      {subagents.map((s) => (
        <div key={s.task_id} className="trace-subagent" data-testid="trace-subagent" data-status={s.status ?? ""}>
          <div className="trace-label">
            sub-agent {s.subagent_type ?? ""}{s.description ? ` · ${s.description}` : ""} · {s.status ?? "unknown"} · {s.steps.length} steps
          </div>
          {s.steps.length === 0 ? (
            <div className="trace-note">No transcript was kept for this sub-agent.</div>
          ) : (
            <ol className="trace-substeps">
              {s.steps.map((sub) => <SubStep key={sub.index} step={sub} onOpenFile={onOpenFile} />)}
            </ol>
          )}
        </div>
      ))}
    </div>
  );
}

function StepDetails({ step, onOpenFile }: { step: TraceStep; onOpenFile?: (path: string) => void }) {
  const bash = step.bash;
  return (
    <div className="trace-details" data-testid="trace-details">
      <Tokens step={step} />
      {step.kind === "model" && step.model && <div className="trace-label">model {step.model}</div>}
      {step.kind !== "tool" && step.text && <Output text={step.text} testId="trace-text" />}
      {step.kind === "model" && step.tool_calls.length > 0 && (
        <div data-testid="trace-requested">
          <div className="trace-label">asked for</div>
          {step.tool_calls.map((c, i) => (
            <Fragment key={c.id ?? i}>
              <span className="tool-name">{c.name}</span>
              <Output text={argsText(c.args)} testId="trace-requested-args" />
            </Fragment>
          ))}
        </div>
      )}
      {step.kind === "tool" && !bash && (
        <>
          <div className="trace-label">arguments</div>
          <Output text={argsText(step.args)} testId="trace-args" />
        </>
      )}
      {bash && (
        <div data-testid="trace-bash">
          <div className="trace-label">command</div>
          <Output text={bash.command} testId="trace-command" />
          <div className={`trace-exit ${bash.exit_code !== 0 || bash.timed_out ? "nonzero" : ""}`} data-testid="trace-exit-code">
            exit code {bash.exit_code}
            {bash.timed_out && " (timed out)"}
          </div>
          {bash.stdout != null && (
            <>
              <div className="trace-label">stdout</div>
              <Output text={bash.stdout} testId="trace-stdout" />
            </>
          )}
          {bash.stderr != null && (
            <>
              <div className="trace-label">stderr</div>
              <Output text={bash.stderr} testId="trace-stderr" />
            </>
          )}
          {bash.output != null && (
            <>
              <div className="trace-label">output (stdout and stderr together)</div>
              <Output text={bash.output} testId="trace-output" />
            </>
          )}
        </div>
      )}
      {step.kind === "tool" && !bash && (
        <>
          <div className="trace-label">result {step.status === "error" && <span className="trace-error">error</span>}</div>
          <Output text={step.text} testId="trace-result" />
        </>
      )}
      {step.files_changed.length > 0 && (
        <div data-testid="trace-files">
          <div className="trace-label">files</div>
          <ul className="trace-files">
            {step.files_changed.map((f) => (
              <li key={f.path} data-testid="trace-file">
                <span className={`trace-action trace-${f.action}`}>{f.action}</span>{" "}
                {onOpenFile && f.action !== "deleted" ? (
                  <button className="link" onClick={() => onOpenFile(f.path)} data-testid="trace-open-file" title="Preview it in the files panel">
                    <code>{f.path}</code>
                  </button>
                ) : (
                  <code>{f.path}</code>
                )}
              </li>
            ))}
          </ul>
          {step.files_changed_incomplete && <div className="trace-note">The list may be incomplete: many files changed.</div>}
        </div>
      )}
      {step.subagents && step.subagents.length > 0 && <Subagents subagents={step.subagents} onOpenFile={onOpenFile} />}
    </div>
  );
}

export function TraceView({ threadId, refreshKey, onClose, onError, onOpenFile, onRestore, onRunFrom, busy }: Props) {
  const [trace, setTrace] = useState<Trace | null>(null);
  // message id -> the newest checkpoint whose last message it is (the state right after that step)
  const [checkpoints, setCheckpoints] = useState<Map<string, string>>(new Map());
  const [loading, setLoading] = useState(false);
  const [current, setCurrent] = useState(0);
  const [open, setOpen] = useState<Set<number>>(new Set());
  const list = useRef<HTMLOListElement>(null);

  useEffect(() => {
    if (!threadId) {
      setTrace(null);
      return;
    }
    let live = true;
    setLoading(true);
    listFileVersions(threadId)
      .then((versions) => {
        const found = new Map<string, string>();
        for (const v of versions) if (v.kept && v.message_id && !found.has(v.message_id)) found.set(v.message_id, v.checkpoint_id);
        if (live) setCheckpoints(found);
      })
      .catch(() => live && setCheckpoints(new Map()));
    call<Trace>(`/api/threads/${threadId}/trace`)
      .then((t) => live && setTrace(t))
      .catch((e) => live && onError(`Could not load the trace: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [threadId, refreshKey, onError]);

  const steps = trace?.steps ?? [];
  // Previous/Next open only the step they land on and scroll it to the top of the list.
  const scrollTo = useRef<number | null>(null);
  const go = (delta: number) => {
    const next = move(current, delta, steps.length);
    setCurrent(next);
    setOpen(new Set([next]));
    scrollTo.current = next;
  };
  useEffect(() => {
    if (scrollTo.current == null) return;
    list.current?.querySelectorAll("[data-testid=trace-step]")[scrollTo.current]?.scrollIntoView({ block: "start" });
    scrollTo.current = null;
  }, [current, open]);
  const toggle = (i: number) => {
    setCurrent(i);
    setOpen((o) => {
      const copy = new Set(o);
      if (!copy.delete(i)) copy.add(i);
      return copy;
    });
  };

  return (
    <section className="trace" data-testid="trace-panel" aria-label="Trace">
      <div className="trace-head">
        <b>Trace</b>
        {trace && (
          <span className="trace-summary" data-testid="trace-total-tokens">
            {steps.length} steps · tokens in {formatTokens(trace.usage.input_tokens)} · out {formatTokens(trace.usage.output_tokens)}
          </span>
        )}
        <span className="trace-nav">
          <button onClick={() => go(-1)} disabled={current <= 0 || !steps.length} data-testid="trace-prev">
            ← Previous
          </button>
          <span data-testid="trace-position">{steps.length ? `${current + 1} / ${steps.length}` : "0 / 0"}</span>
          <button onClick={() => go(1)} disabled={current >= steps.length - 1} data-testid="trace-next">
            Next →
          </button>
          <button onClick={onClose} aria-label="Close the trace" data-testid="trace-close">
            ✕
          </button>
        </span>
      </div>
      {!threadId && <div className="empty">Send a message to start a thread; its trace shows here.</div>}
      {threadId && loading && !trace && <div className="empty">Loading the trace…</div>}
      {trace && !steps.length && <div className="empty">No steps yet.</div>}
      <ol className="trace-steps" ref={list}>
        {steps.map((step, i) => {
          const run = trace?.runs.find((r) => r.first_step === step.index);
          return (
            <Fragment key={step.index}>
              {run && trace && trace.runs.length > 0 && (
                <li className="trace-run" data-testid="trace-run">
                  {runLabel(trace, run)} · {run.model_calls} model calls · {run.tool_calls} tool calls · tokens{" "}
                  {formatTokens(run.usage.input_tokens)} in / {formatTokens(run.usage.output_tokens)} out
                </li>
              )}
              <li
                className={`trace-step trace-${step.kind} ${failed(step) ? "trace-failed" : ""} ${i === current ? "current" : ""}`}
                data-testid="trace-step"
                data-kind={step.kind}
              >
                <StepHead step={step} expanded={open.has(i)} onToggle={() => toggle(i)} />
                {open.has(i) && <StepDetails step={step} onOpenFile={onOpenFile} />}
                {open.has(i) && step.message_id && checkpoints.has(step.message_id) && (
                  <StepActions checkpointId={checkpoints.get(step.message_id)!} busy={busy} onRestore={onRestore} onRunFrom={onRunFrom} />
                )}
              </li>
            </Fragment>
          );
        })}
      </ol>
    </section>
  );
}
