/** The Memory tab: the facts and the graph the agent keeps about you, to read, edit and delete;
 * your off switch (or, when the gateway has memory off, how to turn it on); where each write came from (the audit trail); export and delete everything. */
import { useState } from "react";
import { downloadFile } from "../../api/rest";
import {
  CATEGORIES, deleteFact, editFact, getMemoryGraph, getMemoryOrOff, purgeMemory, setMemoryEnabled, type Fact, type MemoryView,
} from "../../api/settings";
import { MemoryAudit } from "./MemoryAudit";
import { MemoryGraphList } from "./MemoryGraph";
import { errorText, PanelError, useAction, useLoad } from "./useLoad";

type Mode = "view" | "edit" | "confirm";

function FactRow({ fact, onChanged, onError }: { fact: Fact; onChanged: () => Promise<void>; onError: (e: string) => void }) {
  const [mode, setMode] = useState<Mode>("view");
  const [content, setContent] = useState(fact.content);
  const [category, setCategory] = useState(fact.category);
  const { busy, run } = useAction(onError);

  const act = (what: () => Promise<unknown>) => run(async () => {
    await what();
    setMode("view");
    await onChanged();
  });

  const save = () => {
    const text = content.trim();
    if (text.length < 3) return onError("A fact needs at least 3 characters; write the fact or delete it instead.");
    const change: { content?: string; category?: string } = {};
    if (text !== fact.content) change.content = text;
    if (category !== fact.category) change.category = category;
    if (!change.content && !change.category) return setMode("view");
    void act(() => editFact(fact.id, change));
  };

  if (mode === "edit") {
    return (
      <li className="fact editing" data-testid="fact" data-fact-id={fact.id}>
        <textarea value={content} onChange={(e) => setContent(e.target.value)} rows={2} data-testid="fact-input" aria-label="Fact" />
        <div className="fact-actions">
          <select value={category} onChange={(e) => setCategory(e.target.value)} aria-label="Category" data-testid="fact-category">
            {CATEGORIES.map((c) => <option key={c} value={c}>{c}</option>)}
          </select>
          <button type="button" onClick={save} disabled={busy} data-testid="fact-save">Save</button>
          <button type="button" onClick={() => { setContent(fact.content); setCategory(fact.category); setMode("view"); }} disabled={busy}>Cancel</button>
        </div>
      </li>
    );
  }
  return (
    <li className="fact" data-testid="fact" data-fact-id={fact.id}>
      <span className="badge">{fact.category}</span>
      <span className="fact-text">{fact.content}</span>
      <span className="fact-meta" title="confidence">{Math.round(fact.confidence * 100)}%</span>
      <div className="fact-actions">
        {mode === "confirm" ? (
          <>
            <span>Delete this fact?</span>
            <button type="button" className="danger" onClick={() => void act(() => deleteFact(fact.id))} disabled={busy} data-testid="fact-delete-confirm">Delete</button>
            <button type="button" onClick={() => setMode("view")} disabled={busy}>Keep</button>
          </>
        ) : (
          <>
            <button type="button" onClick={() => setMode("edit")} data-testid="fact-edit">Edit</button>
            <button type="button" onClick={() => setMode("confirm")} data-testid="fact-delete">Delete</button>
          </>
        )}
      </div>
    </li>
  );
}

/** The off switch and "delete everything", each acting on the caller's memory only. */
function MemoryControls({ enabled, onChanged, onError }: { enabled: boolean; onChanged: () => Promise<void>; onError: (e: string) => void }) {
  const { busy, run } = useAction(onError);
  const [confirm, setConfirm] = useState(false);
  return (
    <div className="settings-actions memory-controls">
      <label>
        <input type="checkbox" checked={enabled} disabled={busy} data-testid="memory-enabled"
          onChange={(e) => void run(async () => { await setMemoryEnabled(e.target.checked); await onChanged(); })} />
        {" "}Remember things about me
      </label>
      {confirm ? (
        <>
          <span>Delete all your memory (facts, graph, history)?</span>
          <button type="button" className="danger" disabled={busy} data-testid="memory-purge-confirm"
            onClick={() => void run(async () => { await purgeMemory(); setConfirm(false); await onChanged(); })}>Delete all</button>
          <button type="button" onClick={() => setConfirm(false)} disabled={busy}>Keep</button>
        </>
      ) : (
        <button type="button" className="danger" onClick={() => setConfirm(true)} data-testid="memory-purge">Delete all my memory</button>
      )}
    </div>
  );
}

/** Memory off for the whole gateway (the default): an off switch that says how to turn it on, not an error. */
function MemoryOffPanel({ detail, onCheck, checking }: { detail: string; onCheck: () => void; checking: boolean }) {
  return (
    <div className="memory-off" data-testid="memory-off">
      <label className="memory-switch">
        <input type="checkbox" checked={false} disabled data-testid="memory-enabled" aria-describedby="memory-off-how" />
        {" "}Memory is off on this gateway
      </label>
      <p id="memory-off-how">
        The agent keeps nothing about you between conversations. This is the default; the gateway's owner turns it on
        in <code>config.yaml</code> (the one the gateway started with: <code>--config</code>, <code>$HERDSMAN_CONFIG</code>,
        {" "}<code>./config.yaml</code> or <code>~/.herdsman/config.yaml</code>):
      </p>
      <pre className="memory-off-setting" data-testid="memory-off-setting">{"memory:\n  enabled: true"}</pre>
      <p>then restarts the gateway (<code>herdsman serve</code>, or <code>make run</code>). Each user can still switch their own memory off here afterwards.</p>
      <p className="empty" data-testid="memory-off-detail">The gateway says: {detail}</p>
      <div className="settings-actions">
        <button type="button" onClick={onCheck} disabled={checking} data-testid="memory-check-again">Check again</button>
      </div>
    </div>
  );
}

export function MemoryTab() {
  const { data, error, loading, reload } = useLoad(getMemoryOrOff);
  return (
    <section className="settings-tab" data-testid="memory-tab">
      <p className="settings-intro">
        What the agent remembers about you{data && !("off" in data) ? <> (user <code>{data.user_id}</code>)</> : null}, added to its
        context in new conversations. Edits apply to the next run.
      </p>
      <PanelError error={error} />
      {loading && !data && <p className="empty">Loading memory…</p>}
      {data && "off" in data && <MemoryOffPanel detail={data.detail} onCheck={() => void reload()} checking={loading} />}
      {data && !("off" in data) && <MemoryOn data={data} loading={loading} reloadFacts={reload} />}
    </section>
  );
}

/** Memory on: the facts, the graph, the audit trail, export. */
function MemoryOn({ data, loading, reloadFacts }: { data: MemoryView; loading: boolean; reloadFacts: () => Promise<void> }) {
  const graph = useLoad(getMemoryGraph);
  const reload = async () => { await Promise.all([reloadFacts(), graph.reload()]); };
  const [actionError, setActionError] = useState("");
  return (
    <>
      <PanelError error={actionError} onDismiss={() => setActionError("")} />
      <MemoryControls enabled={data.enabled !== false} onChanged={reload} onError={setActionError} />
      {data.summary && (
        <div className="memory-summary"><strong>Summary:</strong> {data.summary}</div>
      )}
      {data.facts.length === 0 && <p className="empty">No facts yet: the agent adds them as it learns about you.</p>}
      {data.facts.length > 0 && (
        <ul className="facts">
          {data.facts.map((f) => <FactRow key={f.id} fact={f} onChanged={reload} onError={setActionError} />)}
        </ul>
      )}
      <h4>People, projects and services</h4>
      <PanelError error={graph.error} />
      {graph.data && <MemoryGraphList graph={graph.data} onChanged={graph.reload} onError={setActionError} />}
      <MemoryAudit />
      <div className="settings-actions">
        <button type="button" onClick={() => void reload()} disabled={loading || graph.loading}>Refresh</button>
        <button type="button" data-testid="memory-export"
          onClick={() => downloadFile("/api/memory/export", `herdsman-memory-${data.user_id}.json`)
            .catch((e) => setActionError(`Could not export memory: ${errorText(e)}`))}>
          Export as JSON
        </button>
      </div>
    </>
  );
}
