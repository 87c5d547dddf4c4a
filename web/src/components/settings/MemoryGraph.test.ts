import { afterEach, describe, expect, it, vi } from "vitest";
import {
  correctRelation, deleteEntity, deleteRelation, endRelation, getMemoryAudit, purgeMemory, setMemoryEnabled, type MemoryGraph,
  type Relation,
} from "../../api/settings";
import { auditText } from "./MemoryAudit";
import { correction, entityRows, relationText, today } from "./MemoryGraph";

const rel = (id: string, subject: string, object: string, from: string, to: string | null, predicate = "deploys_to"): Relation => ({
  id, subject, object, predicate, subject_name: subject.toUpperCase(), object_name: object.toUpperCase(),
  valid_from: from, valid_to: to, confidence: 0.9,
});

const graph: MemoryGraph = {
  entities: [
    { id: "gcp", name: "GCP", kind: "service", aliases: [] },
    { id: "atlas", name: "Atlas", kind: "project", aliases: ["atlas-api"] },
    { id: "aws", name: "AWS", kind: "service", aliases: [] },
    { id: "ann", name: "Ann", kind: "person", aliases: [] },
  ],
  relations: [
    rel("r1", "atlas", "aws", "2026-01-10", "2026-03-01"),
    rel("r2", "atlas", "gcp", "2026-03-01", null),
    rel("r3", "ann", "atlas", "2026-02-01T09:00:00+00:00", null, "works_on"),
  ],
};

afterEach(() => vi.unstubAllGlobals());

describe("the memory graph", () => {
  it("lists each entity with what is true now and its history, under every entity a relation names", () => {
    const rows = entityRows(graph);
    expect(rows.map((r) => r.entity.name)).toEqual(["Ann", "Atlas", "AWS", "GCP"]);
    const atlas = rows[1];
    expect(atlas.now.map((r) => r.id)).toEqual(["r2", "r3"]);
    expect(atlas.past.map((r) => r.id)).toEqual(["r1"]);
    expect(rows[2].now).toEqual([]);
    expect(rows[2].past.map((r) => r.id)).toEqual(["r1"]);
  });

  it("says when a relation held", () => {
    expect(relationText(graph.relations[1])).toBe("ATLAS deploys to GCP (since 2026-03-01)");
    expect(relationText(graph.relations[0])).toBe("ATLAS deploys to AWS (2026-01-10 – 2026-03-01)");
    expect(relationText(graph.relations[2])).toBe("ANN works on ATLAS (since 2026-02-01)");
  });

  it("deletes, switches and purges through the caller's /api/memory routes", async () => {
    vi.stubGlobal("window", { localStorage: { getItem: () => null } });
    const seen: string[] = [];
    vi.stubGlobal("fetch", vi.fn(async (url: string, init?: RequestInit) => {
      seen.push(`${init?.method ?? "GET"} ${url} ${init?.body ?? ""}`.trim());
      if (init?.method === "PUT") return new Response(JSON.stringify({ enabled: false }), { status: 200 });
      if (init?.method === "PATCH") return new Response(JSON.stringify(rel("r2", "atlas", "gcp", "2026-03-01", "2026-05-01")), { status: 200 });
      return new Response(null, { status: 204 });
    }));
    await deleteRelation("r/1");
    await deleteEntity("atlas");
    expect((await endRelation("r2", "2026-05-01")).valid_to).toBe("2026-05-01");
    await correctRelation("r2", { object: "Azure" });
    expect(await setMemoryEnabled(false)).toEqual({ enabled: false });
    await purgeMemory();
    expect(seen.map((s) => s.replace(/^(\w+) \S*?(\/api\/)/, "$1 $2"))).toEqual([
      "DELETE /api/memory/relations/r%2F1", "DELETE /api/memory/entities/atlas",
      'PATCH /api/memory/relations/r2 {"valid_to":"2026-05-01"}', 'PATCH /api/memory/relations/r2 {"object":"Azure"}',
      'PUT /api/memory/settings {"enabled":false}', "DELETE /api/memory",
    ]);
  });

  it("a correction sends only what changed, and nothing when nothing did", () => {
    const r = graph.relations[1];
    expect(correction(r, "deploys_to", " Azure ")).toEqual({ object: "Azure" });
    expect(correction(r, "hosted on", "GCP")).toEqual({ predicate: "hosted on" });
    expect(correction(r, "deploys_to", "GCP")).toBeNull();
    expect(correction(r, " ", "")).toBeNull();
  });

  it("ends a relation today, as a date the gateway reads", () => {
    expect(today()).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it("a missing relation's 404 says what to do", async () => {
    vi.stubGlobal("window", { localStorage: { getItem: () => null } });
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify({ detail: "No relation 'x' in your memory; list them with GET /api/memory/graph" }), { status: 404 })));
    await expect(deleteRelation("x")).rejects.toThrow(/404.*GET \/api\/memory\/graph/);
  });
});

describe("the memory audit trail", () => {
  it("reads the caller's /api/memory/audit and says each write in one line", async () => {
    vi.stubGlobal("window", { localStorage: { getItem: () => null } });
    const record = { key: "k1", at: "2026-03-01T12:00:05+00:00", action: "put", kind: "relation", id: "r1",
      origin: "updater", thread_id: "t-1", run_id: "run-1" };
    const seen: string[] = [];
    vi.stubGlobal("fetch", vi.fn(async (url: string) => {
      seen.push(url);
      return new Response(JSON.stringify({ records: [record] }), { status: 200 });
    }));
    const { records } = await getMemoryAudit();
    expect(seen.map((u) => u.replace(/^.*?(\/api\/)/, "$1"))).toEqual(["/api/memory/audit"]);
    expect(auditText(records[0])).toBe("2026-03-01 12:00 put relation r1 (updater, thread t-1, run run-1)");
    expect(auditText({ ...record, origin: "cli", thread_id: null, run_id: null })).toBe(
      "2026-03-01 12:00 put relation r1 (cli)");
    const fact = { ...record, kind: "fact", id: "f1", quote: "I work at Acme" };
    expect(auditText(fact)).toBe("2026-03-01 12:00 put fact f1 (updater, thread t-1, run run-1) from your words “I work at Acme”");
    const refused = { ...fact, action: "refuse", content: "Ana works at Google", quote: "my project Atlas deploys to GCP",
      reason: "not in the user's words: google" };
    expect(auditText(refused)).toBe("2026-03-01 12:00 refuse fact f1 (updater, thread t-1, run run-1) “Ana works at Google” "
      + "quoting “my project Atlas deploys to GCP” refused: not in the user's words: google");
  });
});
