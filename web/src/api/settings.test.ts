import { afterEach, describe, expect, it, vi } from "vitest";
import { checkApiKey, deleteFact } from "./settings";

/** A fetch that answers 200 only with one of `keys` (or for everyone when `keys` is null). */
function gateway(keys: string[] | null) {
  return vi.fn(async (_url: string, init?: RequestInit) => {
    const key = (init?.headers as Record<string, string> | undefined)?.["x-api-key"];
    const ok = keys === null || (key !== undefined && keys.includes(key));
    return new Response(JSON.stringify(ok ? { models: [] } : { detail: "API key required" }), { status: ok ? 200 : 401 });
  });
}

afterEach(() => vi.unstubAllGlobals());

describe("checkApiKey", () => {
  it("tells an accepted key from a wrong or missing one", async () => {
    vi.stubGlobal("fetch", gateway(["good"]));
    expect(await checkApiKey("good")).toBe("accepted");
    expect(await checkApiKey("bad")).toBe("rejected");
    expect(await checkApiKey("")).toBe("required");
  });

  it("says no key is needed when auth is off, whatever the key", async () => {
    vi.stubGlobal("fetch", gateway(null));
    expect(await checkApiKey("anything")).toBe("not required");
    expect(await checkApiKey("")).toBe("not required");
  });

  it("reports an unreachable gateway", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => { throw new TypeError("Failed to fetch"); }));
    await expect(checkApiKey("k")).rejects.toThrow("cannot be reached");
  });
});

describe("REST errors", () => {
  it("a failed delete says what failed and what to do; a 204 is success", async () => {
    vi.stubGlobal("window", { localStorage: { getItem: () => null } });
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify({ detail: "No fact 'x' in your memory; list the facts and their ids with GET /api/memory" }), { status: 404 })));
    await expect(deleteFact("x")).rejects.toThrow(/DELETE \/api\/memory\/facts\/x failed \(404\): No fact 'x'.*GET \/api\/memory/);
    vi.stubGlobal("fetch", vi.fn(async () => new Response(null, { status: 204 })));
    await expect(deleteFact("x")).resolves.toBeUndefined();
  });
});
