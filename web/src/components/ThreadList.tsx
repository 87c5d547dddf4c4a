/** The threads, newest first, titled from their values, with a search box. */
import { useEffect, useState } from "react";
import type { Thread } from "@langchain/langgraph-sdk";
import { client } from "../api/client";
import { agentLabel, type AgentRecord } from "../state/agents";
import { messageText } from "../state/messages";

/** How often the list is read again while a thread is busy. */
const BUSY_POLL_MS = 2500;

export function threadTitle(thread: Thread): string {
  const values = (thread.values ?? {}) as { title?: string; messages?: { type: string; content: unknown }[] };
  if (values.title) return values.title;
  const first = values.messages?.find((m) => m.type === "human");
  return first ? messageText(first as never).slice(0, 60) || "Untitled" : "New thread";
}

/** The custom agent a thread runs on (nothing for the built-in one). */
function ThreadAgent(props: { thread: Thread; agents: AgentRecord[] }) {
  const label = agentLabel((props.thread.metadata as { assistant_id?: unknown } | null)?.assistant_id, props.agents);
  return label ? <span className="thread-agent" data-testid="thread-agent">{label}</span> : null;
}

export function ThreadList(props: {
  current: string | null;
  refreshKey: number;
  onSelect: (id: string | null) => void;
  onError: (e: string) => void;
  agents?: AgentRecord[];
}) {
  const [threads, setThreads] = useState<Thread[]>([]);
  const [query, setQuery] = useState("");
  const [poll, setPoll] = useState(0);
  const { refreshKey, onError } = props;
  // Only the newest listing is shown: a run's start and end each ask for one, and the first
  // answer (the thread busy, untitled) can arrive after the second.
  useEffect(() => {
    let live = true;
    client.threads
      .search({ limit: 100, sortBy: "updated_at", sortOrder: "desc" })
      .then((found) => live && setThreads(found))
      .catch((e: Error) => live && onError(`Could not list threads: ${e.message}`));
    return () => {
      live = false;
    };
  }, [refreshKey, poll, onError]);
  // A thread whose run goes on out of sight (the page moved to another thread, a scheduled run,
  // another client) says busy until that run ends: look again every few seconds while one does.
  const busy = threads.some((t) => t.status === "busy");
  useEffect(() => {
    if (!busy) return;
    const timer = setTimeout(() => setPoll((n) => n + 1), BUSY_POLL_MS);
    return () => clearTimeout(timer);
  }, [busy, threads]);
  const q = query.trim().toLowerCase();
  const shown = q ? threads.filter((t) => threadTitle(t).toLowerCase().includes(q)) : threads;
  return (
    <nav className="threads" data-testid="threads">
      <button className="new-thread" onClick={() => props.onSelect(null)} data-testid="new-thread">New thread</button>
      <input className="thread-search" placeholder="Search threads" value={query} onChange={(e) => setQuery(e.target.value)} />
      <ul>
        {shown.map((t) => (
          <li key={t.thread_id}>
            <button
              className={t.thread_id === props.current ? "active" : ""}
              onClick={() => props.onSelect(t.thread_id)}
              data-testid="thread-item"
              title={t.thread_id}
            >
              <span className="thread-title">{threadTitle(t)}</span>
              <ThreadAgent thread={t} agents={props.agents ?? []} />
              {t.status !== "idle" && <span className={`thread-status status-${t.status}`}>{t.status}</span>}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
