/** Scheduled runs (crons): the caller's schedules with their next time and last result, a form to
 * schedule a message (on the open thread, or on a new thread each time) and a delete button each.
 * Listed with the SDK (`client.crons.search`) when the threads change and every half minute. */
import { useCallback, useEffect, useState } from "react";
import { ASSISTANT_ID, client } from "../api/client";
import { cronInput, cronMessage, lastResult, nextRun, sdkErrorText, type ScheduledCron } from "../state/crons";

/** How often the list is read again (next times move, runs end). */
const REFRESH_MS = 30_000;

export function ScheduledPanel(props: {
  threadId: string | null;
  refreshKey: number;
  onSelect: (threadId: string) => void;
  onError: (e: string) => void;
}) {
  const { threadId, refreshKey, onError } = props;
  const [crons, setCrons] = useState<ScheduledCron[]>([]);
  const [open, setOpen] = useState(false);
  const [schedule, setSchedule] = useState("0 9 * * 1-5");
  const [message, setMessage] = useState("");
  const [onThread, setOnThread] = useState(false);
  const [problem, setProblem] = useState("");
  const [now, setNow] = useState(() => new Date());

  const load = useCallback(() => {
    client.crons
      .search({ limit: 100, sortBy: "next_run_date", sortOrder: "asc" })
      .then((found) => {
        setCrons(found as unknown as ScheduledCron[]);
        setNow(new Date());
      })
      .catch((e: Error) => onError(`Could not list scheduled runs: ${sdkErrorText(e)}`));
  }, [onError]);

  useEffect(() => {
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, [load, refreshKey]);

  const create = async (event: React.FormEvent) => {
    event.preventDefault();
    setProblem("");
    const payload = { schedule: schedule.trim(), input: cronInput(message.trim()) };
    try {
      if (onThread && threadId) await client.crons.createForThread(threadId, ASSISTANT_ID, payload);
      else await client.crons.create(ASSISTANT_ID, payload);
      setMessage("");
      load();
    } catch (e) {
      setProblem(sdkErrorText(e)); // the gateway says what to fix (e.g. an example schedule)
    }
  };

  const remove = (cronId: string) => {
    client.crons.delete(cronId).then(load, (e: Error) => onError(`Could not delete the scheduled run: ${sdkErrorText(e)}`));
  };

  return (
    <section className="scheduled" data-testid="scheduled">
      <div className="scheduled-head">
        <span>Scheduled</span>
        <button onClick={() => setOpen((o) => !o)} aria-expanded={open} data-testid="schedule-toggle">{open ? "Close" : "New"}</button>
      </div>
      {open && (
        <form onSubmit={create} className="schedule-form" data-testid="schedule-form">
          <label>
            Schedule (cron, UTC)
            <input value={schedule} onChange={(e) => setSchedule(e.target.value)} data-testid="schedule-expr" />
          </label>
          <label>
            Message
            <input value={message} onChange={(e) => setMessage(e.target.value)} placeholder="Summarise the news" data-testid="schedule-message" />
          </label>
          <label className="schedule-where">
            <input type="checkbox" checked={onThread && !!threadId} disabled={!threadId} onChange={(e) => setOnThread(e.target.checked)} data-testid="schedule-on-thread" />
            on this thread (else a new thread each time)
          </label>
          <button type="submit" disabled={!message.trim() || !schedule.trim()} data-testid="schedule-create">Schedule</button>
          {problem && <div className="error" role="alert" data-testid="schedule-error">{problem}</div>}
        </form>
      )}
      <ul>
        {crons.map((cron) => {
          const last = lastResult(cron, now);
          const shownThread = cron.thread_id ?? (cron.on_run_completed === "keep" ? cron.last_run?.thread_id : null);
          return (
            <li key={cron.cron_id} data-testid="cron-item" title={cron.cron_id}>
              <div className="cron-what">{cronMessage(cron) || "(no message)"}</div>
              <div className="cron-when">
                <code>{cron.schedule}</code>{cron.timezone ? ` ${cron.timezone}` : ""} · {cron.thread_id ? "on a thread" : "new thread each time"}
              </div>
              <div className="cron-when" data-testid="cron-next">{nextRun(cron, now)}</div>
              <div className={last.failed ? "cron-last failed" : "cron-last"} data-testid="cron-last">{last.text}</div>
              <div className="cron-actions">
                {shownThread && <button onClick={() => props.onSelect(shownThread)}>Open thread</button>}
                <button onClick={() => remove(cron.cron_id)} data-testid="cron-delete">Delete</button>
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
