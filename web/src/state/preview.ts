/** What the Preview tab offers: the thread's HTML pages and the ports its background servers
 * listen on (GET /api/threads/{id}/preview), each with the URL it opens at on the preview origin,
 * or the reason it cannot be shown. Pages the agent wrote never open on the gateway's own origin. */

export interface PreviewServer {
  job: number;
  command: string;
  running: boolean;
  ports: number[];
  exit_code: number | null;
}

export interface PreviewListing {
  pages: string[];
  truncated: boolean;
  servers: PreviewServer[];
  /** The previewable ports, e.g. "3000-9000". */
  ports: string;
  /** The preview origin, or null when it is off. */
  origin: string | null;
}

export interface PreviewLink {
  token: string;
  expires_at: number;
  origin: string;
  base_url: string;
  files_url: string;
}

export interface PreviewChoice {
  key: string;
  kind: "page" | "port";
  label: string;
  /** Virtual path of a page, or the port of a server. */
  target: string | number | null;
  /** Why it cannot be shown; "" when it can. */
  problem: string;
}

/** Whether `port` is in a range list such as "3000-3999,8080". */
export function portAllowed(ranges: string, port: number): boolean {
  return ranges.split(",").some((part) => {
    const [low, high] = part.trim().split("-").map((n) => Number(n));
    return port >= low && port <= (Number.isFinite(high) ? high : low);
  });
}

/** The entries of the Preview tab: listening ports first (a running server is what the user
 * asked to see), then the HTML pages; a server that cannot be shown says why. */
export function previewChoices(listing: PreviewListing): PreviewChoice[] {
  const choices: PreviewChoice[] = [];
  const off = listing.origin ? "" : "The preview origin is off (gateway.preview_origin.enabled in config.yaml).";
  for (const s of listing.servers) {
    const command = s.command.length > 60 ? `${s.command.slice(0, 57)}…` : s.command;
    if (!s.running) {
      choices.push({ key: `job-${s.job}`, kind: "port", label: command, target: null,
        problem: `This server has stopped${s.exit_code != null ? ` (exit code ${s.exit_code})` : ""}; ask the agent to start it again.` });
      continue;
    }
    const shown = s.ports.filter((p) => portAllowed(listing.ports, p));
    const outside = s.ports.filter((p) => !portAllowed(listing.ports, p));
    for (const port of shown) {
      choices.push({ key: portKey(port), kind: "port", label: `port ${port} · ${command}`, target: port, problem: off });
    }
    if (shown.length === 0) {
      const why = outside.length
        ? `It listens on port ${outside.join(", ")}, outside the ports that can be shown (${listing.ports}).`
        : `Nothing listens on a port yet (the ports that can be shown: ${listing.ports}).`;
      choices.push({ key: `job-${s.job}`, kind: "port", label: command, target: null, problem: why });
    }
  }
  for (const page of listing.pages) {
    choices.push({ key: `page-${page}`, kind: "page", label: page.replace(/^\/mnt\/user-data\//, ""), target: page, problem: off });
  }
  return choices;
}

/** Where `choice` opens on the preview origin with `link` (a page by its path, a port at its root). */
export function previewUrl(link: PreviewLink, choice: PreviewChoice): string {
  if (choice.kind === "port") return `${link.base_url}/${choice.target}/`;
  const path = String(choice.target).replace(/^\/mnt\/user-data\//, "").split("/").map(encodeURIComponent).join("/");
  return `${link.files_url}${path}`;
}

/** The iframe's sandbox: scripts and forms run, but never with allow-same-origin (an opaque origin). */
export const IFRAME_SANDBOX = "allow-scripts allow-forms allow-modals allow-popups allow-downloads";

/** A `preview` event of the run's custom stream: a port started listening in the thread's sandbox
 * (the gateway checks after each bash call). */
export interface PreviewEvent {
  type: "preview";
  thread_id: string;
  port: number;
  job: number;
  command: string;
}

/** Whether a custom stream event is a `preview` event. */
export function isPreviewEvent(data: unknown): data is PreviewEvent {
  const d = data as Partial<PreviewEvent> | null;
  return !!d && typeof d === "object" && d.type === "preview" && typeof d.port === "number" && typeof d.thread_id === "string";
}

/** The key of a server's entry on `port` in {@link previewChoices}. */
export function portKey(port: number): string {
  return `port-${port}`;
}

/** The entry the tab shows: the one picked (or announced by a `preview` event) while it is listed,
 * else the first that can be shown. */
export function chosenEntry(choices: PreviewChoice[], selected: string | null): PreviewChoice | undefined {
  return choices.find((c) => c.key === selected) ?? choices.find((c) => !c.problem);
}
