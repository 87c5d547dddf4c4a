/** The memory graph in the Memory tab: each entity with what is true of it now and what used to
 * be; a relation that is no longer true can be ended (today), and an entity or a single relation
 * deleted (each with a confirmation). */
import { useState } from "react";
import { deleteEntity, deleteRelation, endRelation, type Entity, type MemoryGraph, type Relation } from "../../api/settings";
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

function RelationItem({ relation, past, onDelete, onEnd, busy }: {
  relation: Relation; past: boolean; onDelete: () => void; onEnd: () => void; busy: boolean;
}) {
  return (
    <li className={past ? "relation past" : "relation"} data-testid="relation" data-relation-id={relation.id}>
      <span className="fact-text">{relationText(relation)}</span>
      <div className="fact-actions">
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
                  onDelete={() => act(() => deleteRelation(r.id))} onEnd={() => act(() => endRelation(r.id, today()))} />
              ))}
            </ul>
          )}
        </li>
      ))}
    </ul>
  );
}
