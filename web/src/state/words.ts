/** The harness's own sentences on the page, in English and Chinese (see state/lang.ts for which
 * language a thread gets), the web UI's counterpart of herdsman.language.user_words. */

export type Lang = "en" | "zh";

const EN = {
  "checks.findings": "{n} finding{s}",
  "checks.notes": "{n} note{s}",
  "checks.left": "{n} left",
  "checks.findings_left": "{n} finding{s} left",
  "checks.checking": "checking: {found} so far",
  "checks.left_line": "checked: {found}, {left}",
  "checks.only_left": "checked: {left}",
  "checks.open": "checked: {found}, no answer after",
  "checks.answered": "checked: {found}, then answered",
  "checks.fixed": "checked: {found}, fixed",
  "checks.sent_back": "Reply sent back",
  "checks.check": "Check {n}, sent to the agent",
  "checks.review": "Review {n}, sent to the agent",
  "checks.still_found": "Still found when the run ended",
  "step.text_call": "failed · written as text, not run",
  "step.note_echo": "failed · repeated the harness's note",
  "step.tool_call": "tool call",
  "step.reply": "reply",
  "outcome.failed": "Failed: {error}",
  "outcome.model_failed": "Failed: the model could not be called (its reply says why)",
  "outcome.unusable": "Failed: the model's replies could not be used",
  "outcome.limit": "Stopped at a limit ({reason}): the run did not finish",
  "outcome.stopped": "Stopped: what was written so far is kept",
  "outcome.not_delivered": "Not delivered: the completion check still finds {n} problem{s}{said}",
  "outcome.done": "Done",
  "run.step": "step {n}",
  "run.running": "running {what} · {elapsed}",
  "run.writing": "writing the call {what}",
  "run.characters": "{n} characters",
  "run.subagents": "sub-agents working: {what}",
  "run.subagents_starting": "starting",
  "run.last_tool": "last: {tool}",
  "run.thinking": "the model is thinking · {elapsed}",
  "run.estimate": "about {per} per step here, estimated from the last {n}{pace}",
  "run.pace": ", {rate} tokens/s",
  "run.no_estimate": "no model step measured yet on this machine",
  "badge.thinking": "thinking",
  "badge.subagents": "waiting for sub-agents",
  "badge.calling": "calling {tools}",
  "badge.writing": "writing {tool}",
  "badge.a_call": "a tool call",
};

type Key = keyof typeof EN;

const ZH: Partial<Record<Key, string>> = {
  "checks.findings": "{n} 个问题",
  "checks.notes": "{n} 条提示",
  "checks.left": "还剩 {n} 个",
  "checks.findings_left": "还剩 {n} 个问题",
  "checks.checking": "检查中：目前 {found}",
  "checks.left_line": "已检查：{found}，{left}",
  "checks.only_left": "已检查：{left}",
  "checks.open": "已检查：{found}，之后没有回答",
  "checks.answered": "已检查：{found}，随后已回答",
  "checks.fixed": "已检查：{found}，已修正",
  "checks.sent_back": "被退回的回复",
  "checks.check": "检查 {n}，已发给智能体",
  "checks.review": "复核 {n}，已发给智能体",
  "checks.still_found": "运行结束时仍存在的问题",
  "step.text_call": "失败 · 写成了文字，没有执行",
  "step.note_echo": "失败 · 重复了系统给它的提示",
  "step.tool_call": "工具调用",
  "step.reply": "回复",
  "outcome.failed": "失败：{error}",
  "outcome.model_failed": "失败：无法调用模型（原因见回复）",
  "outcome.unusable": "失败：模型的回复无法使用",
  "outcome.limit": "因达到上限（{reason}）而停止：运行没有完成",
  "outcome.stopped": "已停止：已写出的内容都保留了",
  "outcome.not_delivered": "未交付：完成检查仍发现 {n} 个问题{said}",
  "outcome.done": "完成",
  "run.step": "第 {n} 步",
  "run.running": "正在运行 {what} · {elapsed}",
  "run.writing": "正在写调用 {what}",
  "run.characters": "{n} 个字符",
  "run.subagents": "子智能体工作中：{what}",
  "run.subagents_starting": "启动中",
  "run.last_tool": "最近：{tool}",
  "run.thinking": "模型思考中 · {elapsed}",
  "run.estimate": "本机每步约 {per}，根据最近 {n} 步估计{pace}",
  "run.pace": "，每秒 {rate} 个 token",
  "run.no_estimate": "本机尚未测量过模型步骤",
  "badge.thinking": "思考中",
  "badge.subagents": "等待子智能体",
  "badge.calling": "正在调用 {tools}",
  "badge.writing": "正在写 {tool}",
  "badge.a_call": "工具调用",
};

const TABLES: Record<Lang, Partial<Record<Key, string>>> = { en: EN, zh: ZH };

/** The sentence `key` in `lang` (English when it has none), its `{fields}` filled from `values`;
 * `{s}` is "s" when `values.n` is not 1. */
export function say(key: Key, lang: Lang = "en", values: Record<string, string | number> = {}): string {
  const template = TABLES[lang][key] ?? EN[key];
  const all: Record<string, string | number> = { s: values.n === 1 ? "" : "s", ...values };
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in all ? String(all[name]) : whole));
}
