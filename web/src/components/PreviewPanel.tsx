/** The Preview tab: the thread's HTML pages and the servers the agent started, the selected one
 * shown live in a sandboxed iframe from the preview origin (never the gateway's own, and never with
 * allow-same-origin), with reload and open-in-new-tab; an entry that cannot be shown says why.
 * Each opening asks the gateway for a fresh short-lived link (POST /api/threads/{id}/preview/token).
 * A port announced by the run's `preview` event (`announced`) is reloaded and selected. */
import { useCallback, useEffect, useState } from "react";
import { call } from "../api/rest";
import { IFRAME_SANDBOX, chosenEntry, portKey, previewChoices, previewUrl, type PreviewChoice, type PreviewLink, type PreviewListing } from "../state/preview";

interface Props {
  threadId: string | null;
  refreshKey: number;
  onClose: () => void;
  onError: (message: string) => void;
  /** The latest port a `preview` event announced for this thread (`n` counts announcements). */
  announced?: { port: number; n: number } | null;
}

/** The selected entry: why it cannot be shown, or the page live in a frame that is sandboxed
 * without allow-same-origin (an opaque origin: no storage, cookies or responses of any other). */
export function PreviewView({ choice, url }: { choice: PreviewChoice; url: string | null }) {
  if (choice.problem) return <div className="trace-note" role="status" data-testid="preview-problem">{choice.problem}</div>;
  if (!url) return null;
  return (
    <iframe className="preview-frame" src={url} sandbox={IFRAME_SANDBOX} referrerPolicy="no-referrer"
      title={`Preview of ${choice.label}`} data-testid="preview-frame" />
  );
}

export function PreviewPanel({ threadId, refreshKey, onClose, onError, announced }: Props) {
  const [listing, setListing] = useState<PreviewListing | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [url, setUrl] = useState<string | null>(null);
  const [frameKey, setFrameKey] = useState(0);

  const load = useCallback(() => {
    if (!threadId) return;
    call<PreviewListing>(`/api/threads/${threadId}/preview`).then(setListing, (e: Error) => onError(e.message));
  }, [threadId, onError]);
  useEffect(load, [load, refreshKey]);
  useEffect(() => {
    if (!announced) return;
    setSelected(portKey(announced.port));
    load();
  }, [announced?.n]); // eslint-disable-line react-hooks/exhaustive-deps

  const choices = listing ? previewChoices(listing) : [];
  const choice: PreviewChoice | undefined = chosenEntry(choices, selected);

  const open = useCallback((c: PreviewChoice | undefined) => {
    setUrl(null);
    if (!threadId || !c || c.problem) return;
    call<PreviewLink>(`/api/threads/${threadId}/preview/token`, { method: "POST" })
      .then((link) => { setUrl(previewUrl(link, c)); setFrameKey((k) => k + 1); }, (e: Error) => onError(e.message));
  }, [threadId, onError]);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  useEffect(() => open(choice), [choice?.key, open]);

  return (
    <section className="trace preview-panel" data-testid="preview-panel">
      <div className="trace-head">
        <b>Preview</b>
        <select value={choice?.key ?? ""} onChange={(e) => setSelected(e.target.value)} data-testid="preview-select" aria-label="What to preview">
          {choices.length === 0 && <option value="">nothing to preview yet</option>}
          {choices.map((c) => <option key={c.key} value={c.key}>{c.kind === "page" ? "page" : "server"}: {c.label}</option>)}
        </select>
        <button onClick={() => { load(); open(choice); }} disabled={!choice || !!choice.problem} data-testid="preview-reload">Reload</button>
        {url && <a href={url} target="_blank" rel="noopener noreferrer" data-testid="preview-open">Open in new tab</a>}
        <button className="trace-nav" onClick={onClose} aria-label="Close preview">×</button>
      </div>
      {choices.length === 0 && listing && (
        <div className="trace-note" data-testid="preview-empty">
          Nothing to preview: no HTML page in outputs or workspace, and no server running. The agent starts one with
          bash and background=true, listening on one of the ports {listing.ports}.
        </div>
      )}
      {choice && <PreviewView key={frameKey} choice={choice} url={url} />}
    </section>
  );
}
