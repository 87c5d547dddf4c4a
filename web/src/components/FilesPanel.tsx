/** The thread's files: its workspace, outputs and uploads as a tree listed by the gateway
 * (GET /api/threads/{id}/files), refreshed when a run finishes and while one runs; a click previews
 * a file (Markdown, highlighted code, images, CSV as a table, HTML in a sandboxed frame, PDF) with a
 * download button. Big text files are previewed in part, binary files only offered for download. */
import { useCallback, useEffect, useMemo, useState } from "react";
import { authHeaders } from "../api/key";
import { archiveUrl, artifactUrl, downloadFile, failureDetail, listFiles, type FileEntry } from "../api/rest";
import { CodeBlock, languageOf } from "./CodeBlock";
import { Markdown } from "./Markdown";
import { buildTree, formatSize, parseCsv, previewKind, type TreeNode } from "../state/tree";

/** Bytes of a text file the preview loads; the rest is left to the download. */
const MAX_PREVIEW = 200_000;
/** Folder levels listed below /mnt/user-data (and below a deeper folder when it is opened). */
const LIST_DEPTH = 8;
const ROOT_PARTS = "/mnt/user-data".split("/").length;
/** How often the tree is listed again while a run goes on (it may write files with the shell). */
const RUNNING_REFRESH_MS = 2_500;

interface Loaded {
  text: string | null;
  objectUrl: string | null;
  error: string;
  binary: boolean;
  truncated: boolean;
}

const EMPTY: Loaded = { text: null, objectUrl: null, error: "", binary: false, truncated: false };

/** The file at `url`, fetched with the API key: its text (at most MAX_PREVIEW bytes, asked for with a
 * Range header when the file is bigger), or an object URL for images, PDF and HTML. `version`
 * (the modification time) makes it load again when the file changes. */
function useArtifact(url: string, name: string, kind: string, size: number | null, version: string | null): Loaded {
  const [loaded, setLoaded] = useState<Loaded>(EMPTY);
  useEffect(() => {
    setLoaded(EMPTY);
    if (kind === "binary") return;
    let made: string | null = null;
    let cancelled = false;
    const partial = kind !== "image" && kind !== "pdf" && kind !== "html" && size != null && size > MAX_PREVIEW;
    const headers: Record<string, string> = { ...authHeaders(), ...(partial ? { Range: `bytes=0-${MAX_PREVIEW - 1}` } : {}) };
    fetch(url, { headers })
      .then(async (r) => {
        if (!r.ok) throw new Error(`${r.status} ${await failureDetail(r)}`);
        if (["image", "pdf", "html"].includes(kind)) {
          made = URL.createObjectURL(await r.blob());
          if (!cancelled) setLoaded({ ...EMPTY, objectUrl: made });
          return;
        }
        let body = await r.text();
        if (cancelled) return;
        if (body.slice(0, 8000).includes("\u0000")) {
          setLoaded({ ...EMPTY, binary: true });
          return;
        }
        const cut = body.length > MAX_PREVIEW || (partial && r.status === 206);
        if (body.length > MAX_PREVIEW) body = body.slice(0, MAX_PREVIEW);
        setLoaded({ ...EMPTY, text: body, truncated: cut });
      })
      .catch((e: Error) => !cancelled && setLoaded({ ...EMPTY, error: `Could not load ${name}: ${e.message}` }));
    return () => {
      cancelled = true;
      if (made) URL.revokeObjectURL(made);
    };
  }, [url, kind, name, size, version]);
  return loaded;
}

/** Save a thread's file; a failure is shown, not thrown. */
async function download(url: string, name: string, onError: (e: string) => void) {
  try {
    await downloadFile(url, name);
  } catch (e) {
    onError(`Could not download ${name}: ${(e as Error).message}`);
  }
}

function Preview({ threadId, file, onError }: { threadId: string; file: TreeNode; onError: (e: string) => void }) {
  const { path, name, size } = file;
  const url = artifactUrl(threadId, path);
  const kind = previewKind(name, file.contentType);
  const { text, objectUrl, error, binary, truncated } = useArtifact(url, name, kind, size, file.modified);
  const save = () => download(artifactUrl(threadId, path, true), name, onError);
  const language = languageOf(name);
  return (
    <div className="preview" data-testid="preview">
      <div className="preview-head">
        <span>{name}{size != null && <span className="file-size"> {formatSize(size)}</span>}</span>
        <button onClick={save} data-testid="download">Download</button>
      </div>
      {error && <div className="error">{error}</div>}
      {kind === "image" && objectUrl && <img src={objectUrl} alt={name} />}
      {kind === "html" && objectUrl && <iframe sandbox="" src={objectUrl} title={name} />}
      {kind === "pdf" && objectUrl && <iframe src={objectUrl} title={name} />}
      {(kind === "binary" || binary) && (
        <div className="empty" data-testid="preview-binary">
          {name} is a binary file: no preview.{" "}
          <button className="link" onClick={save}>Download it</button>
        </div>
      )}
      {kind === "csv" && text != null && (
        <table>
          <tbody>
            {parseCsv(text).map((row, i) => (
              <tr key={i}>{row.map((c, j) => (i === 0 ? <th key={j}>{c}</th> : <td key={j}>{c}</td>))}</tr>
            ))}
          </tbody>
        </table>
      )}
      {kind === "text" && text != null && (
        language
          ? <div data-testid="preview-text"><CodeBlock code={text} language={language} /></div>
          : <pre data-testid="preview-text">{text}</pre>
      )}
      {kind === "markdown" && text != null && <div data-testid="preview-text"><Markdown text={text} /></div>}
      {truncated && (
        <div className="preview-note" data-testid="preview-truncated">
          Only the first {formatSize(MAX_PREVIEW)}{size != null ? ` of ${formatSize(size)}` : ""} are shown.{" "}
          <button className="link" onClick={save}>Download the whole file</button>
        </div>
      )}
    </div>
  );
}

/** A folder the listing did not go into (it is LIST_DEPTH levels down): its content is unknown, not empty. */
function atDepthLimit(node: TreeNode): boolean {
  return !node.isFile && node.children.length === 0 && node.path.split("/").length - ROOT_PARTS >= LIST_DEPTH;
}

/** Whether the tree holds a file, or a folder the listing did not go into (which may hold files). */
function mayHoldFiles(nodes: TreeNode[]): boolean {
  return nodes.some((n) => n.isFile || atDepthLimit(n) || mayHoldFiles(n.children));
}

function Tree({ nodes, onOpen, selected, onList }: {
  nodes: TreeNode[]; onOpen: (n: TreeNode) => void; selected: string | null; onList: (folder: string) => void;
}) {
  return (
    <ul className="tree">
      {nodes.map((n) => (
        <li key={n.path}>
          {n.isFile ? (
            <button className={n.path === selected ? "active" : ""} onClick={() => onOpen(n)} data-testid="file-item" data-path={n.path}>
              {n.name}
              {n.size != null && <span className="file-size"> {formatSize(n.size)}</span>}
            </button>
          ) : (
            <details open data-testid="folder-item" data-path={n.path}>
              <summary className="folder">{n.name}/</summary>
              {n.children.length ? <Tree nodes={n.children} onOpen={onOpen} selected={selected} onList={onList} />
                : atDepthLimit(n) ? (
                  <button className="link tree-empty" onClick={() => onList(n.path)} data-testid="folder-list-more">not listed yet: list it</button>
                ) : <div className="empty tree-empty">empty</div>}
            </details>
          )}
        </li>
      ))}
    </ul>
  );
}

/** Find the node at `path` in a tree (the selected file, after a refresh). */
function findNode(nodes: TreeNode[], path: string): TreeNode | null {
  for (const n of nodes) {
    if (n.path === path) return n;
    if (!n.isFile && path.startsWith(n.path + "/")) return findNode(n.children, path);
  }
  return null;
}

export function FilesPanel(props: {
  threadId: string | null;
  /** Files the run's tool calls wrote: a new one triggers a refresh of the listing. */
  written: string[];
  refreshKey: number;
  /** While true, the listing is refreshed every few seconds. */
  running?: boolean;
  onError: (e: string) => void;
  /** A file to show, asked for elsewhere (the trace): its path, and a counter so asking again reopens it. */
  show?: { path: string; n: number } | null;
  children?: React.ReactNode;
}) {
  const { threadId, written, refreshKey, running, onError, show } = props;
  const [listing, setListing] = useState<{ thread: string; entries: FileEntry[]; truncated: boolean } | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  /** Deeper folders listed on demand (below the depth limit), by folder, for this thread. */
  const [deeper, setDeeper] = useState<{ thread: string; entries: Record<string, FileEntry[]> } | null>(null);
  useEffect(() => {
    setSelected(null);
    setListing(null);
    setDeeper(null);
  }, [threadId]);
  const listDeeper = useCallback((folder: string) => {
    if (!threadId) return;
    listFiles(threadId, folder, LIST_DEPTH).then(
      (l) => setDeeper((d) => ({ thread: threadId, entries: { ...(d?.thread === threadId ? d.entries : {}), [folder]: l.entries } })),
      (e: Error) => onError(`Could not list ${folder}: ${e.message}`),
    );
  }, [threadId, onError]);
  useEffect(() => {
    if (show) setSelected(show.path);
  }, [show]);

  const load = useCallback(
    (report: boolean) => {
      if (!threadId) return () => {};
      let cancelled = false;
      listFiles(threadId, "/mnt/user-data", LIST_DEPTH)
        .then((l) => !cancelled && setListing({ thread: threadId, entries: l.entries, truncated: l.truncated }))
        .catch((e: Error) => {
          // A thread the gateway does not know yet (being created) has no files: not an error.
          if (!cancelled && report && !e.message.includes("(404)")) onError(e.message);
        });
      return () => { cancelled = true; };
    },
    [threadId, onError],
  );
  useEffect(() => load(true), [load, refreshKey, written.length]);
  useEffect(() => {
    if (!running) return;
    let stop = () => {};
    const timer = setInterval(() => { stop(); stop = load(false); }, RUNNING_REFRESH_MS);
    return () => { clearInterval(timer); stop(); };
  }, [running, load]);

  const tree = useMemo(() => {
    if (!listing || listing.thread !== threadId) return [];
    const extra = deeper?.thread === threadId ? Object.values(deeper.entries).flat() : [];
    return buildTree([...listing.entries, ...extra]);
  }, [listing, deeper, threadId]);
  const file = selected ? findNode(tree, selected) : null;
  if (!threadId) return <aside className="files">{props.children}<div className="empty">Files of a thread show here.</div></aside>;
  // "No files yet" only when the listing is whole and holds no file, and no folder was left unlisted below the depth limit
  const noFiles = listing != null && listing.thread === threadId && !listing.truncated && !mayHoldFiles(tree);
  const hasOutputs = mayHoldFiles(tree.filter((n) => n.path === "/mnt/user-data/outputs"));
  return (
    <aside className="files" data-testid="files">
      {props.children}
      <h3>
        Files
        {hasOutputs && (
          <button
            className="download-all"
            onClick={() => download(archiveUrl(threadId), "outputs.zip", onError)}
            data-testid="download-outputs"
            title="All files in /mnt/user-data/outputs as one zip"
          >
            Download outputs
          </button>
        )}
      </h3>
      {tree.length > 0 && <Tree nodes={tree} onOpen={(n) => setSelected(n.path)} selected={selected} onList={listDeeper} />}
      {noFiles && <div className="empty" data-testid="files-none">No files yet. Drop files on the message box to upload.</div>}
      {listing?.truncated && <div className="empty" data-testid="files-truncated">Not every file is listed: the thread has too many.</div>}
      {file?.isFile && <Preview threadId={threadId} file={file} onError={onError} />}
    </aside>
  );
}
