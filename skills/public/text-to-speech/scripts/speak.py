"""Turn text (plain or Markdown) into a spoken WAV file with espeak-ng.

Usage:
  python3 speak.py --text-file NOTES.md --out SPEECH.wav [--voice en-us] [--speed 160] [--pitch 50]
  python3 speak.py --text "Hello there" --out SPEECH.wav
  python3 speak.py --list-voices [LANGUAGE]

Markdown marks are removed first (headings, emphasis, links keep their text, code fences go), so
the voice does not read out symbols. The text reaches espeak-ng through a file, never as an
argument, so text starting with "-" is spoken, not taken as an option.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

MAX_CHARS = 200_000


def plain(markdown: str) -> str:
    """The words of a Markdown text, without its marks."""
    text = re.sub(r"^[ \t]*(```|~~~).*$", "", markdown, flags=re.MULTILINE)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images keep their text
    text = re.sub(r"^[ \t]{0,3}#{1,6}[ \t]*", "", text, flags=re.MULTILINE)  # headings
    text = re.sub(r"^[ \t]*([-*+]|\d+[.)])[ \t]+", "", text, flags=re.MULTILINE)  # list marks
    text = re.sub(r"^[ \t]*\|?[ \t]*:?-{3,}.*$", "", text, flags=re.MULTILINE)  # table rules
    text = re.sub(r"^[ \t]*\|(.*)\|[ \t]*$", r"\1", text, flags=re.MULTILINE).replace("|", ",")  # table cells
    text = re.sub(r"(\*\*|__|\*|_|`)(\S.*?\S|\S)\1", r"\2", text)  # emphasis and code
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def espeak() -> str:
    found = shutil.which("espeak-ng")
    if found is None:
        sys.exit("error: espeak-ng is not installed in this sandbox; ask the administrator to install espeak-ng")
    return found


def run_espeak(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    """espeak-ng with ``args``; its HOME is a scratch folder, because the audio library writes its
    settings there and in the jail HOME is the user's workspace."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_CACHE_HOME": home, "XDG_CONFIG_HOME": home}
        return subprocess.run([espeak(), *args], capture_output=True, text=True, timeout=timeout, env=env)


def voices(language: str = "") -> list[tuple[str, str]]:
    """(code, name) of the installed voices, for ``language`` when given."""
    listing = run_espeak([f"--voices={language}" if language else "--voices"], timeout=30)
    found = []
    for line in listing.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 4:
            found.append((parts[1], parts[3]))
    return found


def duration(path: Path) -> float:
    """Length of a WAV file in seconds."""
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate()


def main() -> None:
    parser = argparse.ArgumentParser(description="Spoken WAV from text with espeak-ng.")
    parser.add_argument("--text", help="the text to speak (short texts)")
    parser.add_argument("--text-file", help="a .txt or .md file with the text (long texts)")
    parser.add_argument("--out", help="the .wav file to write")
    parser.add_argument("--voice", default="en", help="a language code such as en, en-us, de, fr, es (see --list-voices)")
    parser.add_argument("--speed", type=int, default=160, help="words per minute, 80-400")
    parser.add_argument("--pitch", type=int, default=50, help="0-99")
    parser.add_argument("--list-voices", nargs="?", const="", metavar="LANGUAGE")
    args = parser.parse_args()
    if args.list_voices is not None:
        for code, name in voices(args.list_voices):
            print(f"{code}\t{name}")
        return
    if bool(args.text) == bool(args.text_file):
        sys.exit("error: give the text with --text \"...\" or --text-file FILE (one of them)")
    if not args.out or Path(args.out).suffix.lower() != ".wav":
        sys.exit("error: give --out /mnt/user-data/outputs/<name>.wav (espeak-ng writes WAV)")
    if not 80 <= args.speed <= 400 or not 0 <= args.pitch <= 99:
        sys.exit("error: --speed must be 80-400 words per minute and --pitch 0-99")
    if args.text_file:
        source = Path(args.text_file)
        if not source.is_file():
            sys.exit(f"error: {source} does not exist; write the text there first")
        text = source.read_text(encoding="utf-8", errors="replace")
    else:
        text = args.text
    text = plain(text)
    if not text:
        sys.exit("error: there is no text to speak")
    if len(text) > MAX_CHARS:
        sys.exit(f"error: the text has {len(text)} characters; split it into parts under {MAX_CHARS}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        try:
            done = run_espeak(["-v", args.voice, "-s", str(args.speed), "-p", str(args.pitch), "-w", str(out), "-f", f.name], timeout=600)
        except subprocess.TimeoutExpired:
            sys.exit("error: espeak-ng took over 10 minutes; split the text into shorter parts")
    if "voice does not exist" in done.stderr:
        near = sorted(code for code, _ in voices() if code.split("-")[0] == args.voice.split("-")[0].lower())
        sys.exit(f"error: no voice {args.voice!r}; use a language code such as en, en-us, de, fr, es"
                 + (f" (or one of {', '.join(near)})" if near else "; list them with --list-voices"))
    if done.returncode != 0 or not out.is_file():
        sys.exit(f"error: espeak-ng failed: {done.stderr.strip()[:300]}")
    print(f"wrote {out}: {duration(out):.1f} seconds, voice {args.voice}, {len(text.split())} words")


if __name__ == "__main__":
    main()
