import { describe, expect, it } from "vitest";
import { cronInput, cronMessage, fromNow, lastResult, nextRun, sdkErrorText, type ScheduledCron } from "./crons";

const NOW = new Date("2030-03-10T12:00:00Z");

function cron(over: Partial<ScheduledCron>): ScheduledCron {
  return { cron_id: "c1", thread_id: null, schedule: "0 9 * * *", timezone: null, enabled: true,
    next_run_date: "2030-03-10T12:30:00+00:00", payload: { input: cronInput("daily report") }, last_run: null, ...over };
}

describe("cron display", () => {
  it("says how far a time is, ahead or behind", () => {
    expect(fromNow(new Date("2030-03-10T12:30:00Z"), NOW)).toBe("in 30 min");
    expect(fromNow(new Date("2030-03-10T09:00:00Z"), NOW)).toBe("3 h ago");
    expect(fromNow(new Date("2030-03-14T12:00:00Z"), NOW)).toBe("in 4 days");
    expect(fromNow(NOW, NOW)).toBe("now");
  });

  it("shows the next run, a paused cron and one past its end", () => {
    expect(nextRun(cron({}), NOW)).toMatch(/^next .*\(in 30 min\)$/);
    expect(nextRun(cron({ enabled: false, next_run_date: null }), NOW)).toBe("paused");
    expect(nextRun(cron({ next_run_date: null }), NOW)).toBe("no more runs");
  });

  it("shows the last result, marking failures with their error", () => {
    expect(lastResult(cron({}), NOW)).toEqual({ text: "never run yet", failed: false });
    const ok = { fired_at: "2030-03-10T11:00:00+00:00", status: "success", run_id: "r", thread_id: "t", error: null };
    expect(lastResult(cron({ last_run: ok }), NOW)).toEqual({ text: "last success 1 h ago", failed: false });
    const bad = { ...ok, status: "error", run_id: null, error: "thread t already has run r in progress" };
    expect(lastResult(cron({ last_run: bad }), NOW)).toEqual({
      text: "last error 1 h ago: thread t already has run r in progress", failed: true,
    });
  });

  it("reads the message a cron sends", () => {
    expect(cronMessage(cron({}))).toBe("daily report");
    expect(cronMessage(cron({ payload: {} }))).toBe("");
  });

  it("shows the gateway's words of an SDK error", () => {
    expect(sdkErrorText(new Error('HTTP 422: {"detail":"Invalid request: schedule \'x\' is not a cron expression"}')))
      .toBe("Invalid request: schedule 'x' is not a cron expression");
    expect(sdkErrorText(new Error("HTTP 500: <html>"))).toBe("HTTP 500: <html>");
    expect(sdkErrorText(new Error("Failed to fetch"))).toBe("Failed to fetch");
  });
});
