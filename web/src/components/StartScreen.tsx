/** The empty thread: example tasks to try, the skills there are and the user's custom agents, each with one line. */
import type { SkillChoice } from "../state/slash";
import { EXAMPLES } from "../state/slash";

export function StartScreen(props: {
  skills: SkillChoice[];
  onExample: (text: string) => void;
  /** The user's custom agents (``agentId`` set); a click starts the new thread on one. */
  agents?: SkillChoice[];
  current?: string;
  onAgent?: (assistantId: string) => void;
}) {
  const agents = props.agents ?? [];
  return (
    <div className="start" data-testid="start-screen">
      <h2>What should Herdsman do?</h2>
      <p className="start-hint">It works in a sandbox of its own: it reads your uploads, runs commands and puts files in outputs.</p>
      <div className="start-examples">
        {EXAMPLES.map((text) => (
          <button key={text} className="example" onClick={() => props.onExample(text)} data-testid="example">
            {text}
          </button>
        ))}
      </div>
      {props.skills.length > 0 && (
        <>
          <h3>Skills — type / and a name to use one</h3>
          <ul className="start-skills">
            {props.skills.map((s) => (
              <li key={s.name} data-testid="start-skill">
                <code>/{s.name}</code> {s.description.split(". ")[0].replace(/\.$/, "")}
              </li>
            ))}
          </ul>
        </>
      )}
      {agents.length > 0 && (
        <>
          <h3>Your agents — pick one, or type / and its name</h3>
          <ul className="start-skills">
            {agents.map((a) => (
              <li key={a.agentId} data-testid="start-agent">
                <button
                  className="example"
                  aria-pressed={a.agentId === props.current}
                  onClick={() => a.agentId && props.onAgent?.(a.agentId)}
                >
                  <code>/{a.name}</code>
                </button>{" "}
                {a.description.split(". ")[0].replace(/\.$/, "")}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
