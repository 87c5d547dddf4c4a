/** REST calls of the settings dialog: memory facts, skills, model key status, MCP servers, IM
 * channels, and whether the gateway accepts an API key. */
import type { ChannelRow } from "../state/channels";
import { call, GatewayError, type ModelInfo } from "./rest";

export interface Fact {
  id: string;
  content: string;
  category: string;
  confidence: number;
  source_thread?: string | null;
  created_at?: string;
  updated_at?: string;
}

export interface MemoryView {
  user_id: string;
  /** false: the user turned their memory off (nothing learned, injected or looked up). */
  enabled?: boolean;
  summary: string;
  facts: Fact[];
}

/** A person, project, repository, service or preference the memory graph knows. */
export interface Entity {
  id: string;
  name: string;
  kind: string;
  aliases: string[];
  created_at?: string;
  updated_at?: string;
}

/** subject predicate object, true from valid_from until valid_to (null: still true). */
export interface Relation {
  id: string;
  subject: string;
  predicate: string;
  object: string;
  subject_name: string;
  object_name: string;
  valid_from: string;
  valid_to: string | null;
  confidence: number;
  source_thread?: string | null;
  source_run?: string | null;
}

export interface MemoryGraph {
  entities: Entity[];
  relations: Relation[];
}

/** One write to the caller's memory: what (kind, id), how (action, origin), from which thread and run. */
export interface AuditRecord {
  key: string;
  at: string;
  action: string;
  kind: string;
  id: string;
  origin: string;
  thread_id: string | null;
  run_id: string | null;
  sources?: string[];
  /** A fact learned or refused: the user's words the memory model quoted. */
  quote?: string;
  /** A refused fact: what the memory model proposed, and why it was not kept. */
  content?: string;
  reason?: string;
}

/** The fact categories the gateway accepts (herdsman.memory.facts.CATEGORIES). */
export const CATEGORIES = ["preference", "profile", "project", "knowledge", "behavior", "other"] as const;

export interface SkillInfo {
  name: string;
  description: string;
  source: string;
  enabled: boolean;
  status: "enabled" | "disabled" | "overridden" | "unavailable" | "invalid";
  path: string;
  license: string | null;
  allowed_tools: string[] | null;
  /** Example requests the skill fits (its front matter's `examples:`). */
  examples?: string[];
  problems: string[];
}

export type KeyState = "set" | "missing" | "not needed" | "unknown";

export interface ModelStatus extends ModelInfo {
  use: string;
  supports_vision: boolean;
  supports_thinking: boolean;
  api_key: KeyState;
  api_key_env: string | null;
  api_key_hint: string;
}

export interface McpServer {
  name: string;
  transport: string;
  state: "ready" | "failed" | "disabled" | "not_loaded";
  tools: string[];
  error: string | null;
}

const JSON_HEADERS = { "content-type": "application/json" };
const fact = (id: string) => `/api/memory/facts/${encodeURIComponent(id)}`;
const skill = (name: string) => `/api/skills/${encodeURIComponent(name)}`;

export const getMemory = () => call<MemoryView>("/api/memory");

/** Memory switched off for the whole gateway (`memory.enabled: false` in config.yaml, the default):
 * the gateway's 409 on GET /api/memory, with what it says to do. */
export interface MemoryOff {
  off: true;
  detail: string;
}

/** The caller's memory, or that the gateway has memory off (not an error to show in red). */
export const getMemoryOrOff = (): Promise<MemoryView | MemoryOff> =>
  getMemory().catch((e: unknown) => {
    if (e instanceof GatewayError && e.status === 409) return { off: true, detail: e.message.replace(/^GET \S+ failed \(409\): /, "") };
    throw e;
  });

export const getMemoryGraph = () => call<MemoryGraph>("/api/memory/graph");

/** Every write to the caller's memory, oldest first. */
export const getMemoryAudit = () => call<{ records: AuditRecord[] }>("/api/memory/audit");

/** Forget an entity and every relation that names it. */
export const deleteEntity = (id: string) => call<void>(`/api/memory/entities/${encodeURIComponent(id)}`, { method: "DELETE" });

/** Forget one relation, current or past. */
export const deleteRelation = (id: string) => call<void>(`/api/memory/relations/${encodeURIComponent(id)}`, { method: "DELETE" });

/** Say a relation stopped being true on `validTo` (an ISO date); it stays as history. */
export const endRelation = (id: string, validTo: string) =>
  call<Relation>(`/api/memory/relations/${encodeURIComponent(id)}`, {
    method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify({ valid_to: validTo }),
  });

/** Correct a relation that was wrong: its object and/or predicate (it gets a new id, answered). */
export const correctRelation = (id: string, change: { object?: string; predicate?: string }) =>
  call<Relation>(`/api/memory/relations/${encodeURIComponent(id)}`, {
    method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify(change),
  });

/** Turn the caller's memory on or off. */
export const setMemoryEnabled = (enabled: boolean) =>
  call<{ enabled: boolean }>("/api/memory/settings", { method: "PUT", headers: JSON_HEADERS, body: JSON.stringify({ enabled }) });

/** Delete everything memory keeps about the caller. */
export const purgeMemory = () => call<void>("/api/memory", { method: "DELETE" });

/** Change a fact's text and/or category; new text gives it a new id (in the answer). */
export const editFact = (id: string, change: { content?: string; category?: string }) =>
  call<Fact>(fact(id), { method: "PATCH", headers: JSON_HEADERS, body: JSON.stringify(change) });

export const deleteFact = (id: string) => call<void>(fact(id), { method: "DELETE" });

export const getSkills = () => call<{ skills: SkillInfo[]; skills_enabled: boolean }>("/api/skills");

export const getSkill = (name: string) => call<SkillInfo & { content: string }>(skill(name));

export const switchSkill = (name: string, enabled: boolean) =>
  call<SkillInfo>(`${skill(name)}/${enabled ? "enable" : "disable"}`, { method: "POST" });

/** A skill proposed from one of the user's runs that worked (skills.learning), waiting for review. */
export interface SkillProposal {
  name: string;
  description: string;
  created_at: string;
  request: string;
  parameters: { name: string; value: string; kind: string }[];
  /** What to look at before accepting (a command that reaches the network, installs, deletes...). */
  review: string[];
  /** Secrets its commands read (set them as the skill's secrets after accepting). */
  env: string[];
  thread_id: string | null;
}

const proposal = (name: string) => `/api/skills/proposals/${encodeURIComponent(name)}`;

export const getProposals = () => call<{ proposals: SkillProposal[]; learning_enabled: boolean }>("/api/skills/proposals");

/** One proposal with its files: relative path -> text, SKILL.md first. */
export const getProposal = (name: string) => call<SkillProposal & { files: Record<string, string> }>(proposal(name));

/** Install the proposal as the user's own skill; `content` is an edited SKILL.md. */
export const acceptProposal = (name: string, content?: string) =>
  call<{ skill: SkillInfo }>(`${proposal(name)}/accept`, {
    method: "POST", headers: JSON_HEADERS, body: JSON.stringify(content === undefined ? {} : { content }),
  });

export const declineProposal = (name: string) => call<{ declined: string }>(`${proposal(name)}/decline`, { method: "POST" });

export const getModelStatus = () => call<{ models: ModelStatus[]; default: string }>("/api/models");

export const getMcpStatus = () => call<{ servers: McpServer[] }>("/api/mcp/status");

export const getChannels = () => call<ChannelRow[]>("/api/channels");

export type KeyCheck = "accepted" | "not required" | "rejected" | "required";

async function probe(key: string): Promise<Response> {
  try {
    return await fetch("/api/models", { headers: key ? { "x-api-key": key } : {} });
  } catch {
    throw new GatewayError("The gateway cannot be reached: is `herdsman serve` running?");
  }
}

/** What the gateway makes of `key`: "not required" when it answers without any key (auth off);
 * else "accepted", "rejected" (a 401: the key is wrong) or "required" (no key given). */
export async function checkApiKey(key: string): Promise<KeyCheck> {
  for (const attempt of key ? ["", key] : [""]) {
    const response = await probe(attempt);
    if (response.ok) return attempt ? "accepted" : "not required";
    if (response.status !== 401) {
      throw new GatewayError(`GET /api/models failed (${response.status}): ${response.statusText}`, response.status);
    }
  }
  return key ? "rejected" : "required";
}
