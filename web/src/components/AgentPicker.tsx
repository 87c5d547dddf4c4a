/** The agent picker: the built-in lead and the user's custom agents (POST /assistants/search);
 * picking one starts a new thread on it. New and Edit open the agent form. */
import { useEffect, useState } from "react";
import { client } from "../api/client";
import { BUILTIN_AGENT, type AgentRecord } from "../state/agents";
import { AgentForm } from "./AgentForm";

export function AgentPicker(props: {
  value: string;
  onChange: (assistantId: string) => void;
  onAgents: (agents: AgentRecord[]) => void;
  onError: (e: string) => void;
  reloadKey: number;
}) {
  const { value, onChange, onAgents, onError, reloadKey } = props;
  const [agents, setAgents] = useState<AgentRecord[]>([]);
  const [editing, setEditing] = useState<AgentRecord | null | "new">(null);
  const [loaded, setLoaded] = useState(0);

  useEffect(() => {
    let live = true; // only the newest list counts (an older answer can arrive later)
    client.assistants
      .search({ limit: 100, sortBy: "name", sortOrder: "asc" })
      .then((found) => {
        if (!live) return;
        const list = found as AgentRecord[];
        setAgents(list);
        onAgents(list);
      })
      .catch((e: Error) => live && onError(`Could not list agents: ${e.message}`));
    return () => {
      live = false;
    };
  }, [reloadKey, loaded, onAgents, onError]);

  const current = agents.find((a) => a.assistant_id === value);
  return (
    <div className="agent-picker">
      <label className="model-picker">
        Agent
        <select value={value} onChange={(e) => onChange(e.target.value)} data-testid="agent-picker">
          {agents.map((a) => (
            <option key={a.assistant_id} value={a.assistant_id}>{a.assistant_id === BUILTIN_AGENT ? "Herdsman (built in)" : a.name}</option>
          ))}
        </select>
      </label>
      <div className="agent-actions">
        <button onClick={() => setEditing("new")} data-testid="agent-new">New agent</button>
        {current && value !== BUILTIN_AGENT && (
          <button onClick={() => setEditing(current)} data-testid="agent-edit">Edit</button>
        )}
      </div>
      {editing !== null && (
        <AgentForm
          agent={editing === "new" ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={(saved) => {
            setEditing(null);
            setLoaded((n) => n + 1);
            onChange(saved.assistant_id);
          }}
        />
      )}
    </div>
  );
}
