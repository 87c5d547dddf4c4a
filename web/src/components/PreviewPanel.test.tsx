import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { PreviewView } from "./PreviewPanel";

const page = { key: "page-a", kind: "page" as const, label: "outputs/a.html", target: "/mnt/user-data/outputs/a.html", problem: "" };

describe("the preview frame", () => {
  it("shows the page from the preview origin in a frame sandboxed without allow-same-origin", () => {
    const html = renderToStaticMarkup(<PreviewView choice={page} url="http://127.0.0.1:2027/t/tok/preview/t1/files/outputs/a.html" />);
    expect(html).toContain('src="http://127.0.0.1:2027/t/tok/preview/t1/files/outputs/a.html"');
    const sandbox = /sandbox="([^"]*)"/.exec(html)?.[1] ?? "";
    expect(sandbox.split(" ")).toContain("allow-scripts");
    expect(sandbox).not.toContain("allow-same-origin");
    expect(html).toMatch(/referrerpolicy="no-referrer"/i);
  });

  it("says why an entry cannot be shown instead of a frame", () => {
    const html = renderToStaticMarkup(<PreviewView choice={{ ...page, kind: "port", problem: "Nothing listens on a port yet." }} url="http://x" />);
    expect(html).toContain("Nothing listens on a port yet.");
    expect(html).not.toContain("<iframe");
  });
});
