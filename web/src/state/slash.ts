/** The skill picker of the composer: which skills and custom agents match a `/` typed anywhere in
 * the text or the picker's filter box, keyboard moves, and the message the picked skills make. */

export interface SkillChoice {
  name: string;
  description: string;
  /** Example requests the skill fits (its SKILL.md's `examples:`), for the start screen. */
  examples?: string[];
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

/** A `/` being typed: where it starts, where the caret is, and the name typed after it so far. */
export interface SlashQuery {
  start: number;
  end: number;
  query: string;
}

/** The `/name` being typed at `caret`: a `/` at the start of the text or after a space, then name
 * characters up to the caret, and no word going on after it (so `/mnt/user-data` is not one). */
export function slashAt(text: string, caret: number = text.length): SlashQuery | null {
  const typed = /(^|\s)\/([a-z0-9-]*)$/.exec(text.slice(0, caret));
  if (!typed || /^[^\s]/.test(text.slice(caret))) return null;
  return { start: caret - typed[2].length - 1, end: caret, query: typed[2] };
}

/** The text without the `/query` that opened the picker (the pick becomes a chip instead). */
export function withoutQuery(text: string, q: SlashQuery): string {
  const before = text.slice(0, q.start);
  const after = text.slice(q.end);
  return before.endsWith(" ") && after.startsWith(" ") ? before + after.slice(1) : before + after;
}

const MAX_SHOWN = 12;

/** The choices that match `filter`, best first: names that start with it, then names holding it,
 * then (from three characters on) descriptions holding it, case-insensitive; all for an empty filter. */
export function filterChoices(choices: SkillChoice[], filter: string): SkillChoice[] {
  const f = filter.trim().toLowerCase();
  if (!f) return choices.slice(0, MAX_SHOWN);
  const rank = (c: SkillChoice) =>
    c.name.startsWith(f) ? 0 : c.name.includes(f) ? 1 : f.length >= 3 && c.description.toLowerCase().includes(f) ? 2 : 3;
  return choices
    .map((c, i) => ({ c, i, r: rank(c) }))
    .filter((x) => x.r < 3)
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.c)
    .slice(0, MAX_SHOWN);
}

/** The highlighted row after `key` in a list of `count` rows (wrapping); null for other keys. */
export function moveActive(active: number, key: string, count: number): number | null {
  if (count === 0) return null;
  if (key === "ArrowDown") return (active + 1) % count;
  if (key === "ArrowUp") return (active + count - 1) % count;
  if (key === "Home") return 0;
  if (key === "End") return count - 1;
  return null;
}

/** `picked` with `name` added, or taken away when it was there already. */
export function togglePicked(picked: string[], name: string): string[] {
  return picked.includes(name) ? picked.filter((n) => n !== name) : [...picked, name];
}

/** The message sent: each picked skill as its `/name` command (the form the lead activates), then the text. */
export function composeMessage(picked: string[], text: string): string {
  return [...picked.map((n) => `/${n}`), text.trim()].filter(Boolean).join(" ");
}

/** The first line of a description, without its final period. */
export function oneLine(description: string): string {
  return description.split(". ")[0].replace(/\.$/, "");
}

/** Example tasks for the start screen: each works on the embedded small model. */
export const EXAMPLES = [
  "Create /mnt/user-data/outputs/hello.txt with the line: hello world",
  "Write the numbers 1 to 20, one per line, to /mnt/user-data/outputs/numbers.txt.",
  "Save the seven weekdays as a JSON list in /mnt/user-data/outputs/weekdays.json.",
  "Attach a CSV file, then ask: what is the average of its price column?",
];
