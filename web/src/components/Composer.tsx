/** The message box: send, stop while running, drop files to upload them, and the skill picker:
 * its button, or `/` typed anywhere in the text, lists the skills (and custom agents); each skill
 * picked shows as a chip and goes out as its `/name` command before the text; an agent picked
 * starts a new thread on it. */
import { useEffect, useRef, useState } from "react";
import { composeMessage, filterChoices, slashAt, togglePicked, withoutQuery, type SkillChoice } from "../state/slash";
import { pickerKey, SkillPicker } from "./SkillPicker";

export function Composer(props: {
  running: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  onFiles: (files: File[]) => void;
  skills?: SkillChoice[];
  /** Picks a custom agent chosen in the picker. */
  onAgent?: (assistantId: string) => void;
  /** Text to put in the box (an example from the start screen), with the skills to pick for it;
   * a new `n` puts it again. */
  fill?: { text: string; n: number; skills?: string[] };
}) {
  const [text, setText] = useState("");
  const [caret, setCaret] = useState(0);
  const [picked, setPicked] = useState<string[]>([]);
  /** The picker opened by its button (with a filter box); a `/` typed in the text opens it too. */
  const [browsing, setBrowsing] = useState(false);
  const [filter, setFilter] = useState("");
  const [closedAt, setClosedAt] = useState<number | null>(null);
  const [over, setOver] = useState(false);
  const [active, setActive] = useState(0);
  const box = useRef<HTMLTextAreaElement>(null);
  const choices = props.skills ?? [];
  const typed = browsing ? null : slashAt(text, caret);
  const slash = typed && typed.start !== closedAt ? typed : null;
  const shown = browsing ? filterChoices(choices.filter((c) => !c.agentId), filter) : slash ? filterChoices(choices, slash.query) : [];
  const open = browsing || shown.length > 0; // a `/` that matches nothing (a path: /mnt/...) opens nothing
  useEffect(() => {
    if (!props.fill) return;
    setText(props.fill.text);
    setCaret(props.fill.text.length);
    setPicked(props.fill.skills ?? []);
  }, [props.fill]);
  useEffect(() => setActive(0), [filter, slash?.query, browsing]);

  const edit = (value: string, at: number) => {
    setText(value);
    setCaret(at);
    box.current?.focus();
    requestAnimationFrame(() => box.current?.setSelectionRange(at, at));
  };
  const close = () => {
    if (browsing) {
      setBrowsing(false);
      box.current?.focus();
    } else if (slash) setClosedAt(slash.start);
  };
  const pick = (choice: SkillChoice) => {
    if (choice.agentId) {
      setText("");
      setPicked([]);
      setBrowsing(false);
      props.onAgent?.(choice.agentId);
      return;
    }
    setPicked((p) => (browsing ? togglePicked(p, choice.name) : p.includes(choice.name) ? p : [...p, choice.name]));
    if (slash) edit(withoutQuery(text, slash), slash.start);
  };
  const send = () => {
    if ((!text.trim() && !picked.length) || props.running) return;
    props.onSend(composeMessage(picked, text));
    setText("");
    setPicked([]);
    setClosedAt(null);
  };
  const keys = { move: setActive, pick, close };
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
      {open && (
        <SkillPicker
          shown={shown}
          active={active}
          picked={picked}
          onPick={pick}
          onHover={setActive}
          filter={browsing ? { value: filter, onChange: setFilter, onKeyDown: (e) => pickerKey(e, shown, active, keys) } : undefined}
        />
      )}
      <button
        type="button"
        className="skill-button"
        aria-expanded={browsing}
        title="Pick skills (or type / in the message)"
        onClick={() => { setFilter(""); setBrowsing((b) => !b); }}
        data-testid="skill-button"
      >
        Skills
      </button>
      <div className="composer-box">
        {picked.length > 0 && (
          <div className="skill-chips" data-testid="skill-chips">
            {picked.map((name) => (
              <span key={name} className="skill-chip" data-testid="skill-chip">
                /{name}
                <button type="button" aria-label={`Remove /${name}`} onClick={() => setPicked((p) => p.filter((n) => n !== name))}>
                  ×
                </button>
              </span>
            ))}
          </div>
        )}
        <textarea
          ref={box}
          value={text}
          placeholder="Message Herdsman (Enter to send, Shift+Enter for a new line, / for skills; drop files to upload)"
          onChange={(e) => {
            setText(e.target.value);
            setCaret(e.target.selectionStart ?? e.target.value.length);
            if (closedAt !== null && e.target.value[closedAt] !== "/") setClosedAt(null);
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart ?? 0)}
          onKeyDown={(e) => {
            if (open && !browsing && pickerKey(e, shown, active, keys)) return;
            if (e.key === "Backspace" && !text && picked.length) {
              setPicked((p) => p.slice(0, -1));
              return;
            }
            if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
          }}
          data-testid="input"
        />
      </div>
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
        <button type="submit" disabled={!text.trim() && !picked.length} data-testid="send">Send</button>
      )}
    </form>
  );
}
