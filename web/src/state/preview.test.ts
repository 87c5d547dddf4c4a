import { describe, expect, it } from "vitest";
import { IFRAME_SANDBOX, chosenEntry, isPreviewEvent, portAllowed, portKey, previewChoices, previewUrl, type PreviewListing } from "./preview";

const base: PreviewListing = { pages: [], truncated: false, servers: [], ports: "3000-9000", origin: "http://127.0.0.1:2027" };
const link = { token: "tok", expires_at: 0, origin: "http://127.0.0.1:2027",
  base_url: "http://127.0.0.1:2027/t/tok/preview/t1", files_url: "http://127.0.0.1:2027/t/tok/preview/t1/files/" };

describe("the preview tab's entries", () => {
  it("lists listening ports first, then pages, each opening on the preview origin", () => {
    const choices = previewChoices({
      ...base,
      pages: ["/mnt/user-data/outputs/site/index.html", "/mnt/user-data/workspace/a b.html"],
      servers: [{ job: 1, command: "python3 -m http.server 8000", running: true, ports: [8000], exit_code: null }],
    });
    expect(choices.map((c) => [c.kind, c.label, c.problem])).toEqual([
      ["port", "port 8000 · python3 -m http.server 8000", ""],
      ["page", "outputs/site/index.html", ""],
      ["page", "workspace/a b.html", ""],
    ]);
    expect(previewUrl(link, choices[0])).toBe("http://127.0.0.1:2027/t/tok/preview/t1/8000/");
    expect(previewUrl(link, choices[2])).toBe("http://127.0.0.1:2027/t/tok/preview/t1/files/workspace/a%20b.html");
  });

  it("says why a server cannot be shown", () => {
    const choices = previewChoices({ ...base, servers: [
      { job: 1, command: "node app.js", running: true, ports: [], exit_code: null },
      { job: 2, command: "flask run", running: true, ports: [22, 9500], exit_code: null },
      { job: 3, command: "python3 app.py", running: false, ports: [], exit_code: 1 },
    ] });
    expect(choices.map((c) => c.problem)).toEqual([
      "Nothing listens on a port yet (the ports that can be shown: 3000-9000).",
      "It listens on port 22, 9500, outside the ports that can be shown (3000-9000).",
      "This server has stopped (exit code 1); ask the agent to start it again.",
    ]);
    expect(choices.every((c) => c.target === null)).toBe(true);
  });

  it("says the preview origin is off instead of showing a page", () => {
    const [page] = previewChoices({ ...base, origin: null, pages: ["/mnt/user-data/outputs/a.html"] });
    expect(page.problem).toMatch(/gateway\.preview_origin\.enabled/);
  });

  it("reads port ranges and never lets the frame share an origin", () => {
    expect([2999, 3000, 9000, 9001].map((p) => portAllowed("3000-9000", p))).toEqual([false, true, true, false]);
    expect([8080, 8081, 3500].map((p) => portAllowed("3000-3999, 8080", p))).toEqual([true, false, true]);
    expect(IFRAME_SANDBOX).toContain("allow-scripts");
    expect(IFRAME_SANDBOX).not.toContain("allow-same-origin");
  });
});

describe("the run's preview events", () => {
  const listing = {
    ...base,
    pages: ["/mnt/user-data/outputs/index.html"],
    servers: [{ job: 1, command: "python3 -m http.server 8000", running: true, ports: [8000, 8001], exit_code: null }],
  };

  it("are told from the other custom events", () => {
    expect(isPreviewEvent({ type: "preview", thread_id: "t1", port: 8000, job: 1, command: "x" })).toBe(true);
    expect(isPreviewEvent({ type: "task_started", thread_id: "t1" })).toBe(false);
    expect(isPreviewEvent({ type: "preview", port: "8000" })).toBe(false);
    expect(isPreviewEvent(null)).toBe(false);
  });

  it("select the announced port once it is listed, else the first entry that can be shown", () => {
    const choices = previewChoices(listing);
    expect(chosenEntry(choices, portKey(8001))?.label).toBe("port 8001 · python3 -m http.server 8000");
    expect(chosenEntry(choices, portKey(9000))?.key).toBe(portKey(8000)); // not listed (yet)
    expect(chosenEntry(previewChoices(base), portKey(8000))).toBeUndefined();
  });
});
