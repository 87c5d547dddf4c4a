"""Check a README.md against the project folder it describes.

Usage: python3 check_readme.py README.md --project PROJECT_DIR

Checks: a ``# `` title with a sentence under it; the sections Installation and Usage (and License
when the project has a license file); every command in a shell code block or in inline code
refers to something that exists: ``python3 FILE``, ``python3 -m MODULE``, ``bash FILE``,
``./FILE``, ``pip install -r FILE``, ``pip install .``, ``cd DIR``, ``make TARGET``,
``npm run SCRIPT`` and the project's console commands. Prints the commands it checked, then OK
or each problem with what to fix.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from facts import Facts, gather  # noqa: E402

SHELL_BLOCK = re.compile(r"^```[ \t]*(bash|sh|shell|console|zsh|)[ \t]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
STARTS = ("python", "python3", "pip", "pip3", "bash", "sh", "make", "npm", "cd")
TOOLS = {"pip", "venv", "unittest", "pytest", "http.server", "build", "twine", "doctest", "pydoc", "json.tool", "ensurepip"}


def commands_in(text: str) -> list[str]:
    """Command lines in shell code blocks and inline code that start with a known command."""
    lines = [line for block in SHELL_BLOCK.findall(text) for line in block[1].splitlines()]
    lines += INLINE.findall(SHELL_BLOCK.sub("", text))
    found = []
    for line in lines:
        line = line.strip().removeprefix("$ ")
        for part in re.split(r"\s*(?:&&|;|\|\|)\s*", line):
            words = part.split()
            if words and (words[0] in STARTS or words[0].startswith("./")):
                found.append(part)
    return found


def problem_with(command: str, facts: Facts, root: Path) -> str | None:
    """What is wrong with ``command`` in this project, or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return f"`{command}`: unbalanced quotes"
    files, first = set(facts.files), words[0]
    dirs = {str(Path(f).parent) for f in files} | {"."}

    def missing(path: str) -> bool:
        return path.removeprefix("./").rstrip("/") not in files | dirs

    args = [w for w in words[1:] if not w.startswith("-")]
    if first in ("python", "python3"):
        if "-c" in words:
            return None
        if "-m" in words[1:-1]:
            module = words[words.index("-m") + 1]
            path = module.replace(".", "/")
            known = module in TOOLS or f"{path}.py" in files or f"{path}/__init__.py" in files or f"{path}/__main__.py" in files
            return None if known else f"`{command}`: there is no module {module} in the project ({path}.py or {path}/__main__.py)"
        if args and missing(args[0]):
            return f"`{command}`: {args[0]} does not exist in the project"
    elif first in ("bash", "sh") and args and missing(args[0]):
        return f"`{command}`: {args[0]} does not exist in the project"
    elif first.startswith("./") and missing(first):
        return f"`{command}`: {first} does not exist in the project"
    elif first in ("pip", "pip3") and "install" in words:
        if "-r" in words[:-1] and missing(words[words.index("-r") + 1]):
            return f"`{command}`: {words[words.index('-r') + 1]} does not exist in the project"
        if ("." in args or "-e" in words) and not {"pyproject.toml", "setup.py"} & files:
            return f"`{command}`: the project has no pyproject.toml or setup.py to install; use the requirements file"
    elif first == "cd" and args and args[0] not in (facts.name, root.name, "..") and args[0].rstrip("/") not in dirs:
        return f"`{command}`: there is no folder {args[0]} in the project"
    elif first == "make" and args and args[0] not in facts.make_targets:
        return f"`{command}`: the Makefile has no target {args[0]}" if facts.make_targets else f"`{command}`: the project has no Makefile"
    elif first == "npm" and args[:1] == ["run"] and args[1:2] and args[1] not in facts.npm_scripts:
        return f"`{command}`: package.json has no script {args[1]}"
    return None


def check(text: str, root: Path) -> tuple[list[str], list[str]]:
    """Problems with the README ``text`` and the commands it checked."""
    facts = gather(root)
    problems: list[str] = []
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        problems.append("start with a title line '# <project name>'")
    headings = [line[3:].strip().lower() for line in lines if line.startswith("## ")]
    intro = "\n".join(lines[1 : next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))]).strip()
    if not intro:
        problems.append("add one or two sentences under the title saying what the project does")
    wanted = ["installation", "usage"] + (["license"] if facts.license else [])
    for heading in wanted:
        if heading not in headings:
            problems.append(f"add a section '## {heading.capitalize()}'")
    if [h for h in headings if h in ("installation", "usage")] == ["usage", "installation"]:
        problems.append("put ## Installation before ## Usage")
    commands = commands_in(text)
    if not commands:
        problems.append("no commands found; put the install and run commands from facts.py in ```bash blocks")
    for command in commands:
        problem = problem_with(command, facts, root)
        if problem:
            problems.append(problem)
    placeholders = sorted(set(re.findall(r"<(?:project|name|description|folder|command)[^<>]{0,30}>", text, re.I)))
    if placeholders:
        problems.append(f"replace the placeholders {', '.join(placeholders)}")
    return problems, commands


def main() -> None:
    parser = argparse.ArgumentParser(description="Check a README against the project folder.")
    parser.add_argument("readme")
    parser.add_argument("--project", required=True, help="the project folder (as given to facts.py)")
    args = parser.parse_args()
    path, root = Path(args.readme), Path(args.project)
    if not path.is_file():
        sys.exit(f"problem: {path} does not exist; write the README there first")
    if not root.is_dir():
        sys.exit(f"problem: --project {root} is not a folder")
    problems, commands = check(path.read_text(encoding="utf-8"), root)
    headings = [line[3:].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    print(f"{path.name}: sections {', '.join(headings) or 'none'}; {len(commands)} commands")
    for command in commands:
        print(f"  $ {command}")
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
