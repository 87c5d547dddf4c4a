"""Open a .pptx with python-pptx and print what it holds; name each problem a viewer would see.

Usage: python3 check_deck.py DECK.pptx

Prints the slide count and, per slide, its title, bullets, pictures and notes; then ``OK``, or
one line per problem (a slide without a title, an empty slide, too many bullets, a picture
off the slide) and exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_BULLETS = 8
MAX_CHARS = 700  # more text than this does not fit a slide at a readable size
MAX_TITLE = 70  # a longer title wraps onto a third line of the title box


def describe(path: Path) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` for the deck at ``path``."""
    try:
        from pptx import Presentation
        from pptx.enum.shapes import MSO_SHAPE_TYPE
    except ImportError:
        sys.exit("error: python-pptx is not installed in this sandbox; tell the user to run scripts/install-system.sh")
    try:
        deck = Presentation(str(path))
    except Exception as exc:  # a zip or XML error, whichever python-pptx met first
        sys.exit(f"error: {path} is not a PowerPoint file python-pptx can open ({exc}); build it again with make_deck.py")
    width, height = deck.slide_width, deck.slide_height
    lines = [f"{path.name}: {len(deck.slides)} slides, {width / 914400:.2f} x {height / 914400:.2f} in"]
    problems: list[str] = []
    for number, slide in enumerate(deck.slides, start=1):
        title = slide.shapes.title.text.strip() if slide.shapes.title is not None else ""
        texts, pictures = [], 0
        for shape in slide.shapes:
            if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
                pictures += 1
                if shape.left < 0 or shape.top < 0 or shape.left + shape.width > width or shape.top + shape.height > height:
                    problems.append(f"slide {number}: a picture reaches past the slide's edge")
            elif shape.has_text_frame and shape != slide.shapes.title:
                texts += ["  " * p.level + p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]
        notes = slide.notes_slide.notes_text_frame.text.strip() if slide.has_notes_slide else ""
        lines.append(f"{number}. {title or '(no title)'} - {len(texts)} text lines, {pictures} pictures" + (", notes" if notes else ""))
        lines += [f"   - {t}" for t in texts]
        if not title:
            problems.append(f"slide {number}: no title; give every slide a title")
        if len(title) > MAX_TITLE:
            problems.append(f"slide {number}: the title has {len(title)} characters; keep it under {MAX_TITLE} and move detail into bullets")
        if not texts and not pictures and number > 1:
            problems.append(f"slide {number} ({title}): empty; add bullets or an image, or remove the slide")
        if len(texts) > MAX_BULLETS:
            problems.append(f"slide {number} ({title}): {len(texts)} bullets; keep at most {MAX_BULLETS} or split the slide")
        if sum(len(t.strip()) for t in texts) > MAX_CHARS:
            problems.append(f"slide {number} ({title}): too much text for one slide; shorten the bullets or split the slide")
    return lines, problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_deck.py DECK.pptx")
    deck_path = Path(sys.argv[1])
    if not deck_path.is_file():
        sys.exit(f"error: {deck_path} does not exist; build it with make_deck.py first")
    shown, found = describe(deck_path)
    print("\n".join(shown + found))
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
