"""Validate a skill folder the way Herdsman does, with the standard library only (no PyYAML).

Usage: python3 validate_skill.py SKILL_DIR

Reads the simple YAML of a front matter (``key: value``, ``key: [a, b]``, ``key:`` followed by
``- item`` lines, ``key:`` followed by indented ``NAME: text``). Prints OK or one line per problem,
naming the field and the fix; ``herdsman skills validate`` gives the final word.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIELDS = ("name", "description", "license", "allowed-tools", "env", "required-secrets", "outputs", "metadata", "version", "compatibility")


def scalar(text: str) -> str:
    text = text.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_front_matter(text: str) -> tuple[dict[str, object], str, list[str]]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, "", ["no front matter: start the file with '---', then name: and description:, then '---'"]
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return {}, "", ["the front matter is not closed: add a '---' line after its last key"]
    data: dict[str, object] = {}
    key = None
    for raw in lines[1:end]:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw.startswith((" ", "\t")) and key is not None:
            item = raw.strip()
            if item.startswith("- "):
                data.setdefault(key, [])
                if isinstance(data[key], list):
                    data[key].append(scalar(item[2:]))
            elif ":" in item:
                data.setdefault(key, {})
                if isinstance(data[key], dict):
                    k, _, v = item.partition(":")
                    data[key][k.strip()] = scalar(v)
            continue
        k, sep, v = raw.partition(":")
        if not sep:
            return {}, "", [f"line {raw!r} is not 'key: value'"]
        key, v = k.strip(), v.strip()
        if v.startswith("[") and v.endswith("]"):
            data[key] = [scalar(x) for x in v[1:-1].split(",") if x.strip()]
        else:
            data[key] = scalar(v) if v else None
    return data, "\n".join(lines[end + 1 :]), []


def validate(folder: Path) -> list[str]:
    path = folder / "SKILL.md"
    if not path.is_file():
        return [f"{path}: not found; every skill folder needs a SKILL.md"]
    data, body, problems = parse_front_matter(path.read_text(encoding="utf-8"))
    if problems:
        return [f"{path}: {p}" for p in problems]
    out = []
    for key in data:
        if key not in FIELDS:
            out.append(f"{path}: field {key!r} is not a known field; the fields are {', '.join(FIELDS)}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        out.append(f"{path}: field 'name': {name!r} is not valid; use lowercase letters, digits and hyphens")
    elif name != folder.name:
        out.append(f"{path}: field 'name': {name!r} differs from the folder name {folder.name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        out.append(f"{path}: field 'description' is missing; say what the skill does and when to use it")
    for key in ("allowed-tools", "required-secrets", "outputs"):
        value = data.get(key)
        if value is not None and not isinstance(value, list):
            out.append(f"{path}: field {key!r} must be a list, e.g. [a, b]")
    for var in data.get("required-secrets") or []:
        if not VAR_RE.fullmatch(str(var)):
            out.append(f"{path}: field 'required-secrets': {var!r} is not a valid variable name")
    if not body.strip():
        out.append(f"{path}: no instructions after the front matter; write the steps")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: validate_skill.py SKILL_DIR")
    found = validate(Path(sys.argv[1]))
    for problem in found:
        print(problem)
    print("OK" if not found else f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
