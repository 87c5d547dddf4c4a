/** The files panel's model: a folder tree from the gateway's listing (GET /api/threads/{id}/files),
 * the kind of preview a file gets, and a small CSV reader for table previews. */

export interface TreeNode {
  name: string;
  path: string;
  children: TreeNode[];
  isFile: boolean;
  size: number | null;
  modified: string | null;
  contentType: string | null;
}

/** What buildTree needs of a listed entry (a FileEntry of api/rest.ts has it). */
export interface ListedEntry {
  path: string;
  kind: "file" | "dir";
  size?: number | null;
  modified?: string | null;
  content_type?: string | null;
}

/** The tree below `root` of listed entries: folders first, then files, each by name. Folders missing
 * from the listing (a truncated one) are made up from the paths of what they hold. */
export function buildTree(entries: ListedEntry[], root = "/mnt/user-data"): TreeNode[] {
  const folder = (name: string, path: string): TreeNode => ({ name, path, children: [], isFile: false, size: null, modified: null, contentType: null });
  const top = folder("", root);
  const byPath = new Map<string, TreeNode>([[root, top]]);
  const nodeFor = (path: string): TreeNode => {
    let node = byPath.get(path);
    if (!node) {
      const cut = path.lastIndexOf("/");
      node = folder(path.slice(cut + 1), path);
      byPath.set(path, node);
      (path.startsWith(root + "/") && cut > root.length ? nodeFor(path.slice(0, cut)) : top).children.push(node);
    }
    return node;
  };
  for (const e of [...entries].sort((a, b) => a.path.split("/").length - b.path.split("/").length)) {
    if (!e.path.startsWith(root + "/")) continue;
    const node = nodeFor(e.path);
    Object.assign(node, { isFile: e.kind === "file", size: e.size ?? null, modified: e.modified ?? null, contentType: e.content_type ?? null });
  }
  const order = (nodes: TreeNode[]) => {
    nodes.sort((a, b) => Number(a.isFile) - Number(b.isFile) || a.name.localeCompare(b.name));
    nodes.forEach((n) => order(n.children));
  };
  order(top.children);
  return top.children;
}

/** A byte count for people: "512 B", "3.4 KB", "12 MB". */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : value.toFixed(0)} ${units[unit]}`;
}

const BINARY_EXTENSIONS = ["zip", "gz", "tgz", "bz2", "xz", "7z", "tar", "bin", "exe", "dll", "so", "o", "a", "class", "jar", "pyc",
  "xlsx", "xls", "docx", "doc", "pptx", "ppt", "odt", "ods", "mp3", "mp4", "wav", "ogg", "webm", "mov", "avi", "flac",
  "woff", "woff2", "ttf", "otf", "sqlite", "db", "parquet", "npy", "pkl", "ico", "bmp", "tiff"];

/** The kind of preview a file gets, by its name and, when known, the media type the gateway gave it.
 * "text" files are still checked for NUL bytes when loaded (a binary file with a misleading name). */
export function previewKind(name: string, contentType?: string | null): "image" | "markdown" | "csv" | "html" | "pdf" | "text" | "binary" {
  const ext = name.includes(".") ? (name.toLowerCase().split(".").pop() ?? "") : "";
  if (["png", "jpg", "jpeg", "gif", "webp", "svg"].includes(ext)) return "image";
  if (["md", "markdown"].includes(ext)) return "markdown";
  if (ext === "csv") return "csv";
  if (["html", "htm"].includes(ext)) return "html";
  if (ext === "pdf") return "pdf";
  if (BINARY_EXTENSIONS.includes(ext)) return "binary";
  if (contentType && /^(audio|video|font)\//.test(contentType)) return "binary";
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
