"""Run one SQL query over CSV files and write the result as CSV or Markdown.

Usage:
  python3 query.py FILE.csv [FILE.csv ...] --schema
  python3 query.py FILE.csv [FILE.csv ...] --sql "SELECT ..." --out RESULT.csv|RESULT.md
  python3 query.py FILE.csv [FILE.csv ...] --sql-file QUERY.sql --out RESULT.csv|RESULT.md

Each file (CSV, TSV, or the first sheet of an .xlsx) becomes a table named after the file (``sales-2024.csv`` -> ``sales_2024``), its
columns named after the header (lowercase, spaces and symbols -> ``_``). A column whose filled
cells are all whole numbers is INTEGER, all numbers REAL, else TEXT; empty cells are NULL.
It uses SQLite from Python's standard library: no server and nothing to install. The query is
read-only: statements that write, ATTACH another database or load extensions are refused, and
a query running over two minutes is stopped.
"""

from __future__ import annotations

import argparse
import csv
import re
import sqlite3
import sys
import time
from pathlib import Path

MAX_SHOWN = 10
QUERY_SECONDS = 120


def identifier(text: str, fallback: str) -> str:
    """``text`` as a plain SQL name: lowercase letters, digits and ``_``, not starting with a digit."""
    name = re.sub(r"[^0-9a-z]+", "_", text.strip().lower()).strip("_") or fallback
    return f"t_{name}" if name[0].isdigit() else name


def number(text: str) -> int | float | None:
    """A cell as an int or float ("1,234.5" and "12%" included), or None when it is not a number."""
    t = text.strip().replace(",", "").rstrip("%")
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return None


def xlsx_rows(path: Path) -> list[list[str]]:
    """The cells of the first sheet of an .xlsx file as text (needs openpyxl)."""
    try:
        import openpyxl
    except ImportError:
        sys.exit(f"error: reading {path} needs openpyxl, which is not installed here; save the sheet as CSV")
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = book.worksheets[0]
        return [["" if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
    finally:
        book.close()


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV, TSV or semicolon file; exits with what to fix when it cannot."""
    if not path.is_file():
        sys.exit(f"error: {path} does not exist; list the files with: ls /mnt/user-data/uploads")
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xlsm"):
        rows = xlsx_rows(path)
    elif suffix in (".xls", ".parquet", ".json", ".ods", ".zip", ".gz"):
        sys.exit(f"error: {path} is not a CSV; give CSV, TSV or .xlsx files (save other formats as CSV first)")
    else:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        try:
            dialect = csv.excel_tab if suffix == ".tsv" else csv.Sniffer().sniff(text[:4096], ",;\t|")
        except csv.Error:
            dialect = csv.excel
        rows = [r for r in csv.reader(text.splitlines(), dialect)]
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        sys.exit(f"error: {path} is empty; it needs a header line and rows")
    header, seen = [], set()
    for i, cell in enumerate(rows[0]):
        name = identifier(cell, f"column_{i + 1}")
        while name in seen:
            name += "_"
        seen.add(name)
        header.append(name)
    width = len(header)
    return header, [(r + [""] * width)[:width] for r in rows[1:]]


def column_type(values: list[str]) -> str:
    """INTEGER, REAL or TEXT for the filled cells of one column."""
    filled = [v for v in values if v.strip()]
    parsed = [number(v) for v in filled]
    if not filled or any(p is None for p in parsed):
        return "TEXT"
    return "INTEGER" if all(isinstance(p, int) for p in parsed) else "REAL"


def load(conn: sqlite3.Connection, path: Path, taken: set[str]) -> str:
    """Create a table from the CSV at ``path``; returns a line describing it."""
    header, rows = read_csv(path)
    table = identifier(path.stem, "data")
    while table in taken:
        table += "_"
    taken.add(table)
    types = [column_type([r[i] for r in rows]) for i in range(len(header))]
    columns = ", ".join(f'"{h}" {t}' for h, t in zip(header, types))
    conn.execute(f'CREATE TABLE "{table}" ({columns})')

    def cell(value: str, kind: str) -> object:
        if not value.strip():
            return None
        return value if kind == "TEXT" else number(value)

    conn.executemany(
        f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(header))})',
        ([cell(v, t) for v, t in zip(r, types)] for r in rows),
    )
    described = ", ".join(f"{h} {t}" for h, t in zip(header, types))
    return f"table {table} ({len(rows)} rows): {described}"


def read_only(action: int, *_: object) -> int:
    """SQLite authorizer: reading and functions are allowed, anything that writes or attaches is not."""
    allowed = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
    return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY


def show(v: object) -> str:
    """One cell as text: empty for NULL, floats without trailing noise."""
    text = "" if v is None else (f"{v:.10g}" if isinstance(v, float) else str(v))
    return text.replace("\n", " ")


def markdown(header: list[str], rows: list[tuple]) -> str:
    """A Markdown table (numbers right-aligned)."""

    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(show(v).replace("|", "\\|") for v in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write(out: Path, header: list[str], rows: list[tuple]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".md":
        out.write_text(markdown(header, rows), encoding="utf-8")
        return
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows([show(v) for v in r] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="Run a SQL query over CSV files (SQLite).")
    parser.add_argument("files", nargs="+", help="CSV files; each becomes a table named after the file")
    parser.add_argument("--sql", help="the query, e.g. \"SELECT region, SUM(revenue) AS total FROM sales GROUP BY region\"")
    parser.add_argument("--sql-file", help="a file holding the query (use it for long queries)")
    parser.add_argument("--out", help="where to write the result: a .csv or .md file")
    parser.add_argument("--schema", action="store_true", help="only print the tables and columns")
    args = parser.parse_args()
    conn = sqlite3.connect(":memory:")
    taken: set[str] = set()
    tables = [load(conn, Path(f), taken) for f in args.files]
    print("\n".join(tables))
    if args.schema:
        return
    if args.sql_file:
        args.sql = Path(args.sql_file).read_text(encoding="utf-8")
    if not args.sql or not args.out:
        sys.exit("error: give --sql \"SELECT ...\" (or --sql-file FILE) and --out RESULT.csv; use --schema to see the tables")
    if Path(args.out).suffix.lower() not in (".csv", ".md"):
        sys.exit(f"error: --out {args.out}: use a name ending in .csv (a table file) or .md (a Markdown table)")
    conn.set_authorizer(read_only)
    deadline = time.monotonic() + QUERY_SECONDS
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 100_000)  # non-zero aborts the query
    try:
        cursor = conn.execute(args.sql.strip().rstrip(";"))
        rows = cursor.fetchall()
    except (sqlite3.Warning, sqlite3.ProgrammingError):
        sys.exit("error: give one statement only (a single SELECT); remove the extra ';' statements")
    except sqlite3.DatabaseError as e:
        if "interrupted" in str(e):
            sys.exit(f"error: the query ran over {QUERY_SECONDS} s; add a WHERE, a LIMIT or a join condition (a join without ON multiplies the rows)")
        if "not authorized" in str(e):
            sys.exit("error: only reading queries (SELECT or WITH ... SELECT) run here; write the result with --out instead")
        sys.exit(f"error: the query failed: {e}\nfix the query; the tables above are all there is (names in lowercase with _)")
    if cursor.description is None:
        sys.exit("error: the query returned no columns; write a SELECT")
    header = [d[0] for d in cursor.description]
    write(Path(args.out), header, rows)
    print(f"wrote {args.out}: {len(rows)} rows, columns: {', '.join(header)}")
    for r in rows[:MAX_SHOWN]:
        print("  " + " | ".join(show(v) for v in r))
    if len(rows) > MAX_SHOWN:
        print(f"  ... {len(rows) - MAX_SHOWN} more rows in {args.out}")


if __name__ == "__main__":
    main()
