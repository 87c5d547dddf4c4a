"""Build an Excel workbook (.xlsx) with data, formulas and charts, with openpyxl.

Usage: python3 make_xlsx.py SPEC.json OUT.xlsx

SPEC.json:
    {"sheets": [{"name": "Sales",
                 "columns": ["Region", "Q1", "Q2"],
                 "rows": [["North", 100, 120], ["South", 250, 75]],
                 "formulas": {"Total": "=B{row}+C{row}"},
                 "totals": "SUM",
                 "chart": {"type": "bar", "title": "Revenue", "x": "Region", "y": ["Q1", "Q2"]}}]}
Instead of "columns" and "rows", "csv": "/mnt/user-data/uploads/file.csv" reads a CSV (its
first line is the header). "formulas" adds one column per entry, ``{row}`` being each row's
number. "totals" (SUM, AVERAGE, MIN, MAX or COUNT) adds a last row over every number column.
"chart" (bar, line or pie) draws the "y" columns against the "x" column. Text that looks like a
number is stored as a number; text starting with "=" is a formula in "rows" but stays text in
a CSV (an uploaded file must not bring formulas that Excel would run).
Every mistake exits with status 1 and says what to fix.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

FUNCTIONS = ("SUM", "AVERAGE", "MIN", "MAX", "COUNT")
CHARTS = ("bar", "line", "pie")


def fail(message: str) -> None:
    """Exit with ``error: message`` and status 1."""
    sys.exit(f"error: {message}")


def value(cell: object) -> object:
    """A cell as stored: numbers for numeric text (1,234.5 / 12%), formulas and text as given."""
    if not isinstance(cell, str) or cell.startswith("="):
        return cell
    text = cell.strip().replace(",", "")
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else (int(text) if re.fullmatch(r"-?\d+", text) else float(text))
    except ValueError:
        return cell


def table(sheet: dict, where: str) -> tuple[list[str], list[list[object]]]:
    """The header and rows of one sheet spec, from "columns"/"rows" or "csv"."""
    if "csv" in sheet:
        path = Path(str(sheet["csv"]))
        if not path.is_file():
            fail(f'{where}: "csv": {path} does not exist; check the path with ls /mnt/user-data/uploads')
        found = [r for r in csv.reader(path.read_text(encoding="utf-8-sig").splitlines()) if r]
        if not found:
            fail(f'{where}: "csv": {path} is empty')
        header, rows = found[0], found[1:]
    else:
        header, rows = sheet.get("columns"), sheet.get("rows")
        if not isinstance(header, list) or not header or not isinstance(rows, list):
            fail(f'{where}: give "columns" (a list of names) and "rows" (a list of lists), or "csv": a file path')
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, list) or len(row) != len(header):
            fail(f"{where}: row {n} has {len(row) if isinstance(row, list) else 'no'} cells but there are {len(header)} columns; make every row a list of {len(header)} values")
        for c, cell in enumerate(row):
            if cell is not None and not isinstance(cell, (str, int, float, bool)):
                fail(f"{where}: row {n}, column {header[c]!r} holds {json.dumps(cell)}; a cell is a number or a text")
    return [str(h) for h in header], [[value(c) for c in row] for row in rows]


def column_of(name: str, header: list[str], where: str) -> int:
    """The 1-based column of ``name``; exits naming the real columns when it is not one."""
    if name not in header:
        fail(f"{where}: no column {name!r}; the columns are: {', '.join(header)}")
    return header.index(name) + 1


def add_chart(ws, spec: dict, header: list[str], last_row: int, where: str) -> None:
    """Draw the chart ``spec`` from rows 2..``last_row`` next to the data."""
    from openpyxl.chart import BarChart, LineChart, PieChart, Reference
    from openpyxl.utils import get_column_letter

    kind = str(spec.get("type", "bar")).lower()
    if kind not in CHARTS:
        fail(f'{where}: chart "type" {kind!r} is not one of {", ".join(CHARTS)}')
    if "x" not in spec or not spec.get("y"):
        fail(f'{where}: a chart needs "x" (the label column) and "y" (a list of number columns)')
    ys = spec["y"] if isinstance(spec["y"], list) else [spec["y"]]
    chart = {"bar": BarChart, "line": LineChart, "pie": PieChart}[kind]()
    if spec.get("title"):
        chart.title = str(spec["title"])
    for name in ys[:1] if kind == "pie" else ys:
        col = column_of(str(name), header, where)
        chart.add_data(Reference(ws, min_col=col, min_row=1, max_row=last_row), titles_from_data=True)
    x = column_of(str(spec["x"]), header, where)
    chart.set_categories(Reference(ws, min_col=x, min_row=2, max_row=last_row))
    if kind != "pie":
        chart.x_axis.title, chart.y_axis.title = str(spec["x"]), ", ".join(map(str, ys))
    chart.width, chart.height = 18, 9
    ws.add_chart(chart, f"{get_column_letter(len(header) + 2)}2")


def add_sheet(wb, sheet: dict, index: int) -> str:
    """Fill one worksheet from its spec; returns a one-line summary."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    if not isinstance(sheet, dict):
        fail(f"sheet {index}: each entry of \"sheets\" must be an object with columns and rows")
    name = re.sub(r"[\\/*?:\[\]]", "-", str(sheet.get("name") or f"Sheet{index}"))[:31]  # Excel's forbidden characters
    where = f"sheet {name!r}"
    header, rows = table(sheet, where)
    formulas = sheet.get("formulas") or {}
    if not isinstance(formulas, dict) or not all(str(f).startswith("=") for f in formulas.values()):
        fail(f'{where}: "formulas" maps a new column name to a formula starting with "=", e.g. {{"Total": "=B{{row}}+C{{row}}"}}')
    ws = wb.create_sheet(name)
    ws.append(header + list(formulas))
    for r, row in enumerate(rows, start=2):
        ws.append(row + [str(f).replace("{row}", str(r)) for f in formulas.values()])
        if "csv" in sheet:  # an uploaded file's "=..." is text, never a formula Excel would run
            for cell in ws[r][: len(header)]:
                if cell.data_type == "f":
                    cell.data_type = "s"
    last = len(rows) + 1
    full = header + list(formulas)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    ws.freeze_panes = "A2"
    for c, title in enumerate(full, start=1):
        widest = max([len(str(title))] + [len(str(ws.cell(r, c).value or "")) for r in range(2, min(last, 200) + 1)])
        ws.column_dimensions[get_column_letter(c)].width = min(60, max(10, widest + 2))
    summary = f"{name}: {len(rows)} rows x {len(full)} columns"
    if sheet.get("totals"):
        function = str(sheet["totals"]).upper()
        if function not in FUNCTIONS:
            fail(f'{where}: "totals" {sheet["totals"]!r} is not one of {", ".join(FUNCTIONS)}')
        total_row = last + 1
        ws.cell(total_row, 1, "Total" if function == "SUM" else function.title()).font = Font(bold=True)
        numeric = [c for c in range(2, len(full) + 1)
                   if c > len(header) or any(isinstance(row[c - 1], (int, float)) for row in rows)]
        for c in numeric:
            letter = get_column_letter(c)
            ws.cell(total_row, c, f"={function}({letter}2:{letter}{last})").font = Font(bold=True)
        summary += f", row {total_row} holds the {function} of each number column"
    if sheet.get("chart"):
        if not isinstance(sheet["chart"], dict):
            fail(f'{where}: "chart" must be an object like {{"type": "bar", "x": "{header[0]}", "y": ["{full[-1]}"]}}')
        add_chart(ws, sheet["chart"], full, last, where)
        summary += f", a {sheet['chart'].get('type', 'bar')} chart"
    return summary


def main(argv: list[str]) -> None:
    """``make_xlsx.py SPEC.json OUT.xlsx``."""
    if len(argv) != 2:
        fail("usage: make_xlsx.py SPEC.json OUT.xlsx")
    source, out = Path(argv[0]), Path(argv[1])
    if out.suffix.lower() != ".xlsx":
        fail(f"the output {out} must end in .xlsx")
    if not source.is_file():
        fail(f"{source} does not exist; write the spec there first")
    try:
        spec = json.loads(source.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        fail(f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; fix it and run again")
    if not isinstance(spec, dict) or not isinstance(spec.get("sheets"), list) or not spec["sheets"]:
        fail(f'{source}: the spec must be an object with a "sheets" list, e.g. {{"sheets": [{{"name": "Data", "columns": ["A"], "rows": [[1]]}}]}}')
    try:
        from openpyxl import Workbook
    except ImportError:
        fail("openpyxl is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    wb = Workbook()
    wb.remove(wb.active)
    summaries = [add_sheet(wb, sheet, i) for i, sheet in enumerate(spec["sheets"], start=1)]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        wb.save(str(out))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; write it under /mnt/user-data/outputs")
    print(f"wrote {out}:")
    print("\n".join(f"  {s}" for s in summaries))
    print(f"check it with: python3 {Path(__file__).with_name('check_xlsx.py')} {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
