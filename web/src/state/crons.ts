/** What the Scheduled panel shows of a cron: when it runs next and how its last run ended, in words. */

/** A cron as the gateway returns it (LangGraph's Cron, plus `last_run`: its latest firing). */
export interface ScheduledCron {
  cron_id: string;
  thread_id: string | null;
  schedule: string;
  timezone: string | null;
  enabled: boolean;
  next_run_date: string | null;
  on_run_completed?: string | null;
  payload: Record<string, unknown>;
  last_run?: {
    fired_at: string;
    status: string;
    run_id: string | null;
    thread_id: string | null;
    error: string | null;
  } | null;
}

/** "in 5 min", "in 3 h", "in 2 days" (or "now" when due), from `now` to `when`. */
export function fromNow(when: Date, now: Date): string {
  const minutes = Math.round((when.getTime() - now.getTime()) / 60_000);
  const span = Math.abs(minutes);
  const words = span < 1 ? "" : span < 60 ? `${span} min` : span < 48 * 60 ? `${Math.round(span / 60)} h` : `${Math.round(span / 1440)} days`;
  if (!words) return "now";
  return minutes > 0 ? `in ${words}` : `${words} ago`;
}

/** When the cron runs next, for the panel: "paused", "no more runs" (past its end), or a time and how far. */
export function nextRun(cron: ScheduledCron, now: Date): string {
  if (!cron.enabled) return "paused";
  if (!cron.next_run_date) return "no more runs";
  const when = new Date(cron.next_run_date);
  return `next ${when.toLocaleString([], { dateStyle: "short", timeStyle: "short" })} (${fromNow(when, now)})`;
}

/** How its last run ended: "never run yet", or the status and when, with the error if it failed. */
export function lastResult(cron: ScheduledCron, now: Date): { text: string; failed: boolean } {
  const last = cron.last_run;
  if (!last) return { text: "never run yet", failed: false };
  const failed = last.status === "error" || last.status === "timeout";
  const detail = last.error ? `: ${last.error.slice(0, 120)}` : "";
  return { text: `last ${last.status} ${fromNow(new Date(last.fired_at), now)}${detail}`, failed };
}

/** What the cron asks the agent: the text of the first message of its input, if any. */
export function cronMessage(cron: ScheduledCron): string {
  const input = cron.payload?.input as { messages?: { content?: unknown }[] } | undefined;
  const content = input?.messages?.[0]?.content;
  return typeof content === "string" ? content : "";
}

/** The run input of a new cron: one user message. */
export function cronInput(message: string): { messages: { role: "user"; content: string }[] } {
  return { messages: [{ role: "user", content: message }] };
}

/** The gateway's own words in an SDK error ("HTTP 422: {"detail": "..."}" becomes the detail). */
export function sdkErrorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const match = /^HTTP \d+: (.*)$/s.exec(text);
  if (!match) return text;
  try {
    const detail = JSON.parse(match[1]).detail;
    return typeof detail === "string" ? detail : text;
  } catch {
    return text;
  }
}
