/** A folder tree from a flat list of virtual paths. */

export interface TreeNode {
  name: string;
  path: string;
  children: TreeNode[];
  isFile: boolean;
}

export function buildTree(paths: string[], root = "/mnt/user-data"): TreeNode[] {
  const top: TreeNode = { name: "", path: root, children: [], isFile: false };
  for (const full of paths) {
    const rel = full.startsWith(root + "/") ? full.slice(root.length + 1) : full.replace(/^\/+/, "");
    let node = top;
    const parts = rel.split("/").filter(Boolean);
    parts.forEach((part, i) => {
      const path = `${node.path}/${part}`;
      let child = node.children.find((c) => c.name === part);
      if (!child) {
        child = { name: part, path, children: [], isFile: i === parts.length - 1 };
        node.children.push(child);
      }
      node = child;
    });
  }
  return top.children;
}

/** The kind of preview a file gets, by its name. */
export function previewKind(name: string): "image" | "markdown" | "csv" | "html" | "pdf" | "text" | "binary" {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  if (["png", "jpg", "jpeg", "gif", "webp", "svg"].includes(ext)) return "image";
  if (["md", "markdown"].includes(ext)) return "markdown";
  if (ext === "csv") return "csv";
  if (["html", "htm"].includes(ext)) return "html";
  if (ext === "pdf") return "pdf";
  if (["zip", "gz", "tar", "bin", "exe", "so", "xlsx", "docx", "pptx", "mp3", "mp4"].includes(ext)) return "binary";
  return "text";
}

/** Rows of a simple CSV (quoted fields with commas and doubled quotes are handled). */
export function parseCsv(text: string, maxRows = 500): string[][] {
  const rows: string[][] = [];
  for (const line of text.split(/\r?\n/)) {
    if (!line) continue;
    const cells: string[] = [];
    let cell = "";
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const ch = line[i];
      if (quoted) {
        if (ch === '"' && line[i + 1] === '"') { cell += '"'; i++; }
        else if (ch === '"') quoted = false;
        else cell += ch;
      } else if (ch === '"') quoted = true;
      else if (ch === ",") { cells.push(cell); cell = ""; }
      else cell += ch;
    }
    cells.push(cell);
    rows.push(cells);
    if (rows.length >= maxRows) break;
  }
  return rows;
}
