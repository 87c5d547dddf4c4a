"""Gather the facts a README needs from a project folder.

Usage: python3 facts.py PROJECT_DIR

Reads, without running anything: pyproject.toml (name, description, requires-python,
dependencies, console scripts), requirements*.txt, package.json (name, scripts, dependencies),
Makefile targets, Python files with a ``__main__`` block or packages with ``__main__.py``, shell
scripts, a tests folder and the license file. Prints them with the install, run and test
commands they imply. check_readme.py reads the same facts.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SKIP = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", "dist", "build", ".mypy_cache", ".pytest_cache"}
MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)
TARGET = re.compile(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", re.M)


@dataclass
class Facts:
    """What a README can say about a project."""

    name: str
    description: str = ""
    python: str = ""
    files: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    scripts: dict[str, str] = field(default_factory=dict)  # console command -> module:function
    npm_scripts: dict[str, str] = field(default_factory=dict)
    make_targets: list[str] = field(default_factory=list)
    entry_files: list[str] = field(default_factory=list)  # python3 <file>
    entry_modules: list[str] = field(default_factory=list)  # python3 -m <package>
    shell_scripts: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    tests: str = ""
    license: str = ""

    def install(self) -> list[str]:
        """The commands that install the project."""
        commands = [f"pip install -r {r}" for r in self.requirements[:1]]
        if "pyproject.toml" in self.files or "setup.py" in self.files:
            commands.append("pip install .")
        if "package.json" in self.files:
            commands.append("npm install")
        return commands

    def run(self) -> list[str]:
        """The commands that run the project."""
        return (
            list(self.scripts)
            + [f"python3 {f}" for f in self.entry_files]
            + [f"python3 -m {m}" for m in self.entry_modules]
            + [f"bash {s}" for s in self.shell_scripts]
            + [f"npm run {s}" for s in self.npm_scripts if s != "test"]
            + [f"make {t}" for t in self.make_targets if t != "test"]
        )


def project_files(root: Path) -> list[str]:
    """Relative paths of the project's files (no symlinks, no caches or virtualenvs)."""
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and not SKIP & set(p.relative_to(root).parts[:-1])
    )


def requirement_names(text: str) -> list[str]:
    """Requirement lines without comments and options (``-r``, ``--index-url``)."""
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def gather(root: Path) -> Facts:
    """The facts of the project folder ``root``."""
    facts = Facts(name=root.resolve().name, files=project_files(root))
    if "pyproject.toml" in facts.files:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        project = data.get("project", {})
        facts.name = project.get("name", facts.name)
        facts.description = project.get("description", "")
        facts.python = project.get("requires-python", "")
        facts.dependencies += project.get("dependencies", [])
        facts.scripts.update(project.get("scripts", {}))
    for name in (f for f in facts.files if re.fullmatch(r"requirements[\w.-]*\.txt", f)):
        facts.requirements.append(name)
        facts.dependencies += requirement_names((root / name).read_text(encoding="utf-8"))
    if "package.json" in facts.files:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
        facts.name = package.get("name", facts.name)
        facts.description = facts.description or package.get("description", "")
        facts.npm_scripts = dict(package.get("scripts", {}))
        facts.dependencies += [f"{k} {v}" for k, v in package.get("dependencies", {}).items()]
    if "Makefile" in facts.files:
        targets = TARGET.findall((root / "Makefile").read_text(encoding="utf-8"))
        facts.make_targets = [t for t in dict.fromkeys(targets) if not t.startswith(".")]
    for name in facts.files:
        if name.endswith("/__main__.py"):
            facts.entry_modules.append(name[: -len("/__main__.py")].replace("/", "."))
        elif name.endswith(".py") and not Path(name).name.startswith("test") and MAIN.search((root / name).read_text(encoding="utf-8", errors="replace")):
            facts.entry_files.append(name)
        elif name.endswith(".sh"):
            facts.shell_scripts.append(name)
    has_tests = any(Path(f).name.startswith("test_") and f.endswith(".py") for f in facts.files)
    if "test" in facts.npm_scripts:
        facts.tests = "npm test"
    elif "test" in facts.make_targets:
        facts.tests = "make test"
    elif has_tests:
        uses_pytest = any(d.lower().startswith("pytest") for d in facts.dependencies)
        facts.tests = "python3 -m pytest" if uses_pytest else "python3 -m unittest discover -s " + (
            "tests" if any(f.startswith("tests/") for f in facts.files) else "."
        )
    license_file = next((f for f in facts.files if re.fullmatch(r"(LICENSE|LICENCE|COPYING)(\.\w+)?", f, re.I)), "")
    if license_file:
        first = next((line.strip() for line in (root / license_file).read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()), "")
        facts.license = f"{first} (see {license_file})"
    return facts


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python3 facts.py PROJECT_DIR")
    root = Path(sys.argv[1])
    if not root.is_dir():
        sys.exit(f"error: {root} is not a folder; give the uploaded project folder")
    try:
        facts = gather(root)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        sys.exit(f"error: cannot read the project's metadata: {error}")
    print(f"name: {facts.name}")
    print(f"description: {facts.description or '(none; read the main file and say what it does)'}")
    if facts.python:
        print(f"python: {facts.python}")
    print(f"files ({len(facts.files)}): {', '.join(facts.files[:40])}" + (" ..." if len(facts.files) > 40 else ""))
    print(f"dependencies: {', '.join(dict.fromkeys(facts.dependencies)) or 'none'}")
    for label, commands in (("install", facts.install()), ("run", facts.run())):
        print(f"{label} commands:" + ("" if commands else " none"))
        for command in commands:
            print(f"  {command}")
    print(f"test command: {facts.tests or 'none'}")
    print(f"license: {facts.license or 'none'}")


if __name__ == "__main__":
    main()
