/** The IM channels as the settings show them: what `GET /api/channels` says, ordered and worded.
 * Pure functions, so the wording and order are tested without a browser. */

export type ChannelState = "off" | "running" | "degraded" | "failed";

/** One line of `GET /api/channels`. */
export interface ChannelRow {
  name: string;
  kind: "chat" | "notify";
  enabled: boolean;
  running: boolean;
  state: ChannelState;
  error: string | null;
}

export const CHANNEL_LABEL: Record<string, string> = {
  telegram: "Telegram",
  slack: "Slack",
  feishu: "Feishu / Lark",
  discord: "Discord",
  dingtalk: "DingTalk",
  wecom: "WeCom",
  whatsapp: "WhatsApp",
  bark: "Bark (push notifications)",
};

export const STATE_LABEL: Record<ChannelState, string> = {
  running: "connected",
  degraded: "having trouble",
  failed: "failed to start",
  off: "not configured",
};

/** Problems first, then the ones that run, then those not configured; by name within each. */
const ORDER: Record<ChannelState, number> = { failed: 0, degraded: 1, running: 2, off: 3 };

export function sortChannels(rows: ChannelRow[]): ChannelRow[] {
  return [...rows].sort((a, b) => ORDER[a.state] - ORDER[b.state] || label(a.name).localeCompare(label(b.name)));
}

/** The display name of a channel (its key when the UI does not know it yet). */
export function label(name: string): string {
  return CHANNEL_LABEL[name] ?? name;
}

/** One line over the list: how many configured channels work. */
export function summary(rows: ChannelRow[]): string {
  const configured = rows.filter((r) => r.enabled);
  if (configured.length === 0) return "No channel is configured: enable one under channels: in config.yaml.";
  const ok = configured.filter((r) => r.state === "running").length;
  const broken = configured.length - ok;
  const head = `${ok} of ${configured.length} configured channel${configured.length === 1 ? "" : "s"} working`;
  return broken ? `${head}; ${broken} need${broken === 1 ? "s" : ""} attention.` : `${head}.`;
}

/** What to do about a channel in `state`, shown under its error. */
export function advice(row: ChannelRow): string | null {
  if (row.state === "failed") return `Fix channels.${row.name} in config.yaml (or the platform's settings) and restart the gateway.`;
  if (row.state === "degraded") return row.kind === "notify" ? "The last push failed; the next run that ends tries again." : "Started, but not connected now; it keeps retrying.";
  return null;
}
