import { describe, expect, it } from "vitest";
import { advice, type ChannelRow, sortChannels, summary } from "./channels";

const row = (name: string, state: ChannelRow["state"], error: string | null = null, kind: ChannelRow["kind"] = "chat"): ChannelRow => ({
  name, kind, state, error, enabled: state !== "off", running: state === "running" || state === "degraded",
});

describe("channels", () => {
  it("puts problems first, then running, then the rest, by name", () => {
    const rows = [row("telegram", "off"), row("slack", "running"), row("wecom", "failed", "40001"), row("bark", "degraded", "x", "notify"), row("discord", "running")];
    expect(sortChannels(rows).map((r) => r.name)).toEqual(["wecom", "bark", "discord", "slack", "telegram"]);
  });

  it("counts configured channels that work", () => {
    expect(summary([row("telegram", "off")])).toMatch(/No channel is configured/);
    expect(summary([row("slack", "running"), row("telegram", "off")])).toBe("1 of 1 configured channel working.");
    expect(summary([row("slack", "running"), row("wecom", "failed"), row("bark", "degraded")])).toBe(
      "1 of 3 configured channels working; 2 need attention.");
  });

  it("says what to do about a broken channel", () => {
    expect(advice(row("wecom", "failed"))).toMatch(/channels\.wecom/);
    expect(advice(row("bark", "degraded", "x", "notify"))).toMatch(/last push failed/);
    expect(advice(row("dingtalk", "degraded"))).toMatch(/retrying/);
    expect(advice(row("slack", "running"))).toBeNull();
  });
});
