import { describe, expect, it } from "vitest";
import { buildTree, formatSize, previewKind } from "./tree";

describe("files tree", () => {
  it("nests the gateway's entries, folders first, and keeps sizes", () => {
    const tree = buildTree([
      { path: "/mnt/user-data/workspace", kind: "dir" },
      { path: "/mnt/user-data/outputs", kind: "dir" },
      { path: "/mnt/user-data/workspace/z.txt", kind: "file", size: 3 },
      { path: "/mnt/user-data/workspace/src", kind: "dir" },
      { path: "/mnt/user-data/workspace/src/app.py", kind: "file", size: 65, content_type: "text/x-python" },
    ]);
    expect(tree.map((n) => n.name)).toEqual(["outputs", "workspace"]);
    const workspace = tree[1];
    expect(workspace.children.map((n) => [n.name, n.isFile])).toEqual([["src", false], ["z.txt", true]]);
    expect(workspace.children[0].children[0]).toMatchObject({ path: "/mnt/user-data/workspace/src/app.py", size: 65, isFile: true });
    expect(tree[0].children).toEqual([]);
  });

  it("makes up folders a truncated listing left out", () => {
    const tree = buildTree([{ path: "/mnt/user-data/outputs/deep/a.md", kind: "file", size: 1 }]);
    expect(tree[0]).toMatchObject({ name: "outputs", isFile: false });
    expect(tree[0].children[0].children[0].name).toBe("a.md");
  });

  it("tells binary files from text ones and formats sizes", () => {
    expect(previewKind("archive.zip")).toBe("binary");
    expect(previewKind("song", "audio/mpeg")).toBe("binary");
    expect(previewKind("Makefile", "application/octet-stream")).toBe("text");
    expect(previewKind("report.md")).toBe("markdown");
    expect(formatSize(512)).toBe("512 B");
    expect(formatSize(1536)).toBe("1.5 KB");
    expect(formatSize(50 * 2 ** 20)).toBe("50 MB");
  });
});
