"""Turn a table (CSV, TSV or .xlsx) into one self-contained HTML dashboard: KPI cards, charts, a table.

Usage: python3 dashboard.py DATA --columns
       python3 dashboard.py DATA --out DASHBOARD.html [--title T]
                            [--chart bar:X:Y[:sum|mean|count]] [--chart line:X:Y[:sum|mean|count]]
                            [--kpi Y:sum|mean|min|max|count] [--max-rows 1000]

Without ``--chart`` it picks up to two charts itself (a bar chart of the first number column by
the first text column with few values, and a line over the first date column); without
``--kpi`` the cards show the row count and the sums of the first number columns. Charts are
inline SVG drawn here and the table's sorting and filtering is a few lines of inline JavaScript,
so the file opens offline and loads nothing from the network (no CDN). Written by hand because
no packaged chart library renders static SVG into HTML without a browser or network.
"""

from __future__ import annotations

import argparse
import html
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

try:
    import pandas as pd
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("error: pandas is not installed in this sandbox; ask the administrator to install python3-pandas")

W, H, PAD_L, PAD_B, PAD_T = 640, 320, 70, 70, 20
COLOR = "#3465a4"
AGGS = ("sum", "mean", "count", "min", "max")
e = html.escape


def read(path: str) -> pd.DataFrame:
    """The table at ``path`` with pandas' types; exits with what to fix."""
    p = Path(path)
    if not p.is_file():
        sys.exit(f"error: {path} does not exist; list the files with: ls /mnt/user-data/uploads")
    try:
        if p.suffix.lower() in (".xlsx", ".xlsm"):
            frame = pd.read_excel(p)
        else:
            frame = pd.read_csv(p, sep="\t" if p.suffix.lower() == ".tsv" else None, engine="python", encoding="utf-8-sig")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as err:
        sys.exit(f"error: cannot read {path} as a table ({err}); use CSV, TSV or .xlsx with a header line")
    if frame.empty:
        sys.exit(f"error: {path} has no rows")
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def fmt(value: float) -> str:
    """A number for people: 1,234 / 1,234.5 / 0.123."""
    if pd.isna(value):
        return ""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


def column(frame: pd.DataFrame, name: str, flag: str) -> str:
    if name not in frame.columns:
        sys.exit(f"error: {flag}: no column {name!r}; the columns are: {', '.join(frame.columns)}")
    return name


def numbers(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]


def date_column(frame: pd.DataFrame) -> str | None:
    """The first text column whose every filled cell reads as a date."""
    for name in frame.columns:
        col = frame[name].dropna()
        if col.empty or pd.api.types.is_numeric_dtype(col):
            continue
        if col.astype(str).str.match(r"^\d{4}-\d{1,2}(-\d{1,2})?([ T].*)?$").all():
            return name
    return None


def aggregate(frame: pd.DataFrame, x: str, y: str | None, agg: str, by_date: bool) -> list[tuple[str, float]]:
    """(label, value) pairs: ``agg`` of ``y`` per value of ``x`` (rows counted without ``y``); a
    line over more than 24 dates goes by month."""
    if by_date and frame[x].nunique() > 24 and x == date_column(frame):
        frame = frame.assign(**{x: frame[x].astype(str).str[:7]})
    if y is None or agg == "count":
        grouped = frame.groupby(x, dropna=True).size()
    else:
        if y not in numbers(frame):
            sys.exit(f"error: column {y!r} holds text, not numbers; pick one of: {', '.join(numbers(frame)) or '(none)'}")
        grouped = frame.groupby(x, dropna=True)[y].agg(agg, **({"min_count": 1} if agg == "sum" else {}))
        empty = [str(k) for k, v in grouped.items() if pd.isna(v)]
        if empty:  # a group with no values is unknown, not 0
            print(f"note: no {y} values for {x} = {', '.join(empty[:10])}; left out of the chart")
            grouped = grouped.dropna()
    if by_date:
        grouped = grouped.sort_index()
    else:
        grouped = grouped.sort_values(ascending=False).head(20)
    return [(str(k), float(v)) for k, v in grouped.items()]


def axis(top: float) -> tuple[list[str], float]:
    """Gridlines (SVG) for values 0..top, and the scale's top (rounded up to 1, 2, 2.5 or 5 x 10^k)."""
    top = top if top > 0 else 1.0
    power = 10 ** math.floor(math.log10(top))
    top = next(power * m for m in (1, 2, 2.5, 5, 10) if power * m >= top)
    lines = []
    for i in range(5):
        value = top * i / 4
        y = H - PAD_B - (H - PAD_B - PAD_T) * i / 4
        lines.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - 10}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="13">{e(fmt(value))}</text>')
    return lines, top


def bar_svg(pairs: list[tuple[str, float]], title: str) -> str:
    lines, top = axis(max((v for _, v in pairs), default=0.0))
    slot = (W - PAD_L - 10) / max(1, len(pairs))
    for i, (label, value) in enumerate(pairs):
        h = (H - PAD_B - PAD_T) * max(0.0, value) / top
        x = PAD_L + i * slot + slot * 0.15
        lines.append(f'<rect x="{x:.1f}" y="{H - PAD_B - h:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" fill="{COLOR}">'
                     f"<title>{e(label)}: {e(fmt(value))}</title></rect>")
        cx = x + slot * 0.35
        lines.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 14}" font-size="13" text-anchor="end" transform="rotate(-35 {cx:.1f} {H - PAD_B + 14})">{e(label[:24])}</text>')
    return svg(lines, title)


def line_svg(pairs: list[tuple[str, float]], title: str) -> str:
    lines, top = axis(max((v for _, v in pairs), default=0.0))
    step = (W - PAD_L - 30) / max(1, len(pairs) - 1)
    points = [(PAD_L + 10 + i * step, H - PAD_B - (H - PAD_B - PAD_T) * max(0.0, v) / top) for i, (_, v) in enumerate(pairs)]
    lines.append(f'<polyline fill="none" stroke="{COLOR}" stroke-width="2" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}"/>')
    every = max(1, len(pairs) // 12)
    for i, ((label, value), (x, y)) in enumerate(zip(pairs, points)):
        lines.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLOR}"><title>{e(label)}: {e(fmt(value))}</title></circle>')
        if i % every == 0:
            lines.append(f'<text x="{x:.1f}" y="{H - PAD_B + 14}" font-size="13" text-anchor="end" transform="rotate(-35 {x:.1f} {H - PAD_B + 14})">{e(label[:24])}</text>')
    return svg(lines, title)


def svg(parts: list[str], title: str) -> str:
    """A chart figure: inline SVG (no xmlns needed inside HTML) with a caption."""
    body = "".join(parts)
    return (f'<figure class="chart"><figcaption>{e(title)}</figcaption>'
            f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="{e(title)}">{body}'
            f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - 10}" y2="{H - PAD_B}" stroke="#555"/></svg></figure>')


def parse_chart(spec: str, frame: pd.DataFrame) -> tuple[str, str, str | None, str]:
    parts = spec.split(":")
    if len(parts) not in (2, 3, 4) or parts[0] not in ("bar", "line"):
        sys.exit(f"error: --chart {spec!r}: write bar:X:Y, bar:X:Y:mean or line:X:Y (X groups the rows, Y is summed)")
    kind, x = parts[0], column(frame, parts[1], "--chart")
    y = column(frame, parts[2], "--chart") if len(parts) > 2 and parts[2] else None
    agg = parts[3] if len(parts) == 4 else ("sum" if y else "count")
    if agg not in AGGS:
        sys.exit(f"error: --chart {spec!r}: the last part must be one of {', '.join(AGGS)}")
    return kind, x, y, agg


def auto_charts(frame: pd.DataFrame) -> list[tuple[str, str, str | None, str]]:
    nums = numbers(frame)
    y = nums[0] if nums else None
    charts = []
    when = date_column(frame)
    groups = [c for c in frame.columns if c not in nums and c != when and 1 < frame[c].nunique() <= 30]
    if groups:
        charts.append(("bar", groups[0], y, "sum" if y else "count"))
    if when:
        charts.append(("line", when, y, "sum" if y else "count"))
    return charts


def kpis(frame: pd.DataFrame, specs: list[str]) -> list[tuple[str, str]]:
    cards = [("Rows", fmt(len(frame)))] if not specs else []
    if not specs:
        specs = [f"{c}:sum" for c in numbers(frame)[:3]]
    for spec in specs:
        name, _, agg = spec.rpartition(":")
        if not name or agg not in AGGS:
            sys.exit(f"error: --kpi {spec!r}: write COLUMN:sum (or mean, min, max, count)")
        column(frame, name, "--kpi")
        if agg != "count" and name not in numbers(frame):
            sys.exit(f"error: --kpi {spec!r}: {name!r} holds text; use {name}:count or a number column")
        cards.append((f"{agg} of {name}", fmt(frame[name].agg(agg))))
    return cards


SCRIPT = """
const table = document.querySelector('table.data'), rows = Array.from(table.tBodies[0].rows);
document.getElementById('filter').addEventListener('input', ev => {
  const q = ev.target.value.toLowerCase(); let shown = 0;
  rows.forEach(r => { const hit = r.textContent.toLowerCase().includes(q); r.hidden = !hit; shown += hit; });
  document.getElementById('shown').textContent = shown;
});
table.tHead.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
  const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
  const key = r => { const t = r.cells[i].dataset.v ?? r.cells[i].textContent; const n = parseFloat(t); return isNaN(n) ? t : n; };
  rows.sort((a, b) => { const x = key(a), y = key(b); return (x > y ? 1 : x < y ? -1 : 0) * dir; });
  rows.forEach(r => table.tBodies[0].appendChild(r));
}));
"""
STYLE = """
body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#222}
header{background:#204a87;color:#fff;padding:16px 24px}header h1{margin:0;font-size:1.5em}
header p{margin:4px 0 0;opacity:.85}main{padding:16px 24px;max-width:1200px}
.kpis{display:flex;flex-wrap:wrap;gap:12px}.kpi{background:#fff;border-radius:8px;padding:12px 16px;
min-width:140px;box-shadow:0 1px 3px #0002}.kpi b{display:block;font-size:1.6em}.kpi span{color:#555}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px;margin:16px 0}
.chart{background:#fff;border-radius:8px;margin:0;padding:12px;box-shadow:0 1px 3px #0002}
figcaption{font-weight:600;margin-bottom:4px}svg{width:100%;height:auto;font-family:inherit}
table{border-collapse:collapse;width:100%;background:#fff}th,td{padding:6px 10px;border-bottom:1px solid #e5e5e5;text-align:left}
th{cursor:pointer;background:#eef1f5;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
input{padding:6px 8px;margin:8px 0;width:260px}.note{color:#555}
"""


def page(title: str, source: str, frame: pd.DataFrame, cards: list[tuple[str, str]], charts: list[str], max_rows: int) -> str:
    nums = set(numbers(frame))
    head = "".join(f"<th>{e(c)}</th>" for c in frame.columns)
    body = []
    for _, row in frame.head(max_rows).iterrows():
        cells = []
        for c in frame.columns:
            v = row[c]
            if c in nums:
                cells.append(f'<td class="num" data-v="{"" if pd.isna(v) else v}">{e(fmt(v))}</td>')
            else:
                cells.append(f"<td>{'' if pd.isna(v) else e(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    shown = min(len(frame), max_rows)
    cut = f'<p class="note">The table shows the first {shown:,} of {len(frame):,} rows; the cards and charts use all rows.</p>' if shown < len(frame) else ""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title><style>{STYLE}</style></head>
<body><header><h1>{e(title)}</h1><p>{e(source)} &middot; {len(frame):,} rows &middot; {len(frame.columns)} columns &middot; made {stamp}</p></header>
<main><section class="kpis">{"".join(f'<div class="kpi"><b>{e(v)}</b><span>{e(k)}</span></div>' for k, v in cards)}</section>
<section class="charts">{"".join(charts)}</section>
<section><h2>Data</h2><input id="filter" type="search" placeholder="Filter rows..." aria-label="Filter rows">
<span class="note"><span id="shown">{shown}</span> rows shown; click a column name to sort</span>{cut}
<table class="data"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></section></main>
<script>{SCRIPT}</script></body></html>
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="A self-contained HTML dashboard from a table.")
    parser.add_argument("data")
    parser.add_argument("--out", help="the .html file to write")
    parser.add_argument("--columns", action="store_true", help="only print the columns and their kinds")
    parser.add_argument("--title", default="")
    parser.add_argument("--chart", action="append", default=[], help="bar:X:Y[:agg] or line:X:Y[:agg]; repeat for more")
    parser.add_argument("--kpi", action="append", default=[], help="COLUMN:sum|mean|min|max|count; repeat for more")
    parser.add_argument("--max-rows", type=int, default=1000)
    args = parser.parse_args()
    frame = read(args.data)
    if args.columns:
        nums, when = numbers(frame), date_column(frame)
        print(f"{Path(args.data).name}: {len(frame)} rows")
        for name in frame.columns:
            kind = "number" if name in nums else "date" if name == when else f"text, {frame[name].nunique()} distinct"
            print(f"- {name}: {kind}")
        return
    if not args.out or Path(args.out).suffix.lower() not in (".html", ".htm"):
        sys.exit("error: give --out /mnt/user-data/outputs/<name>.html")
    specs = [parse_chart(s, frame) for s in args.chart] or auto_charts(frame)
    charts = []
    for kind, x, y, agg in specs:
        pairs = aggregate(frame, x, y, agg, by_date=kind == "line")
        title = f"{agg} of {y} by {x}" if y and agg != "count" else f"rows by {x}"
        charts.append((bar_svg if kind == "bar" else line_svg)(pairs, title))
        print(f"chart: {kind} {title}: " + ", ".join(f"{k} {fmt(v)}" for k, v in pairs[:8]) + (" ..." if len(pairs) > 8 else ""))
    cards = kpis(frame, args.kpi)
    title = args.title or Path(args.data).stem.replace("_", " ").replace("-", " ").title()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(title, Path(args.data).name, frame, cards, charts, args.max_rows), encoding="utf-8")
    print(f"wrote {out}: {len(cards)} cards ({'; '.join(f'{k} {v}' for k, v in cards)}), {len(charts)} charts, "
          f"{min(len(frame), args.max_rows)} table rows")


if __name__ == "__main__":
    main()
