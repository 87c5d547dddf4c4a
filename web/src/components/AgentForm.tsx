/** Create or edit a custom agent: name, description, instructions, model and skills. */
import { useEffect, useState } from "react";
import { client } from "../api/client";
import { getModels, type ModelInfo } from "../api/rest";
import { getSkills } from "../api/settings";
import { BUILTIN_AGENT, contextOf, EMPTY_FORM, formOf, formProblem, toggleSkill, type AgentForm as Form, type AgentRecord } from "../state/agents";

export function AgentForm(props: { agent: AgentRecord | null; onSaved: (agent: AgentRecord) => void; onClose: () => void }) {
  const { agent, onSaved, onClose } = props;
  const [form, setForm] = useState<Form>(agent ? formOf(agent) : EMPTY_FORM);
  const [models, setModels] = useState<ModelInfo[]>([]);
  const [skills, setSkills] = useState<string[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    getModels().then((r) => setModels(r.models)).catch(() => setModels([]));
    getSkills()
      .then((r) => setSkills(r.skills_enabled ? r.skills.filter((s) => s.status === "enabled").map((s) => s.name) : []))
      .catch(() => setSkills([]));
  }, []);

  const save = async () => {
    const wrong = formProblem(form);
    if (wrong) return setProblem(wrong);
    setSaving(true);
    setProblem(null);
    try {
      const fields = { name: form.name.trim(), description: form.description.trim(), context: contextOf(form, agent?.context ?? {}) };
      const saved = agent
        ? await client.assistants.update(agent.assistant_id, fields)
        : await client.assistants.create({ graphId: BUILTIN_AGENT, ...fields });
      onSaved(saved as AgentRecord);
    } catch (e) {
      setProblem(e instanceof Error ? e.message : String(e));
    } finally {
      setSaving(false);
    }
  };

  const set = (change: Partial<Form>) => {
    setProblem(null);
    setForm((f) => ({ ...f, ...change }));
  };
  return (
    <div className="agent-form" role="dialog" aria-label={agent ? "Edit agent" : "New agent"} data-testid="agent-form">
      <h3>{agent ? `Edit ${agent.name}` : "New agent"}</h3>
      <label>Name<input value={form.name} onChange={(e) => set({ name: e.target.value })} data-testid="agent-name" /></label>
      <label>Description<input value={form.description} onChange={(e) => set({ description: e.target.value })} /></label>
      <label>
        Instructions
        <textarea rows={5} value={form.instructions} placeholder="Who this agent is and how it works"
          onChange={(e) => set({ instructions: e.target.value })} data-testid="agent-instructions" />
      </label>
      <label>
        Model
        <select value={form.model} onChange={(e) => set({ model: e.target.value })} data-testid="agent-model">
          <option value="">The default model</option>
          {models.map((m) => <option key={m.name} value={m.name}>{m.display_name}</option>)}
        </select>
      </label>
      {skills.length > 0 && (
        <fieldset className="agent-skills">
          <legend>Skills</legend>
          {skills.map((s) => (
            <label key={s}>
              <input type="checkbox" checked={(form.skills ?? skills).includes(s)}
                onChange={() => set({ skills: toggleSkill(form.skills, s, skills) })} />
              {s}
            </label>
          ))}
        </fieldset>
      )}
      {problem && <div className="error" role="alert">{problem}</div>}
      <div className="agent-form-actions">
        <button onClick={() => void save()} disabled={saving} data-testid="agent-save">Save</button>
        <button onClick={onClose}>Cancel</button>
      </div>
    </div>
  );
}
