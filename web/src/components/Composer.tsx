/** The message box: send, stop while running, drop files to upload them, and `/` to pick a skill
 * (its command goes in the box) or a custom agent (a new thread starts on it). */
import { useEffect, useState } from "react";
import { pickSkill, slashMatches, type SkillChoice } from "../state/slash";

export function Composer(props: {
  running: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  onFiles: (files: File[]) => void;
  skills?: SkillChoice[];
  /** Picks a custom agent chosen in the `/` menu. */
  onAgent?: (assistantId: string) => void;
  /** Text to put in the box (an example from the start screen); a new `n` puts it again. */
  fill?: { text: string; n: number };
}) {
  const [text, setText] = useState("");
  const [over, setOver] = useState(false);
  const [active, setActive] = useState(0);
  const matches = slashMatches(text, props.skills ?? []);
  useEffect(() => {
    if (props.fill) setText(props.fill.text);
  }, [props.fill]);
  useEffect(() => setActive(0), [text]);
  const pick = (choice: SkillChoice) => {
    if (choice.agentId) {
      setText("");
      props.onAgent?.(choice.agentId);
    } else {
      setText(pickSkill(choice.name));
    }
  };
  const send = () => {
    if (!text.trim() || props.running) return;
    props.onSend(text.trim());
    setText("");
  };
  return (
    <form
      className={`composer${over ? " drop" : ""}`}
      data-testid="composer"
      onSubmit={(e) => { e.preventDefault(); send(); }}
      onDragOver={(e) => { e.preventDefault(); setOver(true); }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        if (e.dataTransfer.files.length) props.onFiles([...e.dataTransfer.files]);
      }}
    >
      <textarea
        value={text}
        placeholder="Message Herdsman (Enter to send, Shift+Enter for a new line; drop files to upload)"
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (matches.length > 0) {
            if (e.key === "ArrowDown" || e.key === "ArrowUp") {
              e.preventDefault();
              const step = e.key === "ArrowDown" ? 1 : matches.length - 1;
              setActive((a) => (a + step) % matches.length);
              return;
            }
            if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
              e.preventDefault();
              pick(matches[Math.min(active, matches.length - 1)]);
              return;
            }
            if (e.key === "Escape") {
              setText(text + " ");
              return;
            }
          }
          if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
        }}
        data-testid="input"
      />
      {matches.length > 0 && (
        <ul className="slash-menu" role="listbox" data-testid="slash-menu">
          {matches.map((s, i) => (
            <li
              key={s.agentId ?? s.name}
              role="option"
              aria-selected={i === active}
              className={i === active ? "active" : ""}
              onMouseDown={(e) => { e.preventDefault(); pick(s); }}
              data-testid="slash-item"
            >
              <code>/{s.name}</code> {s.agentId && <em className="slash-kind">agent</em>} <span>{s.description.split(". ")[0]}</span>
            </li>
          ))}
        </ul>
      )}
      <label className="attach">
        Attach
        <input
          type="file"
          multiple
          hidden
          data-testid="file-input"
          onChange={(e) => {
            if (e.target.files) props.onFiles([...e.target.files]);
            e.target.value = ""; // the same file chosen again (after a refusal) is a new choice
          }}
        />
      </label>
      {props.running ? (
        <button type="button" onClick={props.onStop} data-testid="stop">Stop</button>
      ) : (
        <button type="submit" disabled={!text.trim()} data-testid="send">Send</button>
      )}
    </form>
  );
}
