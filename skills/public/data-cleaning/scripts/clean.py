"""Clean a table with pandas and write the cleaned CSV plus a Markdown report of every change.

Usage: python3 clean.py FILE --out CLEAN.csv [--report REPORT.md] [--snake-headers]
                        [--drop-missing COL,COL] [--fill-numeric none|zero|median|mean]
                        [--keep-duplicates] [--dayfirst]

Steps, each counted in the report: header names trimmed (or made snake_case); cells trimmed and
inner spaces collapsed; placeholders (NA, n/a, null, -, ?) made empty; empty rows and columns
dropped; a text column whose every filled cell is a number ("1,234", "12%", "$5") becomes
numeric; a column whose every filled cell is a date becomes ISO dates (YYYY-MM-DD); exact
duplicate rows dropped; rows missing a required column dropped; numeric gaps filled on request.
Nothing is guessed for a column with mixed content: it is kept and named in the report.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tables import MISSING, pd, read_text_table  # noqa: E402

NUMBER = re.compile(r"^[-+]?[$€£¥]?\s?[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?\s?%?$")
DATE = re.compile(r"^(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})([ T]\d{1,2}:\d{2}(:\d{2})?)?$")


def snake(name: str) -> str:
    """``Unit Price (EUR)`` -> ``unit_price_eur``."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_") or "column"


def as_number(text: str) -> float:
    return float(re.sub(r"[$€£¥,%\s]", "", text))


def numeric(column: pd.Series) -> pd.Series | None:
    """The column as numbers when every filled cell is one, else None (codes with a leading zero
    such as ZIP codes and IDs stay text: as numbers they would lose it)."""
    filled = column[column != ""]
    if filled.empty or filled.str.match(r"^[-+]?0\d").any() or not filled.map(lambda v: bool(NUMBER.match(v)) and any(c.isdigit() for c in v)).all():
        return None
    values = column.map(lambda v: as_number(v) if v else None).astype("float64")
    whole = values.dropna()
    return values.astype("Int64") if (whole == whole.round()).all() and whole.abs().max() < 2**53 else values


def dates(column: pd.Series, dayfirst: bool) -> pd.Series | None:
    """The column as ISO dates when every filled cell is a date, else None."""
    filled = column[column != ""]
    if filled.empty or not filled.map(lambda v: bool(DATE.match(v))).all():
        return None
    parsed = pd.to_datetime(column.replace("", None), errors="coerce", dayfirst=dayfirst)
    if parsed[column != ""].isna().any():
        return None
    has_time = (parsed.dropna().dt.strftime("%H:%M:%S") != "00:00:00").any()
    return parsed.dt.strftime("%Y-%m-%d %H:%M:%S" if has_time else "%Y-%m-%d").fillna("")


def clean(frame: pd.DataFrame, args: argparse.Namespace) -> tuple[pd.DataFrame, dict[str, str], list[str], list[str]]:
    """The cleaned table, each column's kind (number, date, text), the changes made and the
    warnings (left for a person to decide)."""
    changes: list[str] = []
    warnings: list[str] = []
    old = [str(c) for c in frame.columns]
    new = [snake(c) if args.snake_headers else re.sub(r"\s+", " ", c).strip() or f"column_{i + 1}" for i, c in enumerate(old)]
    seen: set[str] = set()
    for i, name in enumerate(new):
        while name in seen:
            name += "_2"
        seen.add(name)
        new[i] = name
    renamed = [f"`{a}` -> `{b}`" for a, b in zip(old, new) if a != b]
    if renamed:
        changes.append(f"renamed {len(renamed)} columns: {', '.join(renamed)}")
    frame.columns = new
    before = frame.copy()
    frame = frame.apply(lambda col: col.str.replace(r"\s+", " ", regex=True).str.strip())
    trimmed = int((frame != before).sum().sum())
    if trimmed:
        changes.append(f"trimmed spaces in {trimmed} cells")
    placeholder = frame.apply(lambda col: col.str.lower().isin(MISSING - {""}))
    if int(placeholder.sum().sum()):
        changes.append(f"made {int(placeholder.sum().sum())} placeholder cells (NA, n/a, null, -, ?) empty")
        frame = frame.mask(placeholder, "")
    empty_rows = (frame == "").all(axis=1)
    if empty_rows.any():
        changes.append(f"dropped {int(empty_rows.sum())} empty rows")
        frame = frame[~empty_rows]
    empty_cols = [c for c in frame.columns if (frame[c] == "").all()]
    if empty_cols:
        changes.append(f"dropped {len(empty_cols)} empty columns: {', '.join(empty_cols)}")
        frame = frame.drop(columns=empty_cols)
    if not args.keep_duplicates:
        dup = frame.duplicated()
        if dup.any():
            changes.append(f"dropped {int(dup.sum())} duplicate rows (exact copies of an earlier row)")
            frame = frame[~dup]
    result = pd.DataFrame(index=frame.index)
    kinds: dict[str, str] = {}
    for name in frame.columns:
        col = frame[name]
        as_num, as_date = numeric(col), dates(col, args.dayfirst)
        if as_num is not None:
            if (col[col != ""] != as_num[col != ""].astype(str)).any():
                changes.append(f"`{name}`: text to numbers ({'whole numbers' if str(as_num.dtype) == 'Int64' else 'decimals'})")
            result[name], kinds[name] = as_num, "number"
        elif as_date is not None:
            if (as_date != col).any():
                changes.append(f"`{name}`: dates written as YYYY-MM-DD")
            result[name], kinds[name] = as_date.replace("", None), "date"
        else:
            result[name], kinds[name] = col.replace("", None), "text"
            filled = col[col != ""]
            share = filled.map(lambda v: bool(NUMBER.match(v)) and any(c.isdigit() for c in v)).mean() if len(filled) else 0
            odd = sorted(set(filled[~filled.map(lambda v: bool(NUMBER.match(v)))]))[:5]
            if share >= 0.5 and odd:
                warnings.append(f"`{name}` is mostly numbers but also holds {', '.join(repr(v) for v in odd)}; kept as text")
            elif share == 1:
                warnings.append(f"`{name}` holds numbers with leading zeros (codes, IDs); kept as text so the zeros stay")
    for name in [c.strip() for c in (args.drop_missing or "").split(",") if c.strip()]:
        name = snake(name) if args.snake_headers else name
        if name not in result.columns:
            sys.exit(f"error: --drop-missing {name}: no such column; the columns are: {', '.join(result.columns)}")
        gone = result[name].isna()
        if gone.any():
            changes.append(f"dropped {int(gone.sum())} rows with no `{name}`")
            result = result[~gone]
    if args.fill_numeric != "none":
        for name in result.columns:
            col = result[name]
            if pd.api.types.is_numeric_dtype(col) and col.isna().any():
                value = {"zero": 0, "median": col.median(), "mean": col.mean()}[args.fill_numeric]
                if pd.api.types.is_integer_dtype(col) and value != round(value):
                    result[name] = col.astype("float64")
                changes.append(f"`{name}`: filled {int(col.isna().sum())} empty cells with the {args.fill_numeric} ({value:g})")
                result[name] = result[name].fillna(value)
    return result.reset_index(drop=True), kinds, changes, warnings


def report(source: str, out: str, raw: pd.DataFrame, result: pd.DataFrame, kinds: dict[str, str], changes: list[str], warnings: list[str]) -> str:
    """The Markdown report of one cleaning run."""
    lines = [f"# Cleaning report: {Path(source).name}", "",
             f"- input: {len(raw)} rows, {len(raw.columns)} columns",
             f"- output: {len(result)} rows, {len(result.columns)} columns (`{Path(out).name}`)", "",
             "## Changes", ""]
    lines += [f"{i}. {c}" for i, c in enumerate(changes, 1)] or ["None: the table was already clean."]
    lines += ["", "## Columns", "", "| column | type | empty cells |", "|---|---|---:|"]
    for name in result.columns:
        lines.append(f"| {name} | {kinds[name]} | {int(result[name].isna().sum())} |")
    if warnings:
        lines += ["", "## Left for you to decide", ""] + [f"- {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Clean a CSV/TSV/XLSX table with pandas.")
    parser.add_argument("file")
    parser.add_argument("--out", required=True, help="the cleaned CSV, e.g. /mnt/user-data/outputs/clean.csv")
    parser.add_argument("--report", help="the Markdown report (default: <out>-report.md next to --out)")
    parser.add_argument("--snake-headers", action="store_true", help="column names in snake_case")
    parser.add_argument("--drop-missing", help="comma-separated columns a row must have, else it is dropped")
    parser.add_argument("--fill-numeric", choices=["none", "zero", "median", "mean"], default="none")
    parser.add_argument("--keep-duplicates", action="store_true")
    parser.add_argument("--dayfirst", action="store_true", help="read 03/04/2024 as 3 April (default: March 4)")
    args = parser.parse_args()
    out = Path(args.out)
    if out.suffix.lower() != ".csv":
        sys.exit(f"error: --out {args.out}: the cleaned file must end in .csv")
    if Path(args.file).resolve() == out.resolve():
        sys.exit("error: --out must differ from the input; never overwrite the uploaded file")
    raw = read_text_table(args.file)
    result, kinds, changes, warnings = clean(raw.copy(), args)
    out.parent.mkdir(parents=True, exist_ok=True)
    result.to_csv(out, index=False)
    report_path = Path(args.report) if args.report else out.with_name(f"{out.stem}-report.md")
    report_path.write_text(report(args.file, args.out, raw, result, kinds, changes, warnings), encoding="utf-8")
    print(f"wrote {out}: {len(result)} rows, {len(result.columns)} columns (from {len(raw)} rows, {len(raw.columns)} columns)")
    print(f"wrote {report_path}")
    for c in changes:
        print(f"- {c}")
    for w in warnings:
        print(f"warning: {w}")


if __name__ == "__main__":
    main()
