"""Resize, convert, crop and annotate images with Pillow.

Usage:
  python3 image.py info IMAGE
  python3 image.py resize IMAGE --out OUT [--width W] [--height H] [--fit contain|cover|stretch]
  python3 image.py convert IMAGE --out OUT.(png|jpg|webp|gif|bmp|tiff) [--quality 85]
  python3 image.py crop IMAGE --out OUT --box LEFT,TOP,RIGHT,BOTTOM
  python3 image.py annotate IMAGE --out OUT [--text LABEL] [--box LEFT,TOP,RIGHT,BOTTOM]
                   [--at X,Y] [--color red] [--size 24]

The output format follows the name of ``--out``. Photos are turned upright from their EXIF
orientation first. Images over 50 million pixels are refused (decompression bombs), and so are
outputs wider or taller than 10000 pixels.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

try:
    from PIL import Image, ImageColor, ImageDraw, ImageFont, ImageOps, UnidentifiedImageError
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("error: Pillow is not installed in this sandbox; ask the administrator to install python3-pil")

Image.MAX_IMAGE_PIXELS = 50_000_000
warnings.simplefilter("error", Image.DecompressionBombWarning)
MAX_SIDE = 10_000
FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP", ".gif": "GIF", ".bmp": "BMP", ".tif": "TIFF", ".tiff": "TIFF"}
FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def fail(message: str) -> None:
    sys.exit(f"error: {message}")


def open_image(path: str) -> Image.Image:
    """The image at ``path``, loaded and upright; exits with what to fix when it cannot be read."""
    if not Path(path).is_file():
        fail(f"{path} does not exist; list the files with: ls /mnt/user-data/uploads")
    try:
        with Image.open(path) as image:
            image.load()
            return ImageOps.exif_transpose(image)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        fail(f"{path} is larger than {Image.MAX_IMAGE_PIXELS:,} pixels; ask for a smaller image")
    except (UnidentifiedImageError, OSError) as e:
        fail(f"{path} is not an image Pillow can read ({e}); use PNG, JPEG, WebP, GIF, BMP or TIFF")
    raise AssertionError  # unreachable: fail() exits


def describe(path: str) -> str:
    """``name: PNG, 640x400, RGB`` for the image file at ``path``."""
    with Image.open(path) as image:
        return f"{Path(path).name}: {image.format}, {image.width}x{image.height}, {image.mode}"


def check_size(size: tuple[int, int]) -> None:
    """Exit when an output of ``size`` would be too large to write or to open again."""
    if max(size) > MAX_SIDE or size[0] * size[1] > Image.MAX_IMAGE_PIXELS:
        fail(f"the result would be {size[0]}x{size[1]}; keep each side at most {MAX_SIDE} pixels "
             f"and the whole under {Image.MAX_IMAGE_PIXELS:,} pixels")


def save(image: Image.Image, out: str, quality: int = 85) -> None:
    """Write ``image`` in the format named by ``out``'s suffix and print what was written."""
    fmt = FORMATS.get(Path(out).suffix.lower())
    if fmt is None:
        fail(f"--out {out}: end the name with one of {', '.join(sorted(FORMATS))}")
    check_size(image.size)
    if fmt in ("JPEG", "BMP") and image.mode not in ("RGB", "L"):
        background = Image.new("RGB", image.size, "white")  # JPEG has no transparency: flatten on white
        rgba = image.convert("RGBA")
        background.paste(rgba, mask=rgba.getchannel("A"))
        image = background
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    options = {"quality": quality} if fmt in ("JPEG", "WEBP") else {}
    image.save(out, fmt, **options)
    print(f"wrote {describe(out)}")


def numbers(text: str, count: int, flag: str) -> list[int]:
    """``"10,20"`` as integers; exits naming the flag when the text does not hold ``count`` numbers."""
    try:
        values = [int(float(v)) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != count:
        fail(f"{flag} {text!r}: give {count} whole numbers separated by commas, e.g. {','.join(['10', '20', '200', '120'][:count])}")
    return values


def resize(image: Image.Image, width: int | None, height: int | None, fit: str) -> Image.Image:
    """The image scaled to the width and/or height; ``fit`` applies when both are given."""
    if not width and not height:
        fail("give --width, --height or both")
    if width and height and fit == "stretch":
        return image.resize((width, height), Image.Resampling.LANCZOS)
    if width and height and fit == "cover":
        return ImageOps.fit(image, (width, height), Image.Resampling.LANCZOS)
    scale = min(width / image.width if width else float("inf"), height / image.height if height else float("inf"))
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    check_size(size)
    return image.resize(size, Image.Resampling.LANCZOS)


def font(size: int) -> ImageFont.ImageFont:
    for path in FONTS:
        if Path(path).is_file():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default()  # a small bitmap font; install fonts-dejavu-core for sizes


def annotate(image: Image.Image, text: str, box: list[int] | None, at: list[int] | None, color: str, size: int) -> Image.Image:
    """The image with a rectangle (``box``) and/or a text label on a filled background."""
    try:
        rgb = ImageColor.getrgb(color)
    except ValueError:
        fail(f"--color {color!r} is not a colour; use a name (red, yellow) or #ff0000")
    image = image.convert("RGBA") if image.mode in ("RGBA", "LA", "P") else image.convert("RGB")
    draw = ImageDraw.Draw(image)
    width = max(2, round(min(image.size) / 150))
    if box:
        left, top, right, bottom = box
        if not (0 <= left < right <= image.width and 0 <= top < bottom <= image.height):
            fail(f"--box {','.join(map(str, box))} is outside the {image.width}x{image.height} image or not LEFT<RIGHT, TOP<BOTTOM")
        draw.rectangle(box, outline=rgb, width=width)
    if text:
        face = font(size)
        x, y = at or ((box[0], max(0, box[1] - size - 2 * width)) if box else (10, 10))
        left, top, right, bottom = draw.textbbox((x, y), text, font=face)
        pad = max(2, size // 6)
        draw.rectangle((left - pad, top - pad, right + pad, bottom + pad), fill=rgb)
        luminance = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
        draw.text((x, y), text, font=face, fill="black" if luminance > 150 else "white")
    return image


def main() -> None:
    parser = argparse.ArgumentParser(description="Image tools (Pillow).")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info").add_argument("image")
    for name in ("resize", "convert", "crop", "annotate"):
        p = sub.add_parser(name)
        p.add_argument("image")
        p.add_argument("--out", required=True)
        p.add_argument("--quality", type=int, default=85)
        if name == "resize":
            p.add_argument("--width", type=int)
            p.add_argument("--height", type=int)
            p.add_argument("--fit", choices=["contain", "cover", "stretch"], default="contain")
        if name in ("crop", "annotate"):
            p.add_argument("--box", required=name == "crop", help="LEFT,TOP,RIGHT,BOTTOM in pixels")
        if name == "annotate":
            p.add_argument("--text", default="")
            p.add_argument("--at", help="X,Y of the label (default: above the box, or 10,10)")
            p.add_argument("--color", default="red")
            p.add_argument("--size", type=int, default=24, help="label height in pixels, 6-400")
    args = parser.parse_args()
    if args.command == "info":
        open_image(args.image)
        print(describe(args.image))
        return
    image = open_image(args.image)
    print(f"read {describe(args.image)}")
    if args.command == "resize":
        for flag, value in (("--width", args.width), ("--height", args.height)):
            if value is not None and not 0 < value <= MAX_SIDE:
                fail(f"{flag} {value}: give a number of pixels from 1 to {MAX_SIDE}")
        image = resize(image, args.width, args.height, args.fit)
    elif args.command == "crop":
        box = numbers(args.box, 4, "--box")
        if not (0 <= box[0] < box[2] <= image.width and 0 <= box[1] < box[3] <= image.height):
            fail(f"--box {args.box} is outside the {image.width}x{image.height} image or not LEFT<RIGHT, TOP<BOTTOM")
        image = image.crop(box)
    elif args.command == "annotate":
        if not 6 <= args.size <= 400:
            fail(f"--size {args.size}: give a label height from 6 to 400 pixels")
        if not args.text and not args.box:
            fail("give --text LABEL, --box LEFT,TOP,RIGHT,BOTTOM or both")
        box = numbers(args.box, 4, "--box") if args.box else None
        at = numbers(args.at, 2, "--at") if args.at else None
        image = annotate(image, args.text, box, at, args.color, args.size)
    save(image, args.out, args.quality)


if __name__ == "__main__":
    main()
