/** A live card per sub-agent: type, description, status, elapsed time, tokens (growing while its
 * model writes), what it is doing now, and its steps. */
import { memo, useEffect, useState } from "react";
import { formatElapsed, type TaskCard, type Tasks } from "../state/tasks";

function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

const Card = memo(function Card({ card, now, onStop }: { card: TaskCard; now: number; onStop?: (id: string) => void }) {
  const live = card.status === "running" || card.status === "queued" || card.status === "retrying";
  const elapsed = card.durationS ?? (card.startedAt ? Math.max(0, ((card.endedAt ?? now) - card.startedAt) / 1000) : 0);
  return (
    <div className={`card card-${card.status}`} data-testid="subagent-card" data-status={card.status}>
      <div className="card-head">
        <span className="card-type">{card.subagentType}</span>
        <span className="card-status">{card.status.replace("_", " ")}</span>
        {onStop && card.status === "running" && (
          <button className="card-stop" onClick={() => onStop(card.id)} data-testid="card-stop" title="Stop this sub-agent; the run goes on">
            Stop
          </button>
        )}
      </div>
      <div className="card-desc">{card.description}</div>
      <div className="card-meta">
        {(live || elapsed > 0) && <span>{formatElapsed(elapsed)}</span>}{" "}
        <span data-testid="card-tokens">{card.liveTokens ? `≈${card.tokens + card.liveTokens}` : card.tokens} tokens</span>
        {card.model && <span> · {card.model}</span>}
        {live && card.activity && <span className="card-activity" data-testid="card-activity"> · {card.activity}</span>}
      </div>
      {card.steps.length > 0 && (
        <ol className="card-steps">
          {card.steps.slice(-5).map((s, i) => (
            <li key={i}>{s}</li>
          ))}
        </ol>
      )}
      {card.error && card.status !== "cancelled" && <div className="card-error">{card.error}</div>}
    </div>
  );
});

export function SubagentCards({ tasks, onStop }: { tasks: Tasks; onStop?: (id: string) => void }) {
  const cards = Object.values(tasks);
  const live = cards.some((c) => c.status === "running" || c.status === "queued" || c.status === "retrying");
  const now = useNow(live);
  if (cards.length === 0) return null;
  return (
    <div className="cards" data-testid="subagent-cards">
      {cards.map((c) => (
        <Card key={c.id} card={c} now={now} onStop={onStop} />
      ))}
    </div>
  );
}
