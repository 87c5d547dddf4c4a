/** Settings kept in this browser: the gateway API key (needed when the gateway has `api_keys`). */
import { useState } from "react";
import { getApiKey, setApiKey } from "../api/key";

export function Settings() {
  const [key, setKey] = useState(getApiKey() ?? "");
  return (
    <details className="settings">
      <summary>Settings</summary>
      <form onSubmit={(e) => { e.preventDefault(); setApiKey(key.trim()); window.location.reload(); }}>
        <label>
          Gateway API key
          <input type="password" value={key} onChange={(e) => setKey(e.target.value)} placeholder="none (auth off)" autoComplete="off" />
        </label>
        <button type="submit">Save</button>
      </form>
    </details>
  );
}
