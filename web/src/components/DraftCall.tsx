/** The tool call the model is writing, before it arrives whole: its name and its text so far
 * (a draft, see state/drafts.ts); the real call's card replaces it. */
import type { Draft } from "../state/drafts";
import { draftHeadline } from "../state/drafts";

export function DraftCall(props: { draft: Draft }) {
  const { draft } = props;
  const headline = draftHeadline(draft.text);
  return (
    <details className="tool-call tool-writing" open data-testid="tool-call-draft" data-status="writing">
      <summary>
        <span className="tool-name">{draft.name ?? "a tool call"}</span>{" "}
        <span className="tool-status">being written… {draft.chars} characters</span>
        {headline && <code className="tool-headline">{headline}</code>}
      </summary>
      <pre className="draft-text" data-testid="draft-text">{draft.chars > draft.text.length ? "…" : ""}{draft.text}</pre>
    </details>
  );
}
