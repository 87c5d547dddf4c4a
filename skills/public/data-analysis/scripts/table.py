"""Read a CSV, TSV or .xlsx (first sheet) into a header and rows, with the standard library only."""

from __future__ import annotations

import csv
import re
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _xlsx(path: Path) -> list[list[str]]:
    with zipfile.ZipFile(path) as z:
        shared: list[str] = []
        if "xl/sharedStrings.xml" in z.namelist():
            root = ElementTree.fromstring(z.read("xl/sharedStrings.xml"))
            shared = ["".join(t.text or "" for t in si.iter(f"{{{NS['m']}}}t")) for si in root.findall("m:si", NS)]
        sheet = ElementTree.fromstring(z.read("xl/worksheets/sheet1.xml"))
    rows: list[list[str]] = []
    for row in sheet.iter(f"{{{NS['m']}}}row"):
        cells: dict[int, str] = {}
        for c in row.findall("m:c", NS):
            ref = re.match(r"([A-Z]+)", c.get("r", "A"))
            col = 0
            for ch in ref.group(1) if ref else "A":
                col = col * 26 + ord(ch) - 64
            v = c.find("m:v", NS)
            text = v.text if v is not None and v.text is not None else ""
            if c.get("t") == "s" and text:
                text = shared[int(text)]
            elif c.get("t") == "inlineStr":
                text = "".join(t.text or "" for t in c.iter(f"{{{NS['m']}}}t"))
            cells[col - 1] = text
        if cells:
            rows.append([cells.get(i, "") for i in range(max(cells) + 1)])
    return rows


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of the file; exits with a clear message when it cannot be read."""
    p = Path(path)
    if not p.is_file():
        sys.exit(f"error: {path} does not exist; list the uploads with: ls /mnt/user-data/uploads")
    if p.suffix.lower() in (".xlsx", ".xlsm"):
        rows = _xlsx(p)
    elif p.suffix.lower() == ".xls":
        sys.exit("error: old .xls files are not supported; ask the user for .xlsx or CSV")
    else:
        text = p.read_text(encoding="utf-8-sig", errors="replace")
        dialect = csv.excel_tab if p.suffix.lower() == ".tsv" else csv.Sniffer().sniff(text[:4096], ",;\t|")
        rows = [r for r in csv.reader(text.splitlines(), dialect) if r]
    if not rows:
        sys.exit(f"error: {path} has no rows")
    header = [h.strip() or f"column_{i + 1}" for i, h in enumerate(rows[0])]
    body = [r + [""] * (len(header) - len(r)) for r in rows[1:]]
    return header, body


def number(text: str) -> float | None:
    """``text`` as a number (1,234.5 / 12% / -3), or None."""
    t = text.strip().replace(",", "").rstrip("%")
    try:
        return float(t)
    except ValueError:
        return None
