/** Custom agents (assistants) in the UI: the form's fields <-> an assistant's context, and labels. */

/** The built-in agent, every user's default (read-only). */
export const BUILTIN_AGENT = "lead_agent";

/** What the agent form edits. */
export interface AgentForm {
  name: string;
  description: string;
  instructions: string;
  model: string; // "" = the gateway's default model
  skills: string[] | null; // null = every skill
}

/** An assistant as the gateway returns it (the fields the UI uses). */
export interface AgentRecord {
  assistant_id: string;
  name: string;
  description?: string | null;
  version?: number;
  context?: Record<string, unknown> | null;
}

export const EMPTY_FORM: AgentForm = { name: "", description: "", instructions: "", model: "", skills: null };

/** The form for an existing agent (the settings it has, defaults for the rest). */
export function formOf(agent: AgentRecord): AgentForm {
  const context = agent.context ?? {};
  const skills = context.skills;
  return {
    name: agent.name,
    description: agent.description ?? "",
    instructions: typeof context.instructions === "string" ? context.instructions : "",
    model: typeof context.model_name === "string" ? context.model_name : "",
    skills: Array.isArray(skills) ? skills.filter((s): s is string => typeof s === "string") : null,
  };
}

/** The assistant context for a form: the settings it keeps from ``base`` (tools, sub-agent types,
 * limits set elsewhere) with the form's fields; a field left empty is not set. */
export function contextOf(form: AgentForm, base: Record<string, unknown> = {}): Record<string, unknown> {
  const context: Record<string, unknown> = { ...base };
  delete context.instructions;
  delete context.model_name;
  delete context.skills;
  if (form.instructions.trim()) context.instructions = form.instructions.trim();
  if (form.model) context.model_name = form.model;
  if (form.skills !== null) context.skills = [...form.skills];
  return context;
}

/** Why the form cannot be saved yet, or null. */
export function formProblem(form: AgentForm): string | null {
  if (!form.name.trim()) return "Give the agent a name.";
  if (form.name.trim().length > 200) return "The name is too long (200 characters at most).";
  return null;
}

/** The name to show for a thread's agent: none for the built-in one or an unknown id. */
export function agentLabel(assistantId: unknown, agents: AgentRecord[]): string | null {
  if (typeof assistantId !== "string" || assistantId === BUILTIN_AGENT) return null;
  return agents.find((a) => a.assistant_id === assistantId)?.name ?? null;
}

/** ``skills`` with ``name`` switched on or off (``null``: every skill of ``all`` is on). */
export function toggleSkill(skills: string[] | null, name: string, all: string[]): string[] | null {
  const current = skills ?? all;
  const next = current.includes(name) ? current.filter((s) => s !== name) : [...current, name];
  return all.every((s) => next.includes(s)) && next.length === all.length ? null : next;
}
