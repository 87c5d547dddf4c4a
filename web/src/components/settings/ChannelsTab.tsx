/** The Channels tab: every IM platform and Bark, whether it is configured, connected or failing,
 * and why (from `GET /api/channels`). Read-only: channels are set in config.yaml. */
import { getChannels } from "../../api/settings";
import { advice, label, STATE_LABEL, sortChannels, summary } from "../../state/channels";
import { PanelError, useLoad } from "./useLoad";

export function ChannelsTab() {
  const { data, error, loading, reload } = useLoad(getChannels);
  const rows = data ? sortChannels(data) : [];
  return (
    <section className="settings-tab" data-testid="channels-tab">
      <p className="settings-intro">
        Chat apps the agent answers in, and Bark pushes. They are set under <code>channels:</code> in config.yaml.{" "}
        <button type="button" className="link" onClick={() => void reload()} disabled={loading} data-testid="channels-reload">Refresh</button>
      </p>
      <PanelError error={error} />
      {loading && !data && <p className="empty">Loading channels…</p>}
      {data && <p className="muted" data-testid="channels-summary">{summary(data)}</p>}
      {data && (
        <ul className="channels">
          {rows.map((r) => (
            <li key={r.name} data-testid="channel" data-channel={r.name} data-state={r.state}>
              <strong>{label(r.name)}</strong>{" "}
              <span className={`badge channel-${r.state}`}>{STATE_LABEL[r.state] ?? r.state}</span>
              {r.error && <div className="skill-problem" data-testid="channel-error">{r.error}</div>}
              {advice(r) && <div className="muted">{advice(r)}</div>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
