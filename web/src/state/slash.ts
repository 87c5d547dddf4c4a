/** `/name` in the composer: which skills and custom agents match what is typed, and what picking one does. */

export interface SkillChoice {
  name: string;
  description: string;
  /** Set for a custom agent: picking it starts a new thread on that assistant instead of typing a command. */
  agentId?: string;
}

/** The `/command` of a custom agent: its name in lower case, words joined by dashes ("Sales Report" -> sales-report). */
export function agentCommand(name: string): string {
  return name.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "agent";
}

/** The custom agents as `/` choices (the built-in agent is the default, not a choice). */
export function agentChoices(agents: { assistant_id: string; name: string; description?: string | null }[], builtin: string): SkillChoice[] {
  return agents
    .filter((a) => a.assistant_id !== builtin)
    .map((a) => ({ name: agentCommand(a.name), description: a.description || `Your agent "${a.name}"`, agentId: a.assistant_id }));
}

const TYPING = /^\/([a-z0-9-]*)$/;

/** The choices (skills, then agents) whose name starts with the `/prefix` being typed (nothing once a space follows). */
export function slashMatches(text: string, skills: SkillChoice[]): SkillChoice[] {
  const typed = TYPING.exec(text);
  if (!typed) return [];
  return skills.filter((s) => s.name.startsWith(typed[1])).slice(0, 8);
}

/** The composer's text once the skill `name` is picked: the command and a space to go on typing. */
export function pickSkill(name: string): string {
  return `/${name} `;
}

/** Example tasks for the start screen: each works on the embedded small model. */
export const EXAMPLES = [
  "Create /mnt/user-data/outputs/hello.txt with the line: hello world",
  "Write the numbers 1 to 20, one per line, to /mnt/user-data/outputs/numbers.txt.",
  "Save the seven weekdays as a JSON list in /mnt/user-data/outputs/weekdays.json.",
  "Attach a CSV file, then ask: what is the average of its price column?",
];
