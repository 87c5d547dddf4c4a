/** The message box: send, stop while running, and drop files to upload them. */
import { useState } from "react";

export function Composer(props: {
  running: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  onFiles: (files: File[]) => void;
}) {
  const [text, setText] = useState("");
  const [over, setOver] = useState(false);
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
        onKeyDown={(e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); } }}
        data-testid="input"
      />
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
