/** The API key tab: the gateway API key kept in this browser, and whether the gateway accepts it. */
import { useEffect, useState } from "react";
import { getApiKey, setApiKey } from "../../api/key";
import { checkApiKey, type KeyCheck } from "../../api/settings";
import { PanelError, useAction } from "./useLoad";

const VERDICT: Record<KeyCheck, { text: string; ok: boolean }> = {
  accepted: { text: "The gateway accepts this key.", ok: true },
  "not required": { text: "The gateway does not require a key (auth is off).", ok: true },
  rejected: { text: "The gateway rejected this key (401): check it against gateway.api_keys in the gateway's config.", ok: false },
  required: { text: "The gateway requires an API key (401): enter one of gateway.api_keys and save.", ok: false },
};

export function ApiKeyTab() {
  const saved = getApiKey() ?? "";
  const [key, setKey] = useState(saved);
  const [verdict, setVerdict] = useState<{ of: string; check: KeyCheck } | null>(null);
  const [error, setError] = useState("");
  const { busy, run } = useAction(setError);

  const check = (candidate: string) => run(async () => setVerdict({ of: candidate, check: await checkApiKey(candidate) }));
  useEffect(() => {
    void check(saved);
  }, [saved]);

  const shown = verdict && VERDICT[verdict.check];
  return (
    <section className="settings-tab" data-testid="apikey-tab">
      <p className="settings-intro">
        The key this browser sends to the gateway (needed when the gateway has <code>gateway.api_keys</code>). It is kept in
        this browser only.
      </p>
      <PanelError error={error} />
      {shown && (
        <p className={shown.ok ? "key-verdict ok" : "key-verdict bad"} data-testid="key-verdict" data-check={verdict.check}>
          {verdict.of === saved ? "Saved key: " : "Entered key: "}
          {shown.text}
        </p>
      )}
      <form onSubmit={(e) => { e.preventDefault(); setApiKey(key.trim()); window.location.reload(); }}>
        <label>
          Gateway API key
          <input type="password" value={key} onChange={(e) => setKey(e.target.value)} placeholder="none (auth off)"
            autoComplete="off" data-testid="api-key-input" />
        </label>
        <div className="settings-buttons">
          <button type="button" onClick={() => void check(key.trim())} disabled={busy} data-testid="api-key-check">Check</button>
          <button type="submit" data-testid="api-key-save">Save and reload</button>
        </div>
      </form>
    </section>
  );
}
