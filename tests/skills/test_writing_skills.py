"""The writing skills, each driven by the scripted model through ``/name``, scripts run in the jail.

research-brief, code-review, test-writer, readme-writer and translate-keep-format: each test
follows the skill's steps with scripted tool calls, including a mistake the skill's validator
must name, then opens the artifact on the host as its reader would (the brief's citations
against the uploads, the review's file:line references, the tests run with unittest, the
README's commands, the translation's code blocks and links) and checks what it holds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from herdsman.models.scripted import ScriptedChatModel
from tests.skills.test_media_skills import SCRIPTS, failed_with, ok, uploads
from tests.skills.test_public_skills import OUT, UP, WS, _needs_bwrap, bash, call, run, user_data  # noqa: F401

pytestmark = pytest.mark.bwrap


def sections(markdown: str) -> dict[str, list[str]]:
    """Non-empty lines under each ``## `` heading."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            found[current] = []
        elif line.strip() and current:
            found[current].append(line.strip())
    return found


async def test_research_brief_cites_only_uploaded_sources(home: Path) -> None:
    up = uploads(home, "t-brief")
    (up / "sales.md").write_text(
        "# Q3 sales report\n\nRevenue grew 12% in Q3, led by the South region.\nDetails: https://intranet.example/q3.\n"
    )
    (up / "survey.txt").write_text(
        "Customer survey 2024\nMost customers want faster delivery.\nPrice was rarely named.\n"
    )
    (up / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    path = f"{OUT}/q3-brief.md"
    brief = (
        "# Q3 performance\n\n## Summary\nRevenue grew in Q3 and customers ask for speed [1][3].\n\n"
        '## Findings\n- "Revenue grew 12% in Q3" [1].\n- "customers want cheaper delivery" [3].\n'
        "- Market share rose, see https://news.example/q3 [1].\n\n## Gaps\n- None\n\n"
        "## Sources\n[1] sales.md - Q3 sales report\n[3] survey.txt - Customer survey 2024\n"
    )
    fixed = (
        "# Q3 performance\n\n## Summary\nRevenue grew 12% in Q3 and customers ask for faster delivery [2][3].\n\n"
        '## Findings\n- "Revenue grew 12% in Q3" [2].\n- "customers want faster delivery" [3].\n'
        "- The full figures are at https://intranet.example/q3 [2].\n\n## Gaps\n- Nothing on costs.\n\n"
        "## Sources\n[2] sales.md - Q3 sales report\n[3] survey.txt - Customer survey 2024\n"
    )
    check = f"python3 {SCRIPTS}/research-brief/scripts/check_brief.py {path} --sources {UP}"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {SCRIPTS}/research-brief/scripts/sources.py {UP}"),
            call("write_file", path=path, content=brief),
            bash(check),
            call("write_file", path=path, content=fixed),
            bash(check),
            "Revenue grew 12% [2]; customers want faster delivery [3]. Brief: outputs/q3-brief.md",
        ]
    )
    results = await run(home, "t-brief", "/research-brief what do my files say about Q3?", model)
    listing, first, last = results[0], results[2], results[-1]
    assert "[1] logo.png - (not a text file; cannot be quoted)" in listing.content
    assert "[2] sales.md - Q3 sales report" in listing.content and "url: https://intranet.example/q3" in listing.content
    assert "[3] survey.txt - Customer survey 2024" in listing.content
    assert failed_with(first, "source 'sales.md' is [2] in sources.py, not [1]; use its number")
    assert "[1] is cited but" not in first.content and "survey.txt' is" not in first.content
    assert "the quote 'customers want cheaper delivery' is not in source [3]" in first.content
    assert "the quote 'Revenue grew 12% in Q3' is not in source [1]" in first.content  # [1] is the logo
    assert "the URL https://news.example/q3 is in no uploaded file; remove it" in first.content
    assert "5 citations of 2 sources, 2 quotes" in last.content and ok(last)
    # the brief as its reader checks it: every [n] leads to an uploaded file that holds what is quoted
    text = (user_data(home, "t-brief") / "outputs" / "q3-brief.md").read_text()
    listed = dict(re.findall(r"^\[(\d+)\] (\S+) - ", text, re.M))
    assert listed == {"2": "sales.md", "3": "survey.txt"}
    assert {n for n in re.findall(r"\[(\d+)\]", text.split("## Sources")[0])} == set(listed)
    for quote, n in re.findall(r'"([^"]+)" \[(\d+)\]', text):
        assert quote.lower() in (up / listed[n]).read_text().lower()


async def test_code_review_names_real_files_and_lines(home: Path) -> None:
    repo = uploads(home, "t-review") / "shop"
    repo.mkdir()
    (repo / "cart.py").write_text(
        'def total(items):\n    # TODO: handle discounts\n    return sum(i["price"] for i in items)\n\n\n'
        "def load(path):\n    try:\n        return open(path).read()\n    except:\n        return None\n"
    )
    (repo / "util.py").write_text("def broken(:\n    pass\n")
    (repo / "README.md").write_text("# Shop\n")
    path = f"{OUT}/code-review.md"
    review = (
        "# Code review: shop\n\n## Summary\nA small cart module; one file does not compile.\n\n## Findings\n"
        "- **medium** `cart.py:9` - bare `except:` hides errors; catch `OSError`.\n"
        "- **low** `cart.py:42` - the discount TODO is open.\n- **low** `shop/checkout.py:3` - no tests.\n\n"
        "## Suggestions\n- Add unit tests for `total`.\n"
    )
    check = f"python3 {SCRIPTS}/code-review/scripts/check_review.py {path} --repo {UP}/shop"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {SCRIPTS}/code-review/scripts/inventory.py {UP}/shop"),
            call("write_file", path=path, content=review),
            bash(check),
            call(
                "str_replace",
                path=path,
                old="- **low** `cart.py:42`",
                new="- **high** `util.py:1` - `def broken(:` is a syntax error; the module cannot be imported.\n- **low** `cart.py:2`",
            ),
            call("str_replace", path=path, old="- **low** `shop/checkout.py:3` - no tests.\n", new=""),
            bash(check),
            "3 findings (1 high: util.py does not compile). Review: outputs/code-review.md",
        ]
    )
    results = await run(home, "t-review", "/code-review please review the shop folder", model)
    inventory, first, last = results[0], results[2], results[-1]
    assert "3 files, 13 lines" in inventory.content
    assert "util.py:1: syntax error: invalid syntax" in inventory.content
    assert "cart.py:9: bare except" in inventory.content and "cart.py:2: todo: handle discounts" in inventory.content
    assert failed_with(first, "cart.py:42 is past the end; cart.py has 10 lines")
    assert "shop/checkout.py is not a file in the repository" in first.content
    assert "util.py:1 has a syntax error; add it as a **high** finding" in first.content
    assert "3 findings (1 high, 1 medium, 1 low)" in last.content and ok(last)
    assert sorted(p.name for p in repo.iterdir()) == ["README.md", "cart.py", "util.py"]  # no __pycache__ written
    text = (user_data(home, "t-review") / "outputs" / "code-review.md").read_text()
    for name, line in re.findall(r"`([\w/.]+\.py):(\d+)`", text):
        assert 1 <= int(line) <= len((repo / name).read_text().splitlines())


PRICING = '''"""Prices."""


def discount(price: float, percent: float) -> float:
    """Price after a percent discount."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be 0-100")
    return round(price * (1 - percent / 100), 2)


def total(prices: list[float]) -> float:
    """Sum of prices."""
    return sum(prices[1:])


def _helper() -> None:
    pass
'''

TESTS = """import unittest

from pricing import discount, total


class TestDiscount(unittest.TestCase):
    def test_ten_percent(self):
        self.assertEqual(discount(100, 10), 90.0)

    def test_percent_over_100_is_refused(self):
        with self.assertRaises(ValueError):
            discount(100, 150)


class TestTotal(unittest.TestCase):
    def test_sum(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_empty(self):
        self.assertEqual(total([]), 0)


if __name__ == "__main__":
    unittest.main()
"""


async def test_test_writer_runs_the_tests_and_documents_a_bug(home: Path) -> None:
    up = uploads(home, "t-tests")
    (up / "pricing.py").write_text(PRICING)
    path = f"{OUT}/test_pricing.py"
    check = f"python3 {SCRIPTS}/test-writer/scripts/check_tests.py {path} --module {UP}/pricing.py"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {SCRIPTS}/test-writer/scripts/api.py {UP}/pricing.py"),
            call(
                "write_file",
                path=path,
                content=TESTS.replace("from pricing import discount, total", "from pricing import discount").split(
                    "class TestTotal"
                )[0],
            ),
            bash(check),
            call("write_file", path=path, content=TESTS),
            bash(check),
            call(
                "str_replace",
                path=path,
                old="    def test_sum(self):",
                new="    @unittest.expectedFailure  # total() skips the first price\n    def test_sum(self):",
            ),
            bash(check),
            "4 tests; total() skips the first price (bug). Tests: outputs/test_pricing.py",
        ]
    )
    results = await run(home, "t-tests", "/test-writer write tests for pricing.py", model)
    api, missing, failing, done = results[0], results[2], results[4], results[6]
    assert "discount(price: float, percent: float) -> float  # Price after a percent discount." in api.content
    assert "total(prices: list[float]) -> float" in api.content and "_helper" not in api.content
    assert "import line: from pricing import discount, total" in api.content
    assert failed_with(missing, "no test calls total(prices: list[float]) -> float; add a test method for it")
    assert "TestDiscount.test_ten_percent: ok" in missing.content
    assert failed_with(failing, "test_sum failed:") and "AssertionError: 5 != 6" in failing.content
    assert "TestTotal.test_empty: ok" in failing.content
    assert "documented bugs (expected failures): test_sum" in done.content and ok(done)
    # a user runs the tests next to the module
    outputs = user_data(home, "t-tests") / "outputs"
    env = dict(os.environ, PYTHONPATH=str(up), PYTHONDONTWRITEBYTECODE="1")
    ran = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_pricing"],
        cwd=outputs,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0 and "Ran 4 tests" in ran.stderr and "OK (expected failures=1)" in ran.stderr


async def test_readme_writer_commands_name_files_that_exist(home: Path) -> None:
    project = uploads(home, "t-readme") / "weather"
    (project / "weather").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "weather-cli"\ndescription = "Show the forecast for a city"\nrequires-python = ">=3.10"\n'
        'dependencies = ["requests>=2"]\n[project.scripts]\nweather = "weather.cli:main"\n'
    )
    (project / "requirements.txt").write_text("requests>=2\n")
    (project / "weather" / "__init__.py").write_text("")
    (project / "weather" / "cli.py").write_text('def main():\n    print("sunny")\n')
    (project / "weather" / "__main__.py").write_text("from weather.cli import main\n\nmain()\n")
    (project / "tests" / "test_cli.py").write_text("import unittest\n")
    (project / "LICENSE").write_text("MIT License\n\nCopyright 2024\n")
    path = f"{OUT}/README.md"
    readme = (
        "# weather-cli\n\nShow the forecast for a city from the command line.\n\n## Installation\n\n```bash\n"
        "pip install -r requirements.txt\npip install .\n```\n\n## Usage\n\n```bash\nweather\npython3 -m weather\n"
        "python3 forecast.py --city Paris\n```\n\n## Tests\n\n```bash\npython3 -m unittest discover -s tests\n```\n"
    )
    check = f"python3 {SCRIPTS}/readme-writer/scripts/check_readme.py {path} --project {UP}/weather"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {SCRIPTS}/readme-writer/scripts/facts.py {UP}/weather"),
            call("write_file", path=path, content=readme),
            bash(check),
            call("str_replace", path=path, old="python3 forecast.py --city Paris\n", new=""),
            call(
                "str_replace",
                path=path,
                old="discover -s tests\n```\n",
                new="discover -s tests\n```\n\n## License\n\nMIT License (see LICENSE).\n",
            ),
            bash(check),
            "README written: outputs/README.md",
        ]
    )
    results = await run(home, "t-readme", "/readme-writer write a README for the weather project", model)
    facts, first, last = results[0], results[2], results[-1]
    assert "name: weather-cli" in facts.content and "dependencies: requests>=2" in facts.content
    assert "install commands:\n  pip install -r requirements.txt\n  pip install .\n" in facts.content
    assert "run commands:\n  weather\n  python3 -m weather\n" in facts.content
    assert "test command: python3 -m unittest discover -s tests" in facts.content
    assert "license: MIT License (see LICENSE)" in facts.content
    assert failed_with(first, "`python3 forecast.py --city Paris`: forecast.py does not exist in the project")
    assert "add a section '## License'" in first.content
    assert "sections Installation, Usage, Tests, License; 4 commands" in last.content and ok(last)
    text = (user_data(home, "t-readme") / "outputs" / "README.md").read_text()
    assert list(sections(text)) == ["Installation", "Usage", "Tests", "License"]
    assert text.startswith("# weather-cli\n")


GUIDE = """---
title: Guide
lang: en
---

# Getting started

Install the tool with `pip install acme` and read [the docs](https://acme.dev/docs "Docs").

## Steps

1. Open the [settings][cfg] page.
2. Click **Save**.

| Option | Meaning |
|---|:---:|
| `--fast` | Runs quickly |

```python
print("hello")  # not translated
```

[cfg]: https://acme.dev/settings
"""

SEGMENTS = """@@ 1 @@
Premiers pas
@@ 2 @@
Installez l'outil avec {{1}} et lisez [la documentation]({{2}}).
@@ 3 @@
Étapes
@@ 4 @@
Ouvrez la page [paramètres][{{1}}].
@@ 5 @@
Cliquez sur **Enregistrer**.
@@ 6 @@
| Option | Signification |
@@ 7 @@
| {{1}} | Rapide |
"""


async def test_translate_keep_format_keeps_code_links_and_tables(home: Path) -> None:
    (uploads(home, "t-translate") / "guide.md").write_text(GUIDE)
    segments = f"python3 {SCRIPTS}/translate-keep-format/scripts/segments.py"
    join = f"{segments} join {UP}/guide.md --segments {WS}/segments-fr.txt --out {OUT}/guide.fr.md"
    model = ScriptedChatModel(
        responses=[
            bash(f"{segments} split {UP}/guide.md --out {WS}/segments.txt"),
            call("read_file", path=f"{WS}/segments.txt"),
            call(
                "write_file", path=f"{WS}/segments-fr.txt", content=SEGMENTS.replace("| {{1}} | Rapide |", "| Rapide |")
            ),
            bash(join),
            call("str_replace", path=f"{WS}/segments-fr.txt", old="| Rapide |", new="| {{1}} | Rapide |"),
            bash(join),
            bash(
                f"python3 {SCRIPTS}/translate-keep-format/scripts/check_translation.py {UP}/guide.md {OUT}/guide.fr.md"
            ),
            "Translated 7 segments into French: outputs/guide.fr.md",
        ]
    )
    results = await run(home, "t-translate", "/translate-keep-format translate guide.md into French", model)
    split, read, _, broken, _, joined, checked = results
    assert "7 segments to translate; 1 code blocks and the front matter stay as they are" in split.content
    assert "Install the tool with {{1}} and read [the docs]({{2}})." in read.content
    assert failed_with(broken, "segment 7: keep {{1}} exactly once (it stands for '`--fast`')")
    assert "segment 7 is a table row with 2 cells; keep every '|' (1 cells now)" in broken.content
    assert "nothing was written" in broken.content
    assert "wrote /mnt/user-data/outputs/guide.fr.md: 7 segments translated, 1 code blocks kept" in joined.content
    assert "2 headings, 1 code blocks, 2 links, 2 table rows, 2 list items, 1 front matter" in checked.content and ok(
        checked
    )
    french = (user_data(home, "t-translate") / "outputs" / "guide.fr.md").read_text()
    assert french.startswith("---\ntitle: Guide\nlang: en\n---\n\n# Premiers pas\n")
    assert '```python\nprint("hello")  # not translated\n```\n' in french
    assert '[la documentation](https://acme.dev/docs "Docs")' in french and "`pip install acme`" in french
    assert "1. Ouvrez la page [paramètres][cfg].\n2. Cliquez sur **Enregistrer**.\n" in french
    assert "| Option | Signification |\n|---|:---:|\n| `--fast` | Rapide |\n" in french
    assert french.endswith("[cfg]: https://acme.dev/settings\n")
    assert len(french.splitlines()) == len(GUIDE.splitlines())
