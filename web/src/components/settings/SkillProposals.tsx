/** Skills proposed from the user's runs that worked: each can be reviewed (its SKILL.md, editable,
 * and its scripts), accepted as the user's own skill, or declined. Nothing is installed before Accept. */
import { useState } from "react";
import { acceptProposal, declineProposal, getProposal, getProposals, type SkillProposal } from "../../api/settings";
import { CodeBlock } from "../CodeBlock";
import { PanelError, useAction, useLoad } from "./useLoad";

function ProposalRow({ proposal, onDone, onError }: {
  proposal: SkillProposal;
  onDone: () => Promise<void>;
  onError: (e: string) => void;
}) {
  const { busy, run } = useAction(onError);
  const [files, setFiles] = useState<Record<string, string> | null>(null);
  const [text, setText] = useState("");
  const review = () => run(async () => {
    if (files) return setFiles(null);
    const full = await getProposal(proposal.name);
    setFiles(full.files);
    setText(full.files["SKILL.md"] ?? "");
  });
  const accept = () => run(async () => {
    const edited = files && text !== files["SKILL.md"] ? text : undefined;
    await acceptProposal(proposal.name, edited);
    await onDone();
  });
  const decline = () => run(async () => {
    await declineProposal(proposal.name);
    await onDone();
  });
  return (
    <li className="skill proposal" data-testid="proposal" data-proposal={proposal.name}>
      <div className="skill-head">
        <span className="skill-name">{proposal.name}</span>
        <span className="badge">proposed</span>
        <span className="skill-controls">
          <button type="button" onClick={() => void review()} disabled={busy} data-testid="proposal-review">
            {files ? "Hide" : "Review"}
          </button>
          <button type="button" onClick={() => void accept()} disabled={busy} data-testid="proposal-accept">Accept</button>
          <button type="button" onClick={() => void decline()} disabled={busy} data-testid="proposal-decline">Decline</button>
        </span>
      </div>
      <div className="skill-desc">Learned from: {proposal.request}</div>
      {proposal.parameters.length > 0 && (
        <div className="skill-desc" data-testid="proposal-parameters">
          Parameters: {proposal.parameters.map((p) => `${p.name} (e.g. ${p.value})`).join(", ")}
        </div>
      )}
      {proposal.review.map((note) => <div key={note} className="skill-problem" data-testid="proposal-note">Review: {note}</div>)}
      {files && (
        <div className="skill-md" data-testid="proposal-files">
          <label>
            SKILL.md (edit before accepting if you like)
            <textarea value={text} onChange={(e) => setText(e.target.value)} rows={14} spellCheck={false}
              data-testid="proposal-skill-md" style={{ width: "100%", fontFamily: "monospace" }} />
          </label>
          {Object.entries(files).filter(([path]) => path !== "SKILL.md").map(([path, code]) => (
            <div key={path} data-testid="proposal-script">
              <div className="skill-path">{path}</div>
              <CodeBlock code={code} language={path.endsWith(".py") ? "python" : "bash"} />
            </div>
          ))}
        </div>
      )}
    </li>
  );
}

/** The proposals list; `onAccepted` reloads the skills once one is installed. */
export function SkillProposals({ onAccepted }: { onAccepted: () => Promise<void> }) {
  const { data, error, reload } = useLoad(getProposals);
  const [actionError, setActionError] = useState("");
  if (!data || (data.proposals.length === 0 && !error)) return null;
  const done = async () => {
    await reload();
    await onAccepted();
  };
  return (
    <section className="proposals" data-testid="skill-proposals">
      <h3>Proposed skills</h3>
      <p className="settings-intro">
        Learned from your runs that worked. Review one before accepting it: accepted, it becomes your own skill (use it with /name).
      </p>
      <PanelError error={error} />
      <PanelError error={actionError} onDismiss={() => setActionError("")} />
      <ul className="skills">
        {data.proposals.map((p) => <ProposalRow key={p.name} proposal={p} onDone={done} onError={setActionError} />)}
      </ul>
    </section>
  );
}
