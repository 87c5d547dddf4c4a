/** The memory graph in the Memory tab: each entity with what is true of it now and what used to
 * be; a relation that is no longer true can be ended (today), one that was wrong corrected (its
 * predicate or object), and an entity or a single relation deleted (each with a confirmation). */
import { useState } from "react";
import {
  correctRelation, deleteEntity, deleteRelation, endRelation, type Entity, type MemoryGraph, type Relation,
} from "../../api/settings";
import { useAction } from "./useLoad";

export interface EntityRow {
  entity: Entity;
  /** Open relations that name the entity, newest first. */
  now: Relation[];
  /** Closed relations (history), most recently ended first. */
  past: Relation[];
}

/** Group the graph by entity (by name): every relation under each entity it names. */
export function entityRows(graph: MemoryGraph): EntityRow[] {
  const newest = (a: Relation, b: Relation) => (b.valid_to ?? b.valid_from).localeCompare(a.valid_to ?? a.valid_from);
  return [...graph.entities]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((entity) => {
      const touching = graph.relations.filter((r) => r.subject === entity.id || r.object === entity.id);
      return {
        entity,
        now: touching.filter((r) => r.valid_to === null).sort(newest),
        past: touching.filter((r) => r.valid_to !== null).sort(newest),
      };
    });
}

/** "Atlas deploys to GCP (since 2026-03-01)" or "(2026-01-10 – 2026-03-01)". */
export function relationText(r: Relation): string {
  const day = (s: string) => s.slice(0, 10);
  const when = r.valid_to === null ? `since ${day(r.valid_from)}` : `${day(r.valid_from)} – ${day(r.valid_to)}`;
  return `${r.subject_name} ${r.predicate.replace(/_/g, " ")} ${r.object_name} (${when})`;
}

/** Today as the gateway takes a date (UTC, YYYY-MM-DD). */
export const today = () => new Date().toISOString().slice(0, 10);

function Confirmed({ label, question, testid, onConfirm, busy, verb = "Delete" }: {
  label: string; question: string; testid: string; onConfirm: () => void; busy: boolean; verb?: string;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) return <button type="button" onClick={() => setAsking(true)} data-testid={testid}>{label}</button>;
  return (
    <>
      <span>{question}</span>
      <button type="button" className="danger" onClick={onConfirm} disabled={busy} data-testid={`${testid}-confirm`}>{verb}</button>
      <button type="button" onClick={() => setAsking(false)} disabled={busy}>Keep</button>
    </>
  );
}

/** What a correction form sends: only what changed, trimmed; null when nothing did. */
export function correction(r: Relation, predicate: string, object: string): { predicate?: string; object?: string } | null {
  const change: { predicate?: string; object?: string } = {};
  if (predicate.trim() && predicate.trim() !== r.predicate) change.predicate = predicate.trim();
  if (object.trim() && object.trim() !== r.object_name) change.object = object.trim();
  return Object.keys(change).length > 0 ? change : null;
}

function CorrectForm({ relation, onCorrect, onCancel, busy }: {
  relation: Relation; onCorrect: (change: { predicate?: string; object?: string }) => void; onCancel: () => void; busy: boolean;
}) {
  const [predicate, setPredicate] = useState(relation.predicate);
  const [object, setObject] = useState(relation.object_name);
  const change = correction(relation, predicate, object);
  return (
    <form className="relation-correct" onSubmit={(e) => { e.preventDefault(); if (change) onCorrect(change); }}>
      <span>{relation.subject_name}</span>
      <input aria-label="Predicate" value={predicate} onChange={(e) => setPredicate(e.target.value)} data-testid="relation-predicate" />
      <input aria-label="Object" value={object} onChange={(e) => setObject(e.target.value)} data-testid="relation-object" />
      <button type="submit" disabled={busy || change === null} data-testid="relation-correct-save">Save</button>
      <button type="button" onClick={onCancel} disabled={busy}>Cancel</button>
    </form>
  );
}

function RelationItem({ relation, past, onDelete, onEnd, onCorrect, busy }: {
  relation: Relation; past: boolean; onDelete: () => void; onEnd: () => void;
  onCorrect: (change: { predicate?: string; object?: string }) => void; busy: boolean;
}) {
  const [correcting, setCorrecting] = useState(false);
  return (
    <li className={past ? "relation past" : "relation"} data-testid="relation" data-relation-id={relation.id}>
      {correcting
        ? <CorrectForm relation={relation} busy={busy} onCancel={() => setCorrecting(false)}
            onCorrect={(change) => { setCorrecting(false); onCorrect(change); }} />
        : <span className="fact-text">{relationText(relation)}</span>}
      <div className="fact-actions">
        {!correcting && <button type="button" onClick={() => setCorrecting(true)} data-testid="relation-correct">Correct</button>}
        {!past && <Confirmed label="No longer true" question="Ended today?" verb="End" testid="relation-end" onConfirm={onEnd} busy={busy} />}
        <Confirmed label="Delete" question="Delete this relation?" testid="relation-delete" onConfirm={onDelete} busy={busy} />
      </div>
    </li>
  );
}

export function MemoryGraphList({ graph, onChanged, onError }: {
  graph: MemoryGraph; onChanged: () => Promise<void>; onError: (e: string) => void;
}) {
  const { busy, run } = useAction(onError);
  const act = (what: () => Promise<unknown>) => void run(async () => { await what(); await onChanged(); });
  const rows = entityRows(graph);
  if (rows.length === 0) return <p className="empty">No entities yet: the agent adds people, projects and services as it learns.</p>;
  return (
    <ul className="facts entities">
      {rows.map(({ entity, now, past }) => (
        <li key={entity.id} className="fact entity" data-testid="entity" data-entity-id={entity.id}>
          <div className="entity-head">
            <span className="badge">{entity.kind}</span>
            <strong>{entity.name}</strong>
            {entity.aliases.length > 0 && <span className="fact-meta">also {entity.aliases.join(", ")}</span>}
            <div className="fact-actions">
              <Confirmed label="Delete" question="Delete it and its relations?" testid="entity-delete"
                onConfirm={() => act(() => deleteEntity(entity.id))} busy={busy} />
            </div>
          </div>
          {(now.length > 0 || past.length > 0) && (
            <ul className="relations">
              {[...now, ...past].map((r) => (
                <RelationItem key={r.id} relation={r} past={r.valid_to !== null} busy={busy}
                  onDelete={() => act(() => deleteRelation(r.id))} onEnd={() => act(() => endRelation(r.id, today()))}
                  onCorrect={(change) => act(() => correctRelation(r.id, change))} />
              ))}
            </ul>
          )}
        </li>
      ))}
    </ul>
  );
}
