"""Draw a diagram with Graphviz from a short text description (or a DOT file) as SVG and/or PNG.

Usage: python3 diagram.py SPEC.txt --out DIAGRAM.svg [--out DIAGRAM.png]

The description, one statement per line (``#`` starts a comment):

    title: Checkout flow
    direction: LR
    Browser -> API : HTTPS
    API -> Database
    API -- Cache
    Database [cylinder]
    group Backend: API, Database

``title`` is shown above the diagram; ``direction`` is LR (left to right) or TB (top to
bottom, the default); ``->`` draws an arrow, ``--`` a line, ``: text`` labels it; ``[shape]``
gives a node a shape; ``group`` draws a box around nodes. Shapes: rounded (default), box,
ellipse, circle, diamond, cylinder, note, folder, component, person (an ellipse), plaintext. A file ending in .dot or .gv is passed to Graphviz unchanged.
The generated DOT is written next to the first output so a person can edit it later.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHAPES = {"rounded": ("box", "rounded,filled"), "box": ("box", "filled"), "ellipse": ("ellipse", "filled"),
          "circle": ("circle", "filled"), "diamond": ("diamond", "filled"), "cylinder": ("cylinder", "filled"),
          "note": ("note", "filled"), "folder": ("folder", "filled"), "component": ("component", "filled"),
          "person": ("ellipse", "filled"), "plaintext": ("plaintext", "")}  # name -> Graphviz shape, style
FORMATS = {".svg": "svg", ".png": "png"}
EDGE = re.compile(r"^(?P<a>.+?)\s*(?P<op>->|--|<-)\s*(?P<b>[^:]+?)\s*(?::\s*(?P<label>.*))?$")
NODE = re.compile(r"^(?P<name>[^\[\]]+?)\s*(?:\[\s*(?P<shape>[a-z]+)\s*\])?$")
DIRECTIVE = re.compile(r"^(?P<key>title|direction|group\s+[^:]+)\s*:\s*(?P<value>.*)$", re.IGNORECASE)


def quote(text: str) -> str:
    """``text`` as a DOT string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(spec: str) -> tuple[str, int, int]:
    """DOT source for the description, with the number of nodes and edges; exits naming a bad line."""
    title, direction = "", "TB"
    nodes: dict[str, str] = {}  # name -> shape
    edges: list[tuple[str, str, str, str]] = []  # a, b, label, op
    groups: list[tuple[str, list[str]]] = []

    def node(name: str, shape: str | None = None, line_no: int = 0) -> str:
        name = name.strip().strip('"')
        if not name:
            sys.exit(f"error: line {line_no}: a node has no name")
        if re.search(r"[<>=]|^-|-$", name):
            sys.exit(f"error: line {line_no}: cannot read {name!r}; arrows are written 'A -> B' (or 'A -- B' for a line)")
        if shape is not None and shape not in SHAPES:
            sys.exit(f"error: line {line_no}: unknown shape [{shape}]; use one of: {', '.join(SHAPES)}")
        if shape or name not in nodes:
            nodes[name] = shape or nodes.get(name, "rounded")
        return name

    for no, raw in enumerate(spec.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        directive, edge = DIRECTIVE.match(line), EDGE.match(line)
        if directive and not edge:
            key, value = directive["key"].lower(), directive["value"].strip()
            if key == "title":
                title = value
            elif key == "direction":
                if value.upper() not in ("LR", "TB", "RL", "BT"):
                    sys.exit(f"error: line {no}: direction must be LR, TB, RL or BT, not {value!r}")
                direction = value.upper()
            else:
                members = [node(m, None, no) for m in value.split(",") if m.strip()]
                groups.append((directive["key"][5:].strip(), members))
        elif edge:
            a, b = node(edge["a"], None, no), node(edge["b"], None, no)
            if edge["op"] == "<-":
                a, b = b, a
            edges.append((a, b, (edge["label"] or "").strip(), edge["op"]))
        elif match := NODE.match(line):
            node(match["name"], match["shape"], no)
        else:
            sys.exit(f"error: line {no}: cannot read {raw.strip()!r}; write 'A -> B', 'A -> B : label', 'A [shape]' or 'group Name: A, B'")
    if not nodes:
        sys.exit("error: the description has no nodes; write lines such as 'Browser -> Server'")
    out = ["digraph G {", f"  rankdir={direction};", '  graph [fontname="DejaVu Sans", labelloc=t, fontsize=18];',
           '  node [fillcolor="#eef3fb", color="#3465a4", fontname="DejaVu Sans"];',
           '  edge [color="#555753", fontname="DejaVu Sans", fontsize=11];']
    if title:
        out.append(f"  label={quote(title)};")
    for name, shape in nodes.items():
        out.append(f'  {quote(name)} [shape={SHAPES[shape][0]}, style="{SHAPES[shape][1]}"];')
    for i, (label, members) in enumerate(groups):
        out.append(f"  subgraph cluster_{i} {{ label={quote(label)}; style=dashed; color=\"#888a85\";")
        out += [f"    {quote(m)};" for m in members]
        out.append("  }")
    for a, b, label, op in edges:
        attrs = [f"label={quote(label)}"] if label else []
        if op == "--":
            attrs.append("dir=none")
        out.append(f"  {quote(a)} -> {quote(b)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    out.append("}")
    return "\n".join(out) + "\n", len(nodes), len(edges)


def render(dot_source: str, out: Path) -> None:
    """Run Graphviz ``dot`` to write ``out``; exits with its message when it fails."""
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        sys.exit(f"error: --out {out}: end the name with .svg or .png")
    dot = shutil.which("dot")
    if dot is None:
        sys.exit("error: Graphviz is not installed in this sandbox (no 'dot'); ask the administrator to install graphviz")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as home:  # fontconfig's cache goes here, not into the user's workspace
            env = {**os.environ, "HOME": home, "XDG_CACHE_HOME": home, "XDG_CONFIG_HOME": home}
            done = subprocess.run([dot, f"-T{fmt}", "-o", str(out)], input=dot_source, text=True, capture_output=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        sys.exit("error: Graphviz took over 60 s; make the diagram smaller (fewer nodes and edges)")
    if done.returncode != 0:
        sys.exit(f"error: Graphviz failed: {done.stderr.strip()[:500]}\nfix the description (or DOT file) and run again")
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description="A diagram from a text description, drawn by Graphviz.")
    parser.add_argument("spec", help="the description (.txt) or a Graphviz file (.dot, .gv)")
    parser.add_argument("--out", action="append", required=True, help="an .svg or .png to write; give it twice for both")
    args = parser.parse_args()
    spec = Path(args.spec)
    if not spec.is_file():
        sys.exit(f"error: {spec} does not exist; write the description there first")
    text = spec.read_text(encoding="utf-8")
    outs = [Path(o) for o in args.out]
    if spec.suffix.lower() in (".dot", ".gv"):
        source = text
        print(f"read DOT from {spec}")
    else:
        source, n_nodes, n_edges = to_dot(text)
        dot_file = outs[0].with_suffix(".dot")
        dot_file.parent.mkdir(parents=True, exist_ok=True)
        dot_file.write_text(source, encoding="utf-8")
        print(f"{n_nodes} nodes, {n_edges} edges; DOT source in {dot_file}")
    for out in outs:
        render(source, out)


if __name__ == "__main__":
    main()
