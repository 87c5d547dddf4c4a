"""Open an .xlsx with openpyxl and print what it holds: sheets, header, formulas and their values, charts.

Usage: python3 check_xlsx.py WORKBOOK.xlsx

openpyxl does not calculate, and a workbook it wrote holds no cached results (Excel and
LibreOffice calculate on opening), so this script works out what it can: SUM, AVERAGE, MIN,
MAX and COUNT of a range, and + - * / of cells and numbers; it prints each formula with that
value. Then ``OK``, or one line per problem (a formula over empty cells or text, a reference
to another sheet that does not exist, an error value, a chart with no data) and exit status 1.
"""

from __future__ import annotations

import ast
import operator
import re
import statistics
import sys
from pathlib import Path

RANGE_FUNCTION_RE = re.compile(r"=(SUM|AVERAGE|MIN|MAX|COUNT)\(([A-Z]+\d+):([A-Z]+\d+)\)", re.IGNORECASE)
CELL_RE = re.compile(r"\$?([A-Z]{1,3})\$?(\d+)")
OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
SHOWN = 12


def arithmetic(node: ast.AST) -> float:
    """The value of an expression of numbers, + - * / and parentheses; ValueError for anything else."""
    if isinstance(node, ast.Expression):
        return arithmetic(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return -arithmetic(node.operand) if isinstance(node.op, ast.USub) else arithmetic(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](arithmetic(node.left), arithmetic(node.right))
    raise ValueError("not plain arithmetic")


def evaluate(ws, formula: str, depth: int = 0) -> float | str | None:
    """The value of ``formula`` on ``ws`` when this script can work it out, a problem text, or None."""
    from openpyxl.utils import column_index_from_string

    def cell_value(col: str, row: int) -> object:
        cell = ws.cell(row, column_index_from_string(col))
        if cell.data_type == "f" and isinstance(cell.value, str) and depth < 5:
            return evaluate(ws, cell.value, depth + 1)
        return cell.value

    if match := RANGE_FUNCTION_RE.fullmatch(formula.replace(" ", "")):
        function, start, end = match.group(1).upper(), CELL_RE.fullmatch(match.group(2)), CELL_RE.fullmatch(match.group(3))
        c0, c1 = sorted((column_index_from_string(start.group(1)), column_index_from_string(end.group(1))))
        r0, r1 = sorted((int(start.group(2)), int(end.group(2))))
        from openpyxl.utils import get_column_letter

        values = [cell_value(get_column_letter(c), r) for c in range(c0, c1 + 1) for r in range(r0, r1 + 1)]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            return f"{formula} covers no numbers (empty cells or text); check the range"
        return {"SUM": sum, "AVERAGE": statistics.fmean, "MIN": min, "MAX": max, "COUNT": len}[function](numbers)
    expression = CELL_RE.sub(lambda m: repr(cell_value(m.group(1), int(m.group(2)))), formula[1:])
    if "None" in expression and re.fullmatch(r"[A-Z0-9$.+\-*/() ]+", formula[1:]):
        return f"{formula} refers to an empty cell"
    try:
        return arithmetic(ast.parse(expression, mode="eval")) if len(expression) < 500 else None
    except ZeroDivisionError:
        return f"{formula} divides by zero"
    except (ValueError, SyntaxError, RecursionError, OverflowError, MemoryError):
        return None


def describe(path: Path) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` for the workbook at ``path``."""
    try:
        from openpyxl import load_workbook
    except ImportError:
        sys.exit("error: openpyxl is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    try:
        wb = load_workbook(str(path))
    except Exception as exc:  # a zip or XML error, whichever openpyxl met first
        sys.exit(f"error: {path} is not a workbook openpyxl can open ({exc}); build it again with make_xlsx.py")
    lines = [f"{path.name}: {len(wb.sheetnames)} sheet(s): {', '.join(wb.sheetnames)}"]
    problems: list[str] = []
    for ws in wb.worksheets:
        header = [str(c.value) for c in ws[1] if c.value is not None] if ws.max_row else []
        formulas = [c for row in ws.iter_rows() for c in row if c.data_type == "f" and isinstance(c.value, str)]
        charts = ws._charts  # openpyxl keeps the charts it read here; there is no public accessor
        lines.append(f"[{ws.title}] {ws.max_row} rows x {ws.max_column} columns, {len(formulas)} formulas, {len(charts)} charts")
        lines.append(f"  header: {' | '.join(header)}")
        results = {cell.coordinate: evaluate(ws, cell.value) for cell in formulas}
        for cell in formulas:
            for sheet in re.findall(r"'?([A-Za-z0-9 _]+)'?!", cell.value):
                if sheet not in wb.sheetnames:
                    problems.append(f"{ws.title}!{cell.coordinate}: {cell.value} refers to sheet {sheet!r}, which does not exist")
            if "#REF!" in cell.value:
                problems.append(f"{ws.title}!{cell.coordinate}: {cell.value} has a broken reference (#REF!)")
            if isinstance(results[cell.coordinate], str):
                problems.append(f"{ws.title}!{cell.coordinate}: {results[cell.coordinate]}")
        shown = formulas if len(formulas) <= 2 * SHOWN else formulas[:SHOWN] + [None] + formulas[-SHOWN:]
        for cell in shown:
            if cell is None:
                lines.append(f"  ... {len(formulas) - 2 * SHOWN} more formulas")
                continue
            result = results[cell.coordinate]
            lines.append(f"  {cell.coordinate}: {cell.value}" + (f" = {result:g}" if isinstance(result, (int, float)) else ""))
        for chart in charts:
            title = ""
            if chart.title is not None and chart.title.tx is not None and chart.title.tx.rich is not None:
                title = "".join(r.t for p in chart.title.tx.rich.p for r in (p.r or []))
            series = len(chart.series)
            lines.append(f"  chart: {chart.tagname} {title!r}, {series} series")
            if not series:
                problems.append(f"{ws.title}: the chart {title!r} has no data series")
    return lines, problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_xlsx.py WORKBOOK.xlsx")
    book_path = Path(sys.argv[1])
    if not book_path.is_file():
        sys.exit(f"error: {book_path} does not exist; build it with make_xlsx.py first")
    shown_lines, found = describe(book_path)
    print("\n".join(shown_lines + found))
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
