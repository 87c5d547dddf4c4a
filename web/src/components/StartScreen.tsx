/** The empty thread: example tasks to try, the skills there are (each with one line, and the example
 * requests its SKILL.md gives: a click puts one in the composer with the skill picked) and the user's
 * custom agents. */
import type { SkillChoice } from "../state/slash";
import { EXAMPLES, oneLine } from "../state/slash";

/** Skills the start screen lists; the rest are one press of Skills (or /) away, so the page fits. */
const START_SKILLS = 6;

export function StartScreen(props: {
  skills: SkillChoice[];
  /** Fills the composer with `text`, and picks `skill` when the example is a skill's. */
  onExample: (text: string, skill?: string) => void;
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
          <h3>Skills — type / anywhere or use the Skills button to pick one or several</h3>
          <ul className="start-skills">
            {props.skills.slice(0, START_SKILLS).map((s) => (
              <li key={s.name} data-testid="start-skill">
                <code>/{s.name}</code> {oneLine(s.description)}
                {(s.examples ?? []).slice(0, 2).map((text) => (
                  <button key={text} className="example skill-example" onClick={() => props.onExample(text, s.name)} data-testid="skill-example">
                    {text}
                  </button>
                ))}
              </li>
            ))}
            {props.skills.length > START_SKILLS && (
              <li className="start-hint" data-testid="start-skills-more">
                and {props.skills.length - START_SKILLS} more: press Skills or type / to see them all
              </li>
            )}
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
                {oneLine(a.description)}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
