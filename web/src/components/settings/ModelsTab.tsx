/** The Models tab: each configured model, its class and whether its API key is set (never the
 * key itself), and the MCP servers with their state. */
import { getMcpStatus, getModelStatus, type KeyState } from "../../api/settings";
import { PanelError, useLoad } from "./useLoad";

const KEY_LABEL: Record<KeyState, string> = {
  set: "key set",
  missing: "key missing",
  "not needed": "no key needed",
  unknown: "key unknown",
};

function Models() {
  const { data, error, loading } = useLoad(getModelStatus);
  return (
    <>
      <PanelError error={error} />
      {loading && !data && <p className="empty">Loading models…</p>}
      {data && (
        <table className="settings-table" data-testid="models-table">
          <thead>
            <tr><th>Model</th><th>Class</th><th>API key</th></tr>
          </thead>
          <tbody>
            {data.models.map((m) => (
              <tr key={m.name} data-testid="model-row" data-model={m.name} data-key={m.api_key}>
                <td>
                  <div className="model-name">{m.display_name}{m.name === data.default && <span className="badge">lead</span>}</div>
                  <div className="muted">{[m.name !== m.display_name && m.name, m.model].filter(Boolean).join(" · ")}</div>
                </td>
                <td><code>{m.use}</code></td>
                <td>
                  <span className={`badge key-${m.api_key.replace(" ", "-")}`} data-testid="model-key">{KEY_LABEL[m.api_key] ?? m.api_key}</span>
                  {m.api_key_env && <code className="key-env">{m.api_key_env}</code>}
                  {m.api_key_hint && <div className="muted">{m.api_key_hint}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function McpServers() {
  const { data, error } = useLoad(getMcpStatus);
  return (
    <>
      <h4>MCP servers</h4>
      <PanelError error={error} />
      {data && data.servers.length === 0 && <p className="empty">No MCP servers configured (mcp: in config.yaml).</p>}
      {data && data.servers.length > 0 && (
        <ul className="mcp-servers">
          {data.servers.map((s) => (
            <li key={s.name} data-testid="mcp-server">
              <strong>{s.name}</strong> <span className="muted">{s.transport}</span>{" "}
              <span className={`badge mcp-${s.state}`}>{s.state.replace("_", " ")}</span>
              {s.tools.length > 0 && <span className="muted"> · {s.tools.length} tool(s)</span>}
              {s.error && <div className="skill-problem">{s.error}</div>}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

export function ModelsTab() {
  return (
    <section className="settings-tab" data-testid="models-tab">
      <p className="settings-intro">The models of config.yaml. Keys are never shown, only whether each model has one.</p>
      <Models />
      <McpServers />
    </section>
  );
}
