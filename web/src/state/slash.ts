/** `/name` in the composer: which skills match what is typed, and the text after picking one. */

export interface SkillChoice {
  name: string;
  description: string;
}

const TYPING = /^\/([a-z0-9-]*)$/;

/** The skills whose name starts with the `/prefix` being typed (nothing once a space follows). */
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
