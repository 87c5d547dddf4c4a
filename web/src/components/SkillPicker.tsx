/** The list of the skill picker: each skill (and custom agent) with its one-line description, the
 * highlighted row, a mark on the skills already picked, and, when opened by its button, a filter box
 * that keeps the keyboard. The keys are handled by the composer (`pickerKey`), for the filter box and
 * for a `/` typed in the message alike. */
import type { KeyboardEvent } from "react";
import { moveActive, oneLine, type SkillChoice } from "../state/slash";

/** What a key does in an open picker: moved the highlight, picked the highlighted row, closed it, or nothing. */
export function pickerKey(
  e: KeyboardEvent,
  shown: SkillChoice[],
  active: number,
  on: { move: (i: number) => void; pick: (c: SkillChoice) => void; close: () => void },
): boolean {
  const next = moveActive(active, e.key, shown.length);
  if (next !== null && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
    e.preventDefault();
    on.move(next);
    return true;
  }
  if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") {
    if (!shown.length) return false;
    e.preventDefault();
    on.pick(shown[Math.min(active, shown.length - 1)]);
    return true;
  }
  if (e.key === "Escape") {
    e.preventDefault();
    on.close();
    return true;
  }
  return false;
}

export function SkillPicker(props: {
  shown: SkillChoice[];
  active: number;
  picked: string[];
  onPick: (choice: SkillChoice) => void;
  onHover: (i: number) => void;
  /** The filter box, when the picker was opened by its button. */
  filter?: { value: string; onChange: (v: string) => void; onKeyDown: (e: KeyboardEvent) => void };
}) {
  return (
    <div className="skill-picker" data-testid="skill-picker">
      {props.filter && (
        <input
          autoFocus
          className="skill-filter"
          placeholder="Filter skills (↑↓ to move, Enter to pick, Esc to close)"
          aria-label="Filter skills"
          value={props.filter.value}
          onChange={(e) => props.filter?.onChange(e.target.value)}
          onKeyDown={props.filter.onKeyDown}
          data-testid="skill-filter"
        />
      )}
      {props.shown.length === 0 ? (
        <p className="skill-none" data-testid="skill-none">No skill matches.</p>
      ) : (
        <ul className="slash-menu" role="listbox" aria-multiselectable="true" data-testid="slash-menu">
          {props.shown.map((s, i) => {
            const picked = !s.agentId && props.picked.includes(s.name);
            return (
              <li
                key={s.agentId ?? s.name}
                role="option"
                aria-selected={i === props.active}
                aria-checked={picked}
                className={[i === props.active && "active", picked && "picked"].filter(Boolean).join(" ") || undefined}
                onMouseDown={(e) => { e.preventDefault(); props.onPick(s); }}
                onMouseEnter={() => props.onHover(i)}
                data-testid="slash-item"
              >
                <code>/{s.name}</code> {s.agentId && <em className="slash-kind">agent</em>}
                {picked && <em className="slash-kind">picked</em>} <span>{oneLine(s.description)}</span>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
