"""The command line and output of the benchmarks that drive the agent with the embedded model by
hand, or with a scripted model in a dry mode that tests the pipeline (``skill_selection.py``,
``skill_learning.py``): ``--model``, one option of the benchmark's own, ``--only`` and
``--max-steps``; the figures printed as one JSON line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any


def model_run_parser(
    doc: str | None, option: str, *, items: str, each: str, max_steps: int, **spec: Any
) -> argparse.ArgumentParser:
    """A parser of ``--model`` (``embedded`` or ``scripted``), the benchmark's ``option`` (made
    with ``spec``, as ``add_argument`` takes it), ``--only`` (a comma-separated list of ``items``)
    and ``--max-steps`` (the model calls ``each`` may take; ``max_steps`` by default); its
    description is the first line of ``doc``, the benchmark's docstring."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument(
        "--model",
        choices=("embedded", "scripted"),
        default="embedded",
        help="the embedded model (slow, by hand), or the dry mode that tests the pipeline",
    )
    parser.add_argument(option, **spec)
    parser.add_argument("--only", default=None, help=f"run only these {items} (comma-separated)")
    parser.add_argument(
        "--max-steps", type=int, default=max_steps, help=f"model calls {each} may take (default {max_steps})"
    )
    return parser


def print_figures(figures: Mapping[str, Any]) -> None:
    """The figures as one JSON line on stdout (non-ASCII kept as it is), flushed."""
    print(json.dumps(figures, ensure_ascii=False))
    sys.stdout.flush()
