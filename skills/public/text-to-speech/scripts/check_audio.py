"""Check a WAV file: open it with the standard library's wave module and print what it holds.

Usage: python3 check_audio.py SPEECH.wav [--min-seconds 1]

Prints channels, sample rate, bits and duration; exits 1, naming the problem, when the file is
not a WAV or is shorter than ``--min-seconds`` (default 0.5).
"""

from __future__ import annotations

import argparse
import sys
import wave
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description="Open a WAV file and print what it holds.")
    parser.add_argument("wav")
    parser.add_argument("--min-seconds", type=float, default=0.5)
    args = parser.parse_args()
    path = Path(args.wav)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; run speak.py with --out {path}")
    try:
        with wave.open(str(path), "rb") as w:
            channels, rate, bits, frames = w.getnchannels(), w.getframerate(), w.getsampwidth() * 8, w.getnframes()
    except (wave.Error, EOFError) as e:
        sys.exit(f"problem: {path} is not a WAV file ({e}); run speak.py again")
    seconds = frames / rate if rate else 0.0
    print(f"{path.name}: WAV, {channels} channel(s), {rate} Hz, {bits} bit, {seconds:.1f} seconds")
    if seconds < args.min_seconds:
        print(f"problem: only {seconds:.1f} seconds of audio; check that the text file is not empty")
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
