/** The language of the harness's own words on the page: the folded checks, a failed step, the
 * line under the header (what the run does now, how it ended). A person who wrote in Chinese reads
 * them in Chinese, as the CLI and the chat channels say them (herdsman.language.user_words); the
 * header's badge too.
 *
 * The language is the thread's: that of the user's latest message (not a note of the harness),
 * told by the script of its letters as herdsman.middleware.language does it (paths, file names,
 * URLs and code aside; a script needs a fifth of the letters); a thread with no message yet follows
 * the browser's language. Only English and Chinese have sentences (state/words.ts); any other
 * language reads English. The rest of the page (buttons, settings) stays English. */
import { createContext, useContext } from "react";
import type { Message } from "@langchain/langgraph-sdk";
import { isHarnessNote, messageText } from "./messages";
import type { Lang } from "./words";

const NOT_WORDS = /```[\s\S]*?(?:```|$)|`[^`]*`|https?:\/\/\S+|[\w./-]*\/[\w./-]*|\b[\w-]+\.\w{1,5}\b/g;
const SCRIPTS: [RegExp, string][] = [
  [/[\p{Script=Hiragana}\p{Script=Katakana}]/u, "ja"],
  [/\p{Script=Hangul}/u, "ko"],
  [/\p{Script=Han}/u, "zh"],
  [/\p{Script=Cyrillic}/u, "ru"],
  [/\p{Script=Arabic}/u, "ar"],
  [/\p{Script=Latin}/u, "en"],
];
const MIN_SHARE = 0.2;

/** "en", "zh", "ja", "ko", "ru", "ar", or "und" (no letters): the language of `text` by the
 * script of its letters, as herdsman.middleware.language.language_of tells it. */
export function languageOf(text: string): string {
  if (text === last.text) return last.lang; // asked again on each streamed chunk of the same thread
  const lang = countScripts(text);
  last = { text, lang };
  return lang;
}

let last = { text: "", lang: "und" };

function countScripts(text: string): string {
  const counts: Record<string, number> = {};
  for (const char of text.slice(0, 4000).replace(NOT_WORDS, " ")) {
    if (!/\p{L}/u.test(char)) continue;
    const found = SCRIPTS.find(([re]) => re.test(char));
    if (found) counts[found[1]] = (counts[found[1]] ?? 0) + 1;
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (!total) return "und";
  if (counts.ja && counts.ja + (counts.zh ?? 0) >= MIN_SHARE * total) return "ja";
  const others = Object.entries(counts).filter(([lang, n]) => lang !== "en" && n >= MIN_SHARE * total);
  others.sort((a, b) => b[1] - a[1]);
  return others.length ? others[0][0] : "en";
}

/** The language of the browser, as a Lang. */
export function browserLanguage(): Lang {
  const lang = typeof navigator !== "undefined" ? navigator.language ?? "" : "";
  return lang.toLowerCase().startsWith("zh") ? "zh" : "en";
}

/** The language the harness speaks in on this thread: its latest user message's, or `fallback`
 * (the browser's) when it has none with letters. */
export function threadLanguage(messages: Message[], fallback: Lang = "en"): Lang {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.type !== "human" || isHarnessNote(m)) continue;
    const lang = languageOf(messageText(m));
    if (lang !== "und") return lang === "zh" ? "zh" : "en";
  }
  return fallback;
}

/** The thread's language, for the components that say the harness's words (App provides it). */
export const LangContext = createContext<Lang>("en");

/** The language the harness speaks in here (see LangContext). */
export function useLang(): Lang {
  return useContext(LangContext);
}
