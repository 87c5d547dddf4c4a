/** The settings dialog: Memory (facts the agent keeps), Skills (switch, read), Models (key status,
 * MCP servers), Channels (IM platforms and Bark: configured, connected or failing) and the
 * gateway API key kept in this browser. Each tab loads when opened, and a
 * failed call shows its error in the tab while the rest of the page stays usable. */
import { useEffect, useState } from "react";
import { ApiKeyTab } from "./settings/ApiKeyTab";
import { ChannelsTab } from "./settings/ChannelsTab";
import { MemoryTab } from "./settings/MemoryTab";
import { ModelsTab } from "./settings/ModelsTab";
import { SkillsTab } from "./settings/SkillsTab";
import "./settings/Settings.css";

const TABS = [
  { id: "memory", label: "Memory", Panel: MemoryTab },
  { id: "skills", label: "Skills", Panel: SkillsTab },
  { id: "models", label: "Models", Panel: ModelsTab },
  { id: "channels", label: "Channels", Panel: ChannelsTab },
  { id: "apikey", label: "API key", Panel: ApiKeyTab },
] as const;

type TabId = (typeof TABS)[number]["id"];

export function Settings() {
  const [open, setOpen] = useState(false);
  const [tab, setTab] = useState<TabId>("memory");

  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open]);

  const { Panel } = TABS.find((t) => t.id === tab) ?? TABS[0];
  return (
    <div className="settings">
      <button type="button" className="settings-open" onClick={() => setOpen(true)} data-testid="settings-open">Settings</button>
      {open && (
        <div className="settings-overlay" onMouseDown={(e) => { if (e.target === e.currentTarget) setOpen(false); }}>
          <div className="settings-dialog" role="dialog" aria-modal="true" aria-label="Settings" data-testid="settings">
            <div className="settings-head">
              <h2>Settings</h2>
              <button type="button" className="settings-close" onClick={() => setOpen(false)} aria-label="Close settings" data-testid="settings-close">×</button>
            </div>
            <div className="settings-tabs" role="tablist">
              {TABS.map((t) => (
                <button key={t.id} type="button" role="tab" aria-selected={t.id === tab} className={t.id === tab ? "active" : ""}
                  onClick={() => setTab(t.id)} data-testid={`settings-tab-${t.id}`}>
                  {t.label}
                </button>
              ))}
            </div>
            <div className="settings-body" role="tabpanel" aria-label={TABS.find((t) => t.id === tab)?.label}>
              <Panel />
            </div>
          </div>
        </div>
      )}
    </div>
  );
}
