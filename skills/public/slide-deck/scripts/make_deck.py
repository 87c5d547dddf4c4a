"""Build a PowerPoint deck (.pptx, 16:9) from an outline, with python-pptx.

Usage: python3 make_deck.py OUTLINE OUT.pptx

OUTLINE is a JSON file:
    {"title": "Deck title", "subtitle": "optional",
     "slides": [{"title": "Slide title", "bullets": ["point", "  sub-point"],
                 "image": "/mnt/user-data/uploads/chart.png", "notes": "optional speaker notes"}]}
or a Markdown file (.md): ``# Deck title``, a subtitle line, then one ``## Slide title`` per slide
with ``- bullets`` (indent two spaces for a sub-point; other lines and ``###`` sub-headings become
points too), at most one ``![alt](image.png)`` and ``Notes: ...`` lines. Relative image paths are read from the outline's folder.
Every mistake exits with status 1 and a message that says what to fix.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

WIDTH_EMU, HEIGHT_EMU = 12_192_000, 6_858_000  # PowerPoint's own 16:9 "widescreen", 13.33 x 7.5 in
MAX_LEVEL = 4
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # no XML document may hold these


def fail(message: str) -> None:
    """Exit with ``error: message`` on stderr and status 1."""
    sys.exit(f"error: {message}")


def clean(value: object) -> object:
    """``value`` with the control characters of every string in it removed."""
    if isinstance(value, str):
        return CONTROL_RE.sub("", value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    return value


def parse_markdown(text: str) -> dict:
    """The outline of a Markdown deck: ``# title``, subtitle lines, ``## slide`` sections."""
    outline: dict = {"title": "", "subtitle": "", "slides": []}
    slide: dict | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped in ("---", "***"):
            continue
        if stripped.startswith("## "):
            slide = {"title": stripped[3:].strip(), "bullets": [], "notes": ""}
            outline["slides"].append(slide)
        elif stripped.startswith("# ") and slide is None:
            outline["title"] = stripped[2:].strip()
        elif slide is None:
            outline["subtitle"] = f"{outline['subtitle']} {stripped}".strip()
        elif image := re.fullmatch(r"!\[[^\]]*\]\(([^)\s]+)\)", stripped):
            if slide.get("image"):
                fail(f"line {number}: slide {slide['title']!r} has a second image; use one image per slide")
            slide["image"] = image.group(1)
        elif re.match(r"(?i)notes?:", stripped):
            slide["notes"] = f"{slide['notes']} {stripped.split(':', 1)[1].strip()}".strip()
        elif bullet := re.match(r"(\s*)(?:[-*+]|\d+[.)])\s+(.*)", line):
            slide["bullets"].append(" " * len(bullet.group(1).expandtabs(2)) + bullet.group(2).strip())
        elif stripped.startswith("###"):
            slide["bullets"].append(stripped.lstrip("#").strip())  # a sub-heading inside a slide: a point
        elif stripped.startswith("#"):
            fail(f"line {number}: {stripped!r}: use '# ' once for the deck title and '## ' for each slide")
        else:
            slide["bullets"].append(stripped)
    return outline


def load_outline(path: Path) -> dict:
    """The outline in ``path`` (JSON, or Markdown when it ends in .md), checked."""
    if not path.is_file():
        fail(f"{path} does not exist; write the outline there first")
    text = CONTROL_RE.sub("", path.read_text(encoding="utf-8-sig", errors="replace"))
    if path.suffix.lower() in (".md", ".markdown"):
        outline = parse_markdown(text)
    else:
        try:
            outline = clean(json.loads(text))
        except json.JSONDecodeError as exc:
            fail(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; fix it and run again")
    if not isinstance(outline, dict) or not isinstance(outline.get("slides"), list):
        fail(f'{path}: the outline must be an object with a "slides" list, e.g. {{"title": "T", "slides": [{{"title": "S", "bullets": ["a"]}}]}}')
    if not str(outline.get("title") or "").strip():
        fail(f"{path}: the deck has no title; add \"title\" (JSON) or a '# Title' line (Markdown)")
    if not outline["slides"]:
        fail(f"{path}: the deck has no slides; add at least one slide ('## Slide title' in Markdown)")
    for index, slide in enumerate(outline["slides"], start=1):
        if not isinstance(slide, dict) or not str(slide.get("title") or "").strip():
            fail(f"{path}: slide {index} has no title; give every slide a \"title\"")
        bullets = slide.get("bullets") or []
        if isinstance(bullets, str):  # one text: a point per line
            bullets = slide["bullets"] = bullets.splitlines()
        if not isinstance(bullets, list) or not all(isinstance(b, (str, int, float)) for b in bullets):
            fail(f'{path}: slide {index} ({slide["title"]!r}): "bullets" must be a list of strings')
        if slide.get("image"):
            image = Path(str(slide["image"]))
            image = image if image.is_absolute() else path.parent / image
            if not image.is_file():
                fail(f"{path}: slide {index}: the image {slide['image']} does not exist; check the path with ls")
            slide["image"] = str(image)
    return outline


def _fit_image(slide, image: str, left: int, top: int, width: int, height: int) -> None:
    """Add ``image`` inside the box, keeping its aspect ratio, centred."""
    try:
        picture = slide.shapes.add_picture(image, left, top)
    except Exception as exc:  # python-pptx raises whatever its image reader met
        fail(f"{image} is not an image a slide can show (use PNG or JPEG): {exc}")
    scale = min(width / picture.width, height / picture.height)
    picture.width, picture.height = int(picture.width * scale), int(picture.height * scale)
    picture.left = left + (width - picture.width) // 2
    picture.top = top + (height - picture.height) // 2


def build(outline: dict, out: Path) -> int:
    """Write the deck to ``out``; returns the number of slides."""
    try:
        from pptx import Presentation
        from pptx.util import Emu, Inches, Pt
    except ImportError:
        fail("python-pptx is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    deck = Presentation()
    deck.slide_width, deck.slide_height = Emu(WIDTH_EMU), Emu(HEIGHT_EMU)
    margin = Inches(0.6)
    inner = deck.slide_width - 2 * margin
    deck.core_properties.title = str(outline["title"])

    cover = deck.slides.add_slide(deck.slide_layouts[0])
    cover.shapes.title.text = str(outline["title"])
    cover.shapes.title.left, cover.shapes.title.width = margin, inner
    subtitle = cover.placeholders[1]
    if str(outline.get("subtitle") or "").strip():
        subtitle.left, subtitle.width = margin, inner
        subtitle.text = str(outline["subtitle"]).strip()
    else:  # an empty placeholder shows "Click to add subtitle" in the editor
        subtitle.element.getparent().remove(subtitle.element)

    for spec in outline["slides"]:
        bullets = [str(b) for b in spec.get("bullets", []) if str(b).strip()]
        layout = deck.slide_layouts[1] if bullets else deck.slide_layouts[5]  # title and content / title only
        slide = deck.slides.add_slide(layout)
        title = slide.shapes.title
        title.text = str(spec["title"])
        title.left, title.top, title.width, title.height = margin, Inches(0.3), inner, Inches(1.1)
        body_top, body_height = Inches(1.6), deck.slide_height - Inches(2.0)
        image = spec.get("image")
        if bullets:
            body = slide.placeholders[1]
            body.left, body.top, body.height = margin, body_top, body_height
            body.width = inner // 2 if image else inner
            frame = body.text_frame
            for i, text in enumerate(bullets):
                paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
                paragraph.text = text.strip()
                paragraph.level = min(MAX_LEVEL, (len(text) - len(text.lstrip())) // 2)
                paragraph.font.size = Pt(24 if paragraph.level == 0 else 20)
        if image:
            left = margin + inner // 2 + Inches(0.2) if bullets else margin
            width = inner // 2 - Inches(0.2) if bullets else inner
            _fit_image(slide, image, left, body_top, width, body_height)
        if spec.get("notes"):
            slide.notes_slide.notes_text_frame.text = str(spec["notes"])
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        deck.save(str(out))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}; write it under /mnt/user-data/outputs")
    return len(deck.slides)


def main(argv: list[str]) -> None:
    """``make_deck.py OUTLINE OUT.pptx``."""
    if len(argv) != 2:
        fail("usage: make_deck.py OUTLINE.json|OUTLINE.md OUT.pptx")
    source, out = Path(argv[0]), Path(argv[1])
    if out.suffix.lower() != ".pptx":
        fail(f"the output {out} must end in .pptx")
    outline = load_outline(source)
    count = build(outline, out)
    print(f"wrote {out}: {count} slides, the title slide and {count - 1} more")
    print(f"check it with: python3 {Path(__file__).with_name('check_deck.py')} {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
