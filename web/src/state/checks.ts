/** The harness's notes to the model, folded: one "checked: 2 findings, fixed" line per turn.
 *
 * When the completion check finds a final reply lacking, it adds a note (a human message named
 * "harness", "[harness check] ..." or "[harness review] ..." from the verifier) and the model runs
 * again. The notes are the harness talking to the model, not the conversation: within one turn
 * (from a user message to the next), they and the replies they sent back are gathered into one
 * fold, shown with the turn's final answer; the tool calls the model made after a note stay in the
 * conversation (they are real actions).
 *
 * Whether the findings were fixed comes from the thread state's `completion_unresolved` (what the
 * check still found when its rounds ran out). It is reset at each run, so it speaks for the latest
 * turn only: an earlier turn answered after its last note says "then answered", not "fixed" (the
 * check may have run out of rounds there; nothing in its messages tells). Pure functions over the
 * messages; the view is components/CheckFold.tsx. */
import type { Message } from "@langchain/langgraph-sdk";
import { say, type Lang } from "./words";
import { isHarnessNote, messageText } from "./messages";

/** One note the harness sent the model. */
export interface HarnessNote {
  /** Its index in the thread's messages. */
  index: number;
  /** "check" for the rules' notes, "review" for the verifier's. */
  kind: "check" | "review";
  /** Its text without the "[harness check]" prefix. */
  text: string;
  /** The rule ids of its findings (`additional_kwargs.herdsman_findings`), or null when the note carries none. */
  rules: string[] | null;
  /** The reply the note sent back (a text answer the check found lacking), when there is one. */
  sentBack: string | null;
}

/** What was still found when the run ended (an item of `completion_unresolved`). */
export interface OpenFinding {
  rule: string | null;
  text: string;
}

export type FoldStatus = "fixed" | "left" | "answered" | "checking" | "open";

/** The notes of one turn, and how the turn ended. */
export interface CheckFold {
  /** Index of the user message that starts the turn (-1 when the thread starts with notes). */
  turn: number;
  /** Index of the message the fold is shown after: the turn's final answer, or its last shown message. */
  at: number;
  notes: HarnessNote[];
  /** Findings when every note carries its rule ids, else the number of notes. */
  count: number;
  unit: "finding" | "note";
  /** fixed: answered after the last note, and the state says nothing is left; left: the check
   * still found `left`; answered: answered after the last note, what was left not known (an
   * earlier turn); checking: the turn's run is going on; open: no answer after its last note. */
  status: FoldStatus;
  left: OpenFinding[];
}

export interface Folded {
  /** Folds by the index of the message they are shown after. */
  byAnchor: Map<number, CheckFold>;
  /** Indices of messages not shown in the conversation (the notes, and the replies they sent back). */
  hidden: Set<number>;
}

const PREFIX = /^\s*\[harness (check|review)\]\s*/;

function toolCalls(m: Message): unknown[] {
  return m.type === "ai" ? ((m as { tool_calls?: unknown[] }).tool_calls ?? []) : [];
}

/** An AI message that answers (text, no tool call). */
function isAnswer(m: Message | undefined): boolean {
  return !!m && m.type === "ai" && toolCalls(m).length === 0 && messageText(m).trim() !== "";
}

/** The rule ids a note carries (`additional_kwargs.herdsman_findings`: objects with a `rule`), or null. */
export function noteRules(m: Message): string[] | null {
  const findings = (m as { additional_kwargs?: { herdsman_findings?: unknown } }).additional_kwargs?.herdsman_findings;
  if (!Array.isArray(findings)) return null;
  return findings
    .map((f) => (f && typeof f === "object" && typeof (f as { rule?: unknown }).rule === "string" ? (f as { rule: string }).rule : null))
    .filter((r): r is string => r !== null);
}

/** `completion_unresolved` as findings: strings (the problem's text) or objects with a `rule`. */
export function openFindings(unresolved: unknown): OpenFinding[] {
  if (!Array.isArray(unresolved)) return [];
  return unresolved.map((item) => {
    if (typeof item === "string") return { rule: null, text: item };
    if (item && typeof item === "object") {
      const o = item as Record<string, unknown>;
      const text = [o.message, o.text, o.detail].find((v) => typeof v === "string") as string | undefined;
      return { rule: typeof o.rule === "string" ? o.rule : null, text: text ?? "" };
    }
    return { rule: null, text: String(item) };
  });
}

/** The turns of a thread: [start, end) index ranges, each starting at a user message (not a note). */
function turns(messages: Message[]): [number, number][] {
  const starts: number[] = [];
  messages.forEach((m, i) => {
    if (m.type === "human" && !isHarnessNote(m)) starts.push(i);
  });
  if (starts[0] !== 0) starts.unshift(0);
  return starts.map((s, k) => [s, k + 1 < starts.length ? starts[k + 1] : messages.length]);
}

/** Fold the harness's notes of each turn. `unresolved` is the thread state's `completion_unresolved`
 * (undefined when not known); `busy` says the latest turn's run is going on. */
export function foldChecks(messages: Message[], options: { unresolved?: unknown; busy?: boolean } = {}): Folded {
  const byAnchor = new Map<number, CheckFold>();
  const hidden = new Set<number>();
  const ranges = messages.length ? turns(messages) : [];
  ranges.forEach(([start, end], k) => {
    const latest = k === ranges.length - 1;
    const notes: HarnessNote[] = [];
    for (let i = start; i < end; i++) {
      const m = messages[i];
      if (!isHarnessNote(m)) continue;
      const text = messageText(m);
      const before = messages[i - 1];
      const sentBack = i - 1 >= start && isAnswer(before) ? messageText(before) : null;
      if (sentBack !== null) hidden.add(i - 1);
      hidden.add(i);
      notes.push({
        index: i,
        kind: PREFIX.exec(text)?.[1] === "review" ? "review" : "check",
        text: text.replace(PREFIX, ""),
        rules: noteRules(m),
        sentBack,
      });
    }
    // while a run goes on, the state's findings are the previous run's (they are reset when it starts)
    const known = latest && !options.busy && Array.isArray(options.unresolved);
    const left = known ? openFindings(options.unresolved) : [];
    if (notes.length === 0 && left.length === 0) return;
    const lastNote = notes.length ? notes[notes.length - 1].index : start;
    const answered = end - 1 > lastNote && isAnswer(messages[end - 1]);
    let status: FoldStatus;
    if (latest && options.busy) status = "checking";
    else if (left.length > 0) status = "left";
    else if (!answered) status = "open";
    else status = known ? "fixed" : "answered";
    let at = end - 1;
    while (at > start && (hidden.has(at) || messages[at].type === "tool")) at--;
    const withRules = notes.every((n) => n.rules !== null && n.rules.length > 0);
    byAnchor.set(at, {
      turn: isHarnessNote(messages[start]) ? -1 : start,
      at,
      notes,
      count: withRules ? notes.reduce((sum, n) => sum + n.rules!.length, 0) : notes.length,
      unit: withRules ? "finding" : "note",
      status,
      left,
    });
  });
  return { byAnchor, hidden };
}

/** The fold's one line in `lang` (the thread's): "checked: 2 findings, fixed", "checked: 2 findings, 1 left", ... */
export function checkLine(fold: CheckFold, lang: Lang = "en"): string {
  const found = say(fold.unit === "finding" ? "checks.findings" : "checks.notes", lang, { n: fold.count });
  // "1 left" after a count of findings; "1 finding left" after a count of notes, or alone
  const left = say(fold.unit === "finding" && fold.notes.length ? "checks.left" : "checks.findings_left", lang, { n: fold.left.length });
  switch (fold.status) {
    case "checking":
      return say("checks.checking", lang, { found });
    case "left":
      return say(fold.notes.length ? "checks.left_line" : "checks.only_left", lang, { found, left });
    case "open":
      return say("checks.open", lang, { found });
    case "answered":
      return say("checks.answered", lang, { found });
    default:
      return say("checks.fixed", lang, { found });
  }
}
