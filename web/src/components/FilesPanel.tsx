/** The thread's files: uploads and outputs as a tree; a click previews one, with a download link. */
import { useEffect, useMemo, useState } from "react";
import { authHeaders } from "../api/key";
import { artifactUrl, listUploads } from "../api/rest";
import { Markdown } from "./Markdown";
import { buildTree, parseCsv, previewKind, type TreeNode } from "../state/tree";

const MAX_PREVIEW = 200_000;

/** The file at `url`, fetched with the API key: its text, or an object URL for images, PDF and HTML. */
function useArtifact(url: string, name: string, kind: string) {
  const [text, setText] = useState<string | null>(null);
  const [objectUrl, setObjectUrl] = useState<string | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    setText(null);
    setObjectUrl(null);
    setError("");
    if (kind === "binary") return;
    let made: string | null = null;
    let cancelled = false;
    fetch(url, { headers: authHeaders() })
      .then(async (r) => {
        if (!r.ok) throw new Error(`${r.status} ${(await r.json().catch(() => ({}))).detail ?? r.statusText}`);
        if (["image", "pdf", "html"].includes(kind)) {
          made = URL.createObjectURL(await r.blob());
          if (!cancelled) setObjectUrl(made);
          return;
        }
        const body = await r.text();
        if (cancelled) return;
        if (body.slice(0, 8000).includes("\u0000")) {
          setError(`${name} looks like a binary file: no preview. Download it instead.`);
          return;
        }
        setText(body.length > MAX_PREVIEW ? `${body.slice(0, MAX_PREVIEW)}\n… (file truncated in the preview; download it for the rest)` : body);
      })
      .catch((e: Error) => !cancelled && setError(`Could not load ${name}: ${e.message}`));
    return () => {
      cancelled = true;
      if (made) URL.revokeObjectURL(made);
    };
  }, [url, kind, name]);
  return { text, objectUrl, error };
}

/** Save a thread's file (fetched with the API key, so it works with auth on). */
async function download(url: string, name: string, onError: (e: string) => void) {
  try {
    const r = await fetch(url, { headers: authHeaders() });
    if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
    const href = URL.createObjectURL(await r.blob());
    const a = Object.assign(document.createElement("a"), { href, download: name });
    a.click();
    setTimeout(() => URL.revokeObjectURL(href), 10_000);
  } catch (e) {
    onError(`Could not download ${name}: ${(e as Error).message}`);
  }
}

function Preview({ threadId, path, onError }: { threadId: string; path: string; onError: (e: string) => void }) {
  const url = artifactUrl(threadId, path);
  const name = path.split("/").pop() ?? path;
  const kind = previewKind(name);
  const { text, objectUrl, error } = useArtifact(url, name, kind);
  return (
    <div className="preview" data-testid="preview">
      <div className="preview-head">
        <span>{name}</span>
        <button onClick={() => download(artifactUrl(threadId, path, true), name, onError)} data-testid="download">Download</button>
      </div>
      {error && <div className="error">{error}</div>}
      {kind === "image" && objectUrl && <img src={objectUrl} alt={name} />}
      {kind === "html" && objectUrl && <iframe sandbox="" src={objectUrl} title={name} />}
      {kind === "pdf" && objectUrl && <iframe src={objectUrl} title={name} />}
      {kind === "binary" && <div className="empty">A binary file: no preview. Download it instead.</div>}
      {kind === "csv" && text != null && (
        <table>
          <tbody>
            {parseCsv(text).map((row, i) => (
              <tr key={i}>{row.map((c, j) => (i === 0 ? <th key={j}>{c}</th> : <td key={j}>{c}</td>))}</tr>
            ))}
          </tbody>
        </table>
      )}
      {kind === "text" && text != null && <pre data-testid="preview-text">{text}</pre>}
      {kind === "markdown" && text != null && <div data-testid="preview-text"><Markdown text={text} /></div>}
    </div>
  );
}

function Tree({ nodes, onOpen, selected }: { nodes: TreeNode[]; onOpen: (p: string) => void; selected: string | null }) {
  return (
    <ul className="tree">
      {nodes.map((n) => (
        <li key={n.path}>
          {n.isFile ? (
            <button className={n.path === selected ? "active" : ""} onClick={() => onOpen(n.path)} data-testid="file-item">{n.name}</button>
          ) : (
            <>
              <span className="folder">{n.name}/</span>
              <Tree nodes={n.children} onOpen={onOpen} selected={selected} />
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

export function FilesPanel(props: {
  threadId: string | null;
  written: string[];
  refreshKey: number;
  onError: (e: string) => void;
  children?: React.ReactNode;
}) {
  const { threadId, written, refreshKey, onError } = props;
  const [uploads, setUploads] = useState<string[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  useEffect(() => {
    setSelected(null);
    setUploads([]);
  }, [threadId]);
  useEffect(() => {
    if (!threadId) return;
    listUploads(threadId)
      .then((files) => setUploads(files.map((f) => f.path)))
      .catch((e: Error) => {
        if (!e.message.includes("(404)")) onError(e.message);
      });
  }, [threadId, refreshKey, onError]);
  const tree = useMemo(() => buildTree([...new Set([...uploads, ...written])].sort()), [uploads, written]);
  if (!threadId) return <aside className="files">{props.children}<div className="empty">Files of a thread show here.</div></aside>;
  return (
    <aside className="files" data-testid="files">
      {props.children}
      <h3>Files</h3>
      {tree.length === 0 ? <div className="empty">No files yet. Drop files on the message box to upload.</div> : <Tree nodes={tree} onOpen={setSelected} selected={selected} />}
      {selected && <Preview threadId={threadId} path={selected} onError={onError} />}
    </aside>
  );
}
