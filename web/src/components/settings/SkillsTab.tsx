/** The Skills tab: the skills proposed from the user's runs (to review), then every skill with its
 * source and status, a switch for each, and its SKILL.md. */
import { useState } from "react";
import { getSkill, getSkills, switchSkill, type SkillInfo } from "../../api/settings";
import { CodeBlock } from "../CodeBlock";
import { Markdown } from "../Markdown";
import { SkillProposals } from "./SkillProposals";
import { PanelError, useAction, useLoad } from "./useLoad";

/** A SKILL.md split into its YAML front matter and its Markdown body. */
export function splitSkillFile(text: string): { front: string; body: string } {
  const m = text.replace(/\r\n/g, "\n").match(/^---\n([\s\S]*?)\n---\n?([\s\S]*)$/);
  return m ? { front: m[1], body: m[2] } : { front: "", body: text };
}

function SkillFile({ text }: { text: string }) {
  const { front, body } = splitSkillFile(text);
  return (
    <>
      {front && <CodeBlock code={front} language="yaml" />}
      <Markdown text={body} />
    </>
  );
}

function SkillRow({ skill, canSwitch, onChanged, onError }: {
  skill: SkillInfo;
  canSwitch: boolean;
  onChanged: () => Promise<void>;
  onError: (e: string) => void;
}) {
  const { busy, run } = useAction(onError);
  const [text, setText] = useState<string | null>(null);
  const [pending, setPending] = useState<boolean | null>(null); // the switch as clicked, until the gateway answers
  const toggle = (enabled: boolean) => {
    setPending(enabled);
    void run(async () => {
      await switchSkill(skill.name, enabled);
      await onChanged();
    }).finally(() => setPending(null));
  };
  const read = () => run(async () => {
    if (text !== null) return setText(null);
    setText((await getSkill(skill.name)).content);
  });

  const overridden = skill.status === "overridden";
  return (
    <li className={`skill skill-${skill.status}`} data-testid="skill" data-skill={skill.name} data-source={skill.source} data-status={skill.status}>
      <div className="skill-head">
        <span className="skill-name">{skill.name}</span>
        <span className="badge">{skill.source}</span>
        <span className={`badge status-${skill.status}`} data-testid="skill-status">{skill.status}</span>
        <span className="skill-controls">
          {!overridden && (
            <label title={canSwitch ? "Use this skill in runs that start from now on" : "Skills are off for the whole gateway"}>
              <input type="checkbox" checked={pending ?? skill.enabled} disabled={busy || !canSwitch}
                onChange={(e) => toggle(e.target.checked)} data-testid="skill-toggle" />
              Enabled
            </label>
          )}
          {!overridden && (
            <button type="button" onClick={() => void read()} disabled={busy} data-testid="skill-read">
              {text === null ? "Read SKILL.md" : "Hide SKILL.md"}
            </button>
          )}
        </span>
      </div>
      {skill.description && <div className="skill-desc">{skill.description}</div>}
      {skill.problems.map((p) => <div key={p} className="skill-problem">{p}</div>)}
      {text !== null && (
        <div className="skill-md" data-testid="skill-md">
          <div className="skill-path">{skill.path}</div>
          <SkillFile text={text} />
        </div>
      )}
    </li>
  );
}

export function SkillsTab() {
  const { data, error, loading, reload } = useLoad(getSkills);
  const [actionError, setActionError] = useState("");
  return (
    <section className="settings-tab" data-testid="skills-tab">
      <p className="settings-intro">
        Skills are Markdown playbooks the agent loads when a task fits. A switch applies to runs that start afterwards and is
        kept across restarts.
      </p>
      <PanelError error={error} />
      <PanelError error={actionError} onDismiss={() => setActionError("")} />
      {data && !data.skills_enabled && (
        <p className="notice-box">Skills are off for the whole gateway (skills.enabled: false in config.yaml); set it to true and restart the gateway to use them.</p>
      )}
      <SkillProposals onAccepted={reload} />
      {loading && !data && <p className="empty">Loading skills…</p>}
      {data && data.skills.length === 0 && <p className="empty">No skills found: add folders with a SKILL.md under skills/custom/.</p>}
      {data && data.skills.length > 0 && (
        <ul className="skills">
          {data.skills.map((s) => (
            <SkillRow key={`${s.source}/${s.name}`} skill={s} canSwitch={data.skills_enabled} onChanged={reload} onError={setActionError} />
          ))}
        </ul>
      )}
    </section>
  );
}
