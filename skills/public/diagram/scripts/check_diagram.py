"""Check a diagram written by diagram.py: open the SVG and print its nodes and edges.

Usage: python3 check_diagram.py DIAGRAM.svg [--nodes "A,B,C"]
       python3 check_diagram.py DIAGRAM.png

For an SVG it lists the nodes and edges Graphviz drew (read with the standard library's XML
parser) and exits 1 when a node named in ``--nodes`` is missing or nothing was drawn. For a PNG
it prints the image size from its header.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path
from xml.etree import ElementTree

SVG = "{http://www.w3.org/2000/svg}"


def svg_graph(path: Path) -> tuple[list[str], list[str], str]:
    """Node names, edge names (``A->B``, ``A--B`` for a line) and the size of a Graphviz SVG; exits when unreadable."""
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as e:
        sys.exit(f"problem: {path} is not a readable SVG ({e}); run diagram.py again")
    found: dict[str, list[str]] = {"node": [], "edge": []}
    for group in root.iter(f"{SVG}g"):
        kind = group.get("class")
        title = group.find(f"{SVG}title")
        if kind in found and title is not None and title.text:
            name = title.text
            if kind == "edge" and group.find(f"{SVG}polygon") is None:  # no arrowhead: drawn as a line
                name = name.replace("->", "--")
            found[kind].append(name)
    return found["node"], found["edge"], f"{root.get('width')} x {root.get('height')}"


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    if not head.startswith(b"\x89PNG\r\n\x1a\n") or head[12:16] != b"IHDR":
        sys.exit(f"problem: {path} is not a PNG; run diagram.py with --out {path}")
    return struct.unpack(">II", head[16:24])


def main() -> None:
    parser = argparse.ArgumentParser(description="Print the nodes and edges of a diagram.")
    parser.add_argument("diagram")
    parser.add_argument("--nodes", default="", help="comma-separated node names that must be there")
    args = parser.parse_args()
    path = Path(args.diagram)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; run diagram.py with --out {path}")
    if path.suffix.lower() == ".png":
        width, height = png_size(path)
        print(f"{path.name}: PNG, {width}x{height} pixels")
        print("OK")
        return
    nodes, edges, size = svg_graph(path)
    print(f"{path.name}: {len(nodes)} nodes, {len(edges)} edges, {size}")
    print("nodes: " + ", ".join(nodes))
    print("edges: " + ", ".join(e.replace("->", " -> ").replace("--", " -- ") for e in edges))
    problems = [f"node {n!r} is missing; add it to the description" for n in args.nodes.split(",") if n.strip() and n.strip() not in nodes]
    if not nodes:
        problems.append("the diagram has no nodes; check the description")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
