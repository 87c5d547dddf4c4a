"""Read a table with pandas, every cell as text, so the cleaning decides the types itself."""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import pandas as pd
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("error: pandas is not installed in this sandbox; ask the administrator to install python3-pandas")

MISSING = {"", "na", "n/a", "nan", "null", "none", "-", "--", "?", "#n/a"}


def read_text_table(path: str) -> pd.DataFrame:
    """The CSV, TSV or .xlsx at ``path`` as strings (missing cells are ""); exits with what to fix."""
    p = Path(path)
    if not p.is_file():
        sys.exit(f"error: {path} does not exist; list the files with: ls /mnt/user-data/uploads")
    try:
        if p.suffix.lower() in (".xlsx", ".xlsm"):
            frame = pd.read_excel(p, dtype=str, keep_default_na=False)
        else:
            sep = "\t" if p.suffix.lower() == ".tsv" else None
            frame = pd.read_csv(p, dtype=str, keep_default_na=False, sep=sep, engine="python", encoding="utf-8-sig")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        sys.exit(f"error: cannot read {path} as a table ({e}); check that it is CSV, TSV or .xlsx with a header line")
    if frame.columns.empty:
        sys.exit(f"error: {path} has no columns; it needs a header line")
    return frame
