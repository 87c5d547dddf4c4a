"""Check an image the agent wrote: open it with Pillow and print its format, size and mode.

Usage: python3 check_image.py IMAGE [--width W] [--height H] [--format PNG|JPEG|WEBP|...]

Exits 1, naming the problem, when the file is not a readable image or differs from what the
user asked for (width, height, format).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from image import Image, open_image  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description="Open an image and print what it is.")
    parser.add_argument("image")
    parser.add_argument("--width", type=int)
    parser.add_argument("--height", type=int)
    parser.add_argument("--format", help="PNG, JPEG, WEBP, GIF, BMP or TIFF")
    args = parser.parse_args()
    open_image(args.image)  # exits with the reason when it cannot be read
    with Image.open(args.image) as image:
        fmt, (width, height), mode = image.format, image.size, image.mode
    print(f"{Path(args.image).name}: {fmt}, {width}x{height}, {mode}")
    problems = []
    if args.width and width != args.width:
        problems.append(f"width is {width}, not {args.width}; resize again with --width {args.width}")
    if args.height and height != args.height:
        problems.append(f"height is {height}, not {args.height}; resize with --fit cover or stretch to get both sides exact")
    if args.format and (fmt or "").upper() != args.format.upper().replace("JPG", "JPEG"):
        problems.append(f"format is {fmt}, not {args.format}; convert it with an --out name ending in .{args.format.lower()}")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
