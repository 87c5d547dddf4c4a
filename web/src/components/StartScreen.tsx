/** The empty thread: example tasks to try and the skills there are, each with one line. */
import type { SkillChoice } from "../state/slash";
import { EXAMPLES } from "../state/slash";

export function StartScreen(props: { skills: SkillChoice[]; onExample: (text: string) => void }) {
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
    </div>
  );
}
