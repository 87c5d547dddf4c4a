"""Draw a bar chart of one column aggregated by another, as a PNG.

Usage: python3 bar_chart.py FILE --x COLUMN [--y COLUMN] [--agg sum|mean|count] --out PNG [--title T]

With matplotlib installed the chart has labels; without it a plain chart is drawn with the
standard library (zlib + struct), bars in the order printed on stdout.
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from table import number, read_table  # noqa: E402

W, H, MARGIN = 640, 400, 40


def aggregate(header: list[str], rows: list[list[str]], x: str, y: str | None, agg: str) -> list[tuple[str, float]]:
    for col in (x, y):
        if col is not None and col not in header:
            sys.exit(f"error: no column {col!r}; the columns are: {', '.join(header)}")
    xi = header.index(x)
    yi = header.index(y) if y else None
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        value = 1.0 if yi is None else number(r[yi])
        if value is not None:
            groups[r[xi].strip() or "(empty)"].append(value)
    if agg == "count" or yi is None:
        return [(k, float(len(v))) for k, v in groups.items()]
    if agg == "mean":
        return [(k, sum(v) / len(v)) for k, v in groups.items()]
    return [(k, sum(v)) for k, v in groups.items()]


def png_bytes(pixels: list[bytearray]) -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(row) for row in pixels)
    header = struct.pack(">IIBBBBB", len(pixels[0]) // 3, len(pixels), 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def plain_chart(bars: list[tuple[str, float]]) -> bytes:
    pixels = [bytearray(b"\xff" * (W * 3)) for _ in range(H)]

    def rect(x0: int, y0: int, x1: int, y1: int, rgb: tuple[int, int, int]) -> None:
        for yy in range(max(0, y0), min(H, y1)):
            row = pixels[yy]
            for xx in range(max(0, x0), min(W, x1)):
                row[xx * 3 : xx * 3 + 3] = bytes(rgb)

    top = max((v for _, v in bars), default=0.0) or 1.0
    rect(MARGIN, H - MARGIN, W - MARGIN // 2, H - MARGIN + 2, (80, 80, 80))  # x axis
    rect(MARGIN - 2, MARGIN // 2, MARGIN, H - MARGIN + 2, (80, 80, 80))  # y axis
    slot = (W - MARGIN * 1.5) / max(1, len(bars))
    for i, (_, value) in enumerate(bars):
        height = int((H - MARGIN * 1.5) * max(0.0, value) / top)
        x0 = int(MARGIN + i * slot + slot * 0.15)
        rect(x0, H - MARGIN - height, int(x0 + slot * 0.7), H - MARGIN, (52, 101, 164))
    return png_bytes(pixels)


def main() -> None:
    parser = argparse.ArgumentParser(description="Bar chart of a table as PNG.")
    parser.add_argument("file")
    parser.add_argument("--x", required=True)
    parser.add_argument("--y")
    parser.add_argument("--agg", choices=["sum", "mean", "count"], default="sum")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    header, rows = read_table(args.file)
    bars = sorted(aggregate(header, rows, args.x, args.y, args.agg), key=lambda kv: kv[1], reverse=True)[:30]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(W / 100, H / 100))  # the plain chart's size, whichever draws it
        ax.bar([k for k, _ in bars], [v for _, v in bars])
        ax.set_title(args.title)
        ax.set_xlabel(args.x)
        ax.set_ylabel(f"{args.agg} of {args.y}" if args.y else "rows")
        fig.autofmt_xdate()
        fig.savefig(out, dpi=100)
        how = "matplotlib"
    except ImportError:
        out.write_bytes(plain_chart(bars))
        how = "plain (no labels in the image)"
    print(f"wrote {out} ({how}); bars, left to right:")
    for k, v in bars:
        print(f"  {k}: {v:g}")


if __name__ == "__main__":
    main()
