"""The documentation a newcomer reads: every link leads somewhere, the index lists every page,
the configuration reference matches the schema, and the commands shown exist."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from tests.test_readme import assert_real_herdsman_commands, herdsman_examples

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
MODULE = re.compile(r"`(herdsman(?:_gateway)?(?:\.\w+)+)")
REPO_PATH = re.compile(r"`((?:src|tests|benchmarks|scripts|deploy|docker|web)/[\w./-]+)")
MADE_LATER = {"deploy/compose/.env", "tests/gateway/artifacts/langgraph_compat.json"}  # by the user, by a test run


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading, a link no link)."""
    return FENCE.sub("", text)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes for the headings of ``page``: lower case, punctuation dropped,
    spaces as hyphens, ``-1``, ``-2``... for repeats."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _prose(page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    """The links of ``page`` that point into the repository (not to a web address)."""
    return [t for t in LINK.findall(_prose(page.read_text())) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(REPO) if file.is_relative_to(REPO) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {file.name}")
    assert broken == [], f"{page.relative_to(REPO)}: {broken}"


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names an importable module, or an attribute of one (``pkg.mod.Class``)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.util.find_spec(".".join(parts[:i])) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            target = importlib.import_module(".".join(parts[:i]))
            for attr in parts[i:]:
                if not hasattr(target, attr):
                    return False
                target = getattr(target, attr)
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_module_and_repository_path_named_exists(page: Path) -> None:
    """A module moved or renamed leaves no page pointing at where it was (``herdsman.x.y`` names
    are imported; ``src/``, ``tests/``, ``benchmarks/``... paths looked up)."""
    text = _prose(page.read_text())
    gone = [name for name in sorted(set(MODULE.findall(text))) if not resolves(name)]
    gone += [path for path in sorted(set(REPO_PATH.findall(text)) - MADE_LATER) if not (REPO / path).exists()]
    assert gone == [], f"{page.relative_to(REPO)} names what does not exist: {gone}"


def test_the_module_check_sees_a_name_that_is_gone() -> None:
    assert resolves("herdsman.runtime") and resolves("herdsman.client.HerdsmanClient")
    assert not resolves("herdsman.no_such_module") and not resolves("herdsman.client.NoSuchClass")


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    """The checks above can fail: a missing file and a missing heading are both seen."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[a](gone.md) [b](#nowhere) [c](#title) [d](https://example.com)\n```\n[e](also-gone.md)\n```\n"
    )
    assert relative_links(page) == ["gone.md", "#nowhere", "#title"]
    assert anchors(page) == {"title"}


def test_the_docs_index_lists_every_page() -> None:
    listed = {Path(t.partition("#")[0]).name for t in relative_links(DOCS / "README.md")}
    missing = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.name not in listed)
    assert missing == [], f"docs/README.md does not link {missing}"


def test_the_readme_links_the_docs_index_and_every_subsystem_page() -> None:
    linked = {Path(t.partition("#")[0]).name for t in relative_links(REPO / "README.md")}
    missing = sorted(p.name for p in DOCS.glob("*.md") if p.name not in linked)
    assert missing == [], f"README.md's table of contents does not link docs/{missing}"


def test_the_configuration_reference_is_generated_from_the_schema() -> None:
    spec = importlib.util.spec_from_file_location("config_reference", REPO / "scripts" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generated = module.reference()
    assert "| `sandbox.limits.memory_mb` | int \\| null | `2048` |" in generated  # nested sections are walked
    assert "| `models[].use` | str | required |" in generated  # and lists of sections
    assert generated in (DOCS / "configuration.md").read_text(), (
        "docs/configuration.md is out of date with config/schema.py: run python scripts/config_reference.py --write"
    )


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.name != "README.md" or p.parent != REPO], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_herdsman_command_shown_in_the_docs_exists(page: Path) -> None:
    """Each ``herdsman ...`` line of a page's bash blocks names a real sub-command and real options
    (the README's own are checked by tests/test_readme.py)."""
    assert_real_herdsman_commands(herdsman_examples(page.read_text(), head_lines=0))
