/** The audit trail of the caller's memory: every write, newest first, with where it came from
 * (the thread and run, or the CLI, the API, retention...). Loaded when opened. */
import { useState } from "react";
import { getMemoryAudit, type AuditRecord } from "../../api/settings";
import { errorText, PanelError } from "./useLoad";

/** A record as one line: "2026-03-01 12:00 put relation r1a2 (updater, thread t-1)", with the
 * user's words for a fact learned or refused. */
export function auditText(record: AuditRecord): string {
  const from = [record.origin, record.thread_id && `thread ${record.thread_id}`, record.run_id && `run ${record.run_id}`]
    .filter(Boolean).join(", ");
  const line = `${record.at.slice(0, 16).replace("T", " ")} ${record.action} ${record.kind} ${record.id} (${from})`;
  return [line, ...auditWords(record)].join(" ");
}

/** The user's words behind a fact decision: the quote of a fact kept; for one refused, what was
 * proposed, what it quoted and why it was refused. */
export function auditWords(record: AuditRecord): string[] {
  const quote = record.quote ? `“${record.quote}”` : "";
  if (record.action === "refuse") {
    return [`“${record.content ?? ""}”`, quote && `quoting ${quote}`, `refused: ${record.reason ?? ""}`].filter(Boolean);
  }
  return quote ? [`from your words ${quote}`] : [];
}

export function MemoryAudit() {
  const [records, setRecords] = useState<AuditRecord[] | undefined>();
  const [error, setError] = useState("");
  const load = () => getMemoryAudit().then((r) => { setRecords([...r.records].reverse()); setError(""); })
    .catch((e) => setError(`Could not read the audit trail: ${errorText(e)}`));
  return (
    <details className="memory-audit" data-testid="memory-audit"
      onToggle={(e) => { if ((e.currentTarget as HTMLDetailsElement).open) void load(); }}>
      <summary>Where your memory came from (every write)</summary>
      <PanelError error={error} />
      {records && records.length === 0 && <p className="empty">No writes yet.</p>}
      {records && records.length > 0 && (
        <ul className="audit">
          {records.map((r) => <li key={r.key} data-testid="audit-record">{auditText(r)}</li>)}
        </ul>
      )}
    </details>
  );
}
