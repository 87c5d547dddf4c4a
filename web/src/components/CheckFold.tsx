/** The harness's notes of one turn as one line ("checked: 2 findings, fixed") that opens to show
 * each note, its rule ids and the reply it sent back. A details/summary, so the keyboard opens it;
 * the notes are rendered only once it is open, in the thread's language (state/lang.ts; the notes
 * themselves are what the model read). See state/checks.ts for how the fold is made. */
import { memo, useState } from "react";
import { checkLine, type CheckFold as Fold } from "../state/checks";
import { useLang } from "../state/lang";
import { say } from "../state/words";
import { Markdown } from "./Markdown";

export const CheckFold = memo(function CheckFold({ fold }: { fold: Fold }) {
  const [open, setOpen] = useState(false);
  const lang = useLang();
  return (
    <details className={`check-fold check-status-${fold.status}`} data-testid="check-fold" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary data-testid="check-line">{checkLine(fold, lang)}</summary>
      {open && (
        <div className="check-body" data-testid="check-body">
          {fold.notes.map((note, i) => (
            <div className="check-note" key={note.index} data-testid="check-note">
              {note.sentBack !== null && (
                <div className="check-sent-back">
                  <div className="check-label">{say("checks.sent_back", lang)}</div>
                  <Markdown text={note.sentBack} />
                </div>
              )}
              <div className="check-label">
                {say(note.kind === "review" ? "checks.review" : "checks.check", lang, { n: i + 1 })}
                {note.rules?.map((rule) => (
                  <code className="check-rule" key={rule} data-testid="check-rule">{rule}</code>
                ))}
              </div>
              <Markdown text={note.text} />
            </div>
          ))}
          {fold.left.length > 0 && (
            <div className="check-note check-left" data-testid="check-left">
              <div className="check-label">{say("checks.still_found", lang)}</div>
              <ul>
                {fold.left.map((f, i) => (
                  <li key={i}>
                    {f.rule && <code className="check-rule">{f.rule}</code>} {f.text}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </details>
  );
});
