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

/** An error a REST call ended with, worded for the page. */
export class GatewayError extends Error {}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, { ...init, headers: { ...authHeaders(), ...(init?.headers ?? {}) } });
  } catch {
    throw new GatewayError("The gateway cannot be reached: is `herdsman serve` running?");
  }
  if (!response.ok) {
    let detail = response.statusText;
    try {
      detail = (await response.json()).detail ?? detail;
    } catch {
      /* not JSON */
    }
    const hint = response.status === 401 ? " Set the gateway's API key under Settings." : "";
    throw new GatewayError(`${init?.method ?? "GET"} ${path} failed (${response.status}): ${detail}${hint}`);
  }
  return (await response.json()) as T;
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

/** The URL of a thread's file by its virtual path (/mnt/user-data/...). */
export function artifactUrl(threadId: string, vpath: string, download = false): string {
  const path = vpath.replace(/^\/+/, "").split("/").map(encodeURIComponent).join("/");
  return `/api/threads/${threadId}/artifacts/${path}${download ? "?download=true" : ""}`;
}

export async function health(): Promise<boolean> {
  try {
    return (await fetch("/api/health")).ok;
  } catch {
    return false;
  }
}
