/** The gateway's REST routes under /api: models, uploads, artifacts, health. */
import { authHeaders } from "./key";

export interface ModelInfo {
  name: string;
  display_name: string;
  model: string;
}

export interface UploadedFile {
  filename: string;
  path: string;
  size: number | null;
  conversion_error?: string;
}

/** An error a REST call ended with, worded for the page; `status` is the HTTP status, if any. */
export class GatewayError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

/** What a failed response says: the gateway's `detail` (its errors are JSON), else the status text. */
export async function failureDetail(response: Response): Promise<string> {
  try {
    const detail = (await response.json()).detail;
    if (detail != null) return typeof detail === "string" ? detail : JSON.stringify(detail);
  } catch {
    /* not JSON */
  }
  return response.statusText;
}

/** Call a REST route with the API key; an error is a GatewayError that says what to do. */
export async function call<T>(path: string, init?: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, { ...init, headers: { ...authHeaders(), ...(init?.headers ?? {}) } });
  } catch {
    throw new GatewayError("The gateway cannot be reached: is `herdsman serve` running?");
  }
  if (!response.ok) {
    const detail = await failureDetail(response);
    const hint = response.status === 401 ? " Set the gateway's API key under Settings." : "";
    throw new GatewayError(`${init?.method ?? "GET"} ${path} failed (${response.status}): ${detail}${hint}`, response.status);
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** How long a model step takes here: the median of the newest steps of a model in the user's threads. */
export interface StepEstimate {
  model: string | null;
  /** Model steps the estimate is made from (0: nothing measured yet). */
  samples: number;
  seconds: number | null;
  /** The median output pace, where the model reports it (the embedded model). */
  output_tokens_per_second: number | null;
}

/** The step estimate for `model` (the lead's model when not given). */
export function getStepEstimate(model?: string): Promise<StepEstimate> {
  return call(`/api/model-steps${model ? `?model=${encodeURIComponent(model)}` : ""}`);
}

export function getModels(): Promise<{ models: ModelInfo[]; default: string }> {
  return call("/api/models");
}

export async function uploadFiles(threadId: string, files: File[]): Promise<UploadedFile[]> {
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  const result = await call<{ files: UploadedFile[] }>(`/api/threads/${threadId}/uploads`, { method: "POST", body: form });
  return result.files;
}

export async function listUploads(threadId: string): Promise<UploadedFile[]> {
  return (await call<{ files: UploadedFile[] }>(`/api/threads/${threadId}/uploads`)).files;
}

/** One file or folder of a thread (GET /api/threads/{id}/files). */
export interface FileEntry {
  path: string;
  name: string;
  kind: "file" | "dir";
  size: number | null;
  modified: string | null;
  content_type: string | null;
}

/** The files and folders below the virtual directory `path`, `depth` levels deep. */
export function listFiles(threadId: string, path = "/mnt/user-data", depth = 1): Promise<{ path: string; entries: FileEntry[]; truncated: boolean }> {
  return call(`/api/threads/${threadId}/files?${new URLSearchParams({ path, depth: String(depth) })}`);
}

/** Limits the gateway enforces (GET /api/limits), for checks before sending. */
export function getLimits(): Promise<{ max_upload_bytes: number }> {
  return call("/api/limits");
}

/** The URL of a thread's file by its virtual path (/mnt/user-data/...). */
export function artifactUrl(threadId: string, vpath: string, download = false): string {
  const path = vpath.replace(/^\/+/, "").split("/").map(encodeURIComponent).join("/");
  return `/api/threads/${threadId}/artifacts/${path}${download ? "?download=true" : ""}`;
}

/** The URL of a thread's folder (default: its outputs) as one zip. */
/** Stop one running sub-agent of the thread's run; the run and its other sub-agents go on. */
export function cancelSubagent(threadId: string, taskId: string): Promise<{ status: string }> {
  return call(`/api/threads/${threadId}/tasks/${encodeURIComponent(taskId)}/cancel`, { method: "POST" });
}

/** A checkpoint with a version of the thread's files (``GET /api/threads/{id}/snapshots``). */
export interface FileVersion {
  checkpoint_id: string;
  message_id: string | null;
  kept: boolean;
  created_at: string;
  changes: { added: string[]; removed: string[]; changed: string[] };
}

/** The thread's checkpoints with file versions, newest first (empty when versions are off). */
export async function listFileVersions(threadId: string): Promise<FileVersion[]> {
  try {
    return (await call<{ snapshots: FileVersion[] }>(`/api/threads/${threadId}/snapshots?limit=500`)).snapshots;
  } catch (e) {
    if (e instanceof GatewayError && e.status === 404) return [];
    throw e;
  }
}

/** Put the thread's files back as they were at ``checkpointId`` (the conversation stays). */
export function restoreFiles(threadId: string, checkpointId: string): Promise<{ written: string[]; removed: string[] }> {
  return call(`/api/threads/${threadId}/snapshots/${encodeURIComponent(checkpointId)}/restore`, { method: "POST" });
}

export function archiveUrl(threadId: string, folder = "outputs"): string {
  return `/api/threads/${threadId}/archive?path=${encodeURIComponent(folder)}`;
}

export async function health(): Promise<boolean> {
  try {
    return (await fetch("/api/health")).ok;
  } catch {
    return false;
  }
}

/** The file name a Content-Disposition header gives (``attachment; filename="x.json"``), else null. */
export function dispositionName(header: string | null): string | null {
  const match = header ? /filename="?([^";]+)"?/i.exec(header) : null;
  return match ? match[1] : null;
}

/** Fetch ``url`` with the API key (so it works with auth on) and save it as a download, under the
 * name the gateway gives, else ``name``. A failure throws an Error with the status and what the gateway said. */
export async function downloadFile(url: string, name: string): Promise<void> {
  const r = await fetch(url, { headers: authHeaders() });
  if (!r.ok) throw new Error(`${r.status} ${await failureDetail(r)}`);
  const href = URL.createObjectURL(await r.blob());
  const a = Object.assign(document.createElement("a"), { href, download: dispositionName(r.headers.get("content-disposition")) ?? name });
  a.click();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}
