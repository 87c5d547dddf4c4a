"""Write ``tasks.yaml``: the agent task benchmark's tasks, their set-up files and their checks.

The tasks are written out by this script so that every expected value is computed from the very
set-up files the agent gets (a sum over the CSV it will read, the lines of the log it will grep):
the data file cannot hold a wrong answer. ``python benchmarks/agent_tasks/make_tasks.py`` rewrites
it; a test checks that the committed file is what this script writes.

Every task carries its split: the development tasks are here (the first forty, then some in the
categories added with the split), the held-out test tasks in ``heldout.py``; README.md states what
may be done with each.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import random
from pathlib import Path

import yaml
from heldout import heldout_tasks
from taskkit import OUT, WS, csv_text, task

HERE = Path(__file__).parent
rng = random.Random(20)


REGIONS = ["north", "south", "east", "west"]
SALES = [[f"2025-0{1 + i % 6}-{10 + i % 18}", REGIONS[i % 4], round(rng.uniform(10, 500), 2)] for i in range(30)]
SALES_CSV = csv_text(["date", "region", "amount"], SALES)
SALES_TOTAL = round(sum(r[2] for r in SALES), 2)
BY_REGION = {r: round(sum(x[2] for x in SALES if x[1] == r), 2) for r in REGIONS}
PEOPLE = [["Ada", 36], ["Linus", 54], ["Grace", 85], ["Alan", 41], ["Edsger", 72]]
ORDERS = [
    {"id": i, "status": rng.choice(["ok", "ok", "failed", "pending"]), "total": rng.randint(5, 90)} for i in range(25)
]
PRODUCTS = [[f"item{i}", round(rng.uniform(1, 99), 2)] for i in range(12)]
VISITS = [[f"2025-03-{1 + i % 28:02d}", rng.choice(["home", "about", "shop"]), rng.randint(1, 40)] for i in range(57)]
CONTACTS = [
    ["Mia", "mia@example.org", "Oslo"],
    ["Noah", "noah@example.org", "Lima"],
    ["Ivy", "ivy@example.org", "Pune"],
]
TEMPS = [["Oslo", 4.5], ["Cairo", 31.2], ["Lima", 19.8], ["Pune", 28.4], ["Quito", 14.1]]
LOG = "".join(
    f"2025-05-01 10:{i:02d}:00 {'ERROR' if i % 7 == 3 else 'INFO'} {'disk full' if i % 7 == 3 else 'request served'} id={i}\n"
    for i in range(40)
)
ERROR_LINES = [line for line in LOG.splitlines() if "ERROR" in line]
BIG_LINES = 137
ESSAY = (
    " ".join(rng.choice(["the", "herd", "moves", "north", "slowly", "grass", "river", "calm"]) for _ in range(173))
    + "\n"
)
A_NUMS = [rng.randint(1, 100) for _ in range(10)]
B_NUMS = [rng.randint(1, 100) for _ in range(10)]
TEAM = ["Zoe", "Adam", "Mira", "Karl", "Bea"]
NAMES = ["ann", "bob", "ann", "cid", "dan", "bob", "eve", "ann", "fay"]
UNIQUE = list(dict.fromkeys(NAMES))
PRIMES = [p for p in range(2, 30) if all(p % d for d in range(2, p))]
JAN = [{"date": f"2025-01-{d:02d}", "weekday": calendar.day_name[dt.date(2025, 1, d).weekday()]} for d in range(1, 32)]
LIBRARY = {
    f"library/book{i:02d}.txt": f"Chapter {i}. The {rng.choice(['owl', 'heron', 'crow', 'swan'])} flew over the valley.\n"
    for i in range(12)
}
LIBRARY["library/book07.txt"] = "Chapter 7. A falcon circled above the herd.\n"
PROJECT = {
    "project/app.py": "def run():\n    # TODO: handle errors\n    pass\n# TODO: add logging\n",
    "project/util.py": "def helper():\n    return 1  # TODO: cache this\n",
    "project/db/models.py": "class User:\n    pass\n# TODO: add fields\n# TODO: add indexes\n",
    "project/README.md": "TODO: this one is not in a .py file\n",
}
TODO_COUNT = sum(text.count("TODO") for path, text in PROJECT.items() if path.endswith(".py"))


def dev_tasks() -> list[dict]:
    """The development split: the first forty tasks (the harness's rules were tuned on them)."""
    return [
        # -- files
        task(
            "files_create_note",
            "files",
            f"Create a file {WS}/todo.txt with three lines: buy milk, call mom, fix bike.",
            {"type": "file_lines", "path": "workspace/todo.txt", "lines": ["buy milk", "call mom", "fix bike"]},
        ),
        task(
            "files_copy_report",
            "files",
            f"Copy report.md from the workspace to {OUT}/report.md.",
            {"type": "file_text", "path": "outputs/report.md", "text": "# Report\n\nAll systems nominal.\n"},
            {"workspace/report.md": "# Report\n\nAll systems nominal.\n"},
        ),
        task(
            "files_rename_ext",
            "files",
            f"Rename every .txt file in {WS}/notes to .md.",
            [
                {"type": "exists", "paths": ["workspace/notes/a.md", "workspace/notes/b.md", "workspace/notes/c.md"]},
                {
                    "type": "absent",
                    "paths": ["workspace/notes/a.txt", "workspace/notes/b.txt", "workspace/notes/c.txt"],
                },
            ],
            {"workspace/notes/a.txt": "alpha\n", "workspace/notes/b.txt": "beta\n", "workspace/notes/c.txt": "gamma\n"},
        ),
        task(
            "files_append_line",
            "files",
            f"Append the line 'line3' to {WS}/log.txt.",
            {"type": "file_lines", "path": "workspace/log.txt", "lines": ["line1", "line2", "line3"]},
            {"workspace/log.txt": "line1\nline2\n"},
        ),
        # -- shell
        task(
            "shell_count_py",
            "shell",
            f"How many .py files are in {WS}/src (including subfolders)? Write just the number to {OUT}/count.txt.",
            {"type": "file_number", "path": "outputs/count.txt", "value": 7},
            {
                **{f"workspace/src/m{i}.py": "x = 1\n" for i in range(5)},
                "workspace/src/sub/n1.py": "y = 2\n",
                "workspace/src/sub/n2.py": "z = 3\n",
                "workspace/src/readme.txt": "hi\n",
                "workspace/src/sub/notes.txt": "hi\n",
            },
        ),
        task(
            "shell_largest_file",
            "shell",
            f"Which file in {WS}/data is the largest? Write its file name to {OUT}/largest.txt.",
            {"type": "file_text", "path": "outputs/largest.txt", "text": "b.log"},
            {"workspace/data/a.log": "x" * 10, "workspace/data/b.log": "x" * 500, "workspace/data/c.log": "x" * 50},
        ),
        task(
            "shell_zip_docs",
            "shell",
            f"Create a zip archive {OUT}/docs.zip containing the files in {WS}/docs.",
            {"type": "zip_names", "path": "outputs/docs.zip", "names": ["x.md", "y.md"]},
            {"workspace/docs/x.md": "# X\n", "workspace/docs/y.md": "# Y\n"},
        ),
        task(
            "shell_line_count",
            "shell",
            f"How many lines does {WS}/big.txt have?",
            {"type": "answer_number", "value": BIG_LINES},
            {"workspace/big.txt": "".join(f"row {i}\n" for i in range(BIG_LINES))},
        ),
        # -- data
        task(
            "data_csv_total",
            "data",
            f"What is the total of the amount column in {WS}/sales.csv?",
            {"type": "answer_number", "value": SALES_TOTAL, "tolerance": 0.05},
            {"workspace/sales.csv": SALES_CSV},
        ),
        task(
            "data_csv_to_json",
            "data",
            f"Convert {WS}/people.csv to a JSON list of objects with keys name and age (age as a number), saved as {OUT}/people.json.",
            {"type": "json_file", "path": "outputs/people.json", "equals": [{"name": n, "age": a} for n, a in PEOPLE]},
            {"workspace/people.csv": csv_text(["name", "age"], PEOPLE)},
        ),
        task(
            "data_json_count",
            "data",
            f"How many orders in {WS}/orders.json have the status failed?",
            {"type": "answer_number", "value": sum(o["status"] == "failed" for o in ORDERS)},
            {"workspace/orders.json": json.dumps(ORDERS, indent=1)},
        ),
        task(
            "data_group_sum",
            "data",
            f"Compute the total amount per region in {WS}/sales.csv and save it to {OUT}/by_region.json as a JSON object mapping region to total.",
            {"type": "json_file", "path": "outputs/by_region.json", "equals": BY_REGION, "tolerance": 0.05},
            {"workspace/sales.csv": SALES_CSV},
        ),
        # -- code fixes
        task(
            "fix_name_error",
            "code_fix",
            f"{WS}/greet.py crashes. Fix it so that python3 greet.py Ann prints Hello, Ann!",
            {"type": "run", "command": "python3 greet.py Ann", "cwd": "workspace", "stdout": "Hello, Ann!"},
            {"workspace/greet.py": "import sys\n\nname = sys.argv[1]\nprint('Hello, ' + nme + '!')\n"},
        ),
        task(
            "fix_mean_tests",
            "code_fix",
            f"python3 test_stats.py fails in {WS}. Fix the bug in stats.py (not the test) so that it passes.",
            [
                {"type": "run", "command": "python3 test_stats.py", "cwd": "workspace"},
                {
                    "type": "file_text",
                    "path": "workspace/test_stats.py",
                    "text": "from stats import mean\n\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\nprint('ok')\n",
                },
            ],
            {
                "workspace/stats.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
                "workspace/test_stats.py": "from stats import mean\n\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\nprint('ok')\n",
            },
        ),
        task(
            "fix_keep_args",
            "code_fix",
            f"{WS}/wc.py should print the number of words in a file (python3 wc.py FILE), or the number of lines with --lines, but it prints the number of characters. Fix that one bug.",
            [
                {"type": "run", "command": "python3 wc.py sample.txt", "cwd": "workspace", "stdout": "5"},
                {"type": "run", "command": "python3 wc.py --lines sample.txt", "cwd": "workspace", "stdout": "2"},
            ],
            {
                "workspace/wc.py": "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('path')\nparser.add_argument('--lines', action='store_true')\nargs = parser.parse_args()\ntext = open(args.path).read()\nif args.lines:\n    print(len(text.splitlines()))\nelse:\n    print(len(text))\n",
                "workspace/sample.txt": "one two three\nfour five\n",
            },
        ),
        task(
            "fix_config_key",
            "code_fix",
            f"python3 {WS}/server.py fails with a KeyError. Fix server.py so it prints the port from config.json.",
            {"type": "run", "command": "python3 server.py", "cwd": "workspace", "stdout": "listening on 8080"},
            {
                "workspace/server.py": "import json\n\nconfig = json.load(open('config.json'))\nprint('listening on', config['Port'])\n",
                "workspace/config.json": '{"port": 8080, "host": "localhost"}\n',
            },
        ),
        # -- search
        task(
            "search_word_file",
            "search",
            f"Which file in {WS}/library mentions a falcon? Write just its file name to {OUT}/answer.txt.",
            {"type": "file_text", "path": "outputs/answer.txt", "text": "book07.txt"},
            {f"workspace/{k}": v for k, v in LIBRARY.items()},
        ),
        task(
            "search_todo_count",
            "search",
            f"How many TODO comments are there in the .py files under {WS}/project?",
            {"type": "answer_number", "value": TODO_COUNT},
            {f"workspace/{k}": v for k, v in PROJECT.items()},
        ),
        task(
            "search_errors_to_file",
            "search",
            f"Save all lines containing ERROR from {WS}/app.log to {OUT}/errors.txt.",
            {"type": "file_lines", "path": "outputs/errors.txt", "lines": ERROR_LINES},
            {"workspace/app.log": LOG},
        ),
        task(
            "search_function_def",
            "search",
            f"In which file under {WS}/pkg is the function parse_date defined? Write its path relative to pkg (like a/b.py) to {OUT}/where.txt.",
            {"type": "file_text", "path": "outputs/where.txt", "text": "utils/dates.py"},
            {
                "workspace/pkg/main.py": "from utils.dates import parse_date\n\nprint(parse_date('2025-01-01'))\n",
                "workspace/pkg/utils/dates.py": "import datetime\n\ndef parse_date(s):\n    return datetime.date.fromisoformat(s)\n",
                "workspace/pkg/utils/text.py": "def slug(s):\n    return s.lower()\n",
            },
        ),
        # -- multi-step
        task(
            "multi_summary_md",
            "multi_step",
            f"Create {OUT}/summary.md with a line 'Total: <total amount>' and a line 'Rows: <number of data rows>' for {WS}/sales.csv.",
            {
                "type": "labelled_numbers",
                "path": "outputs/summary.md",
                "values": {"Total": SALES_TOTAL, "Rows": len(SALES)},
                "tolerance": 0.05,
            },
            {"workspace/sales.csv": SALES_CSV},
        ),
        task(
            "multi_primes",
            "multi_step",
            f"Write a Python script {WS}/primes.py that prints the prime numbers below 30, one per line. Run it and save its output to {OUT}/primes.txt.",
            [
                {"type": "file_lines", "path": "outputs/primes.txt", "lines": [str(p) for p in PRIMES]},
                {
                    "type": "run",
                    "command": "python3 primes.py",
                    "cwd": "workspace",
                    "stdout": "\n".join(str(p) for p in PRIMES),
                },
            ],
        ),
        task(
            "multi_ini_edit",
            "multi_step",
            f"In {WS}/app.ini set port to 9090 and debug to false; keep everything else as it is.",
            {
                "type": "ini",
                "path": "workspace/app.ini",
                "section": "server",
                "values": {"port": "9090", "debug": "false", "host": "0.0.0.0", "workers": "4"},
            },
            {"workspace/app.ini": "[server]\nhost = 0.0.0.0\nport = 8000\ndebug = true\nworkers = 4\n"},
        ),
        task(
            "multi_dedupe",
            "multi_step",
            f"Remove duplicate lines from {WS}/names.txt (keep the first of each, in order) and save the result to {OUT}/unique.txt.",
            {"type": "file_lines", "path": "outputs/unique.txt", "lines": UNIQUE},
            {"workspace/names.txt": "\n".join(NAMES) + "\n"},
        ),
        # -- delegation
        task(
            "deleg_word_count",
            "delegation",
            f"Use a sub-agent to count the words in {WS}/essay.txt, then save the number to {OUT}/words.txt.",
            {"type": "file_number", "path": "outputs/words.txt", "value": len(ESSAY.split())},
            {"workspace/essay.txt": ESSAY},
        ),
        task(
            "deleg_two_sums",
            "delegation",
            f'Use sub-agents: one sums the numbers in {WS}/a.txt, another sums those in {WS}/b.txt. Save both sums to {OUT}/sums.json as {{"a": <sum>, "b": <sum>}}.',
            {"type": "json_file", "path": "outputs/sums.json", "equals": {"a": sum(A_NUMS), "b": sum(B_NUMS)}},
            {
                "workspace/a.txt": "\n".join(map(str, A_NUMS)) + "\n",
                "workspace/b.txt": "\n".join(map(str, B_NUMS)) + "\n",
            },
        ),
        task(
            "deleg_team_json",
            "delegation",
            f"Delegate to a sub-agent: create {OUT}/team.json, a JSON list of the names in {WS}/team.txt sorted alphabetically.",
            {"type": "json_file", "path": "outputs/team.json", "equals": sorted(TEAM)},
            {"workspace/team.txt": "\n".join(TEAM) + "\n"},
        ),
        task(
            "deleg_fix_hello",
            "delegation",
            f"Ask a sub-agent to fix {WS}/hello.py so that python3 hello.py prints hello world.",
            {"type": "run", "command": "python3 hello.py", "cwd": "workspace", "stdout": "hello world"},
            {"workspace/hello.py": "def main():\n    print('hello world')\n\nmain(\n"},
        ),
        # -- skills
        task(
            "skill_bar_chart",
            "skill",
            f"Use the data-analysis skill to draw a bar chart of the total amount per region in {WS}/sales.csv, saved as {OUT}/regions.png.",
            {"type": "png", "path": "outputs/regions.png"},
            {"workspace/sales.csv": SALES_CSV},
        ),
        task(
            "skill_report",
            "skill",
            f"Use the report-writing skill to write a short report on {WS}/sales.csv: its total amount and its number of rows.",
            {
                "type": "markdown_numbers",
                "path": "outputs/report.md",
                "numbers": [SALES_TOTAL, len(SALES)],
                "tolerance": 0.05,
            },
            {"workspace/sales.csv": SALES_CSV},
        ),
        task(
            "skill_web_page",
            "skill",
            f"Use the web-page-builder skill to make a one-page site for a bakery called Crumbs in {OUT}/site.",
            {"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Crumbs"},
        ),
        task(
            "skill_new_skill",
            "skill",
            "Use the skill-creator skill to make a skill named csv-summary that summarizes a CSV file.",
            {"type": "skill_md", "path": "outputs/skills/csv-summary/SKILL.md", "name": "csv-summary"},
        ),
        # -- long outputs
        task(
            "long_squares_csv",
            "long_output",
            f"Create {OUT}/squares.csv with the header n,square and one row for each n from 1 to 50.",
            {
                "type": "csv_rows",
                "path": "outputs/squares.csv",
                "header": ["n", "square"],
                "rows": [[str(n), str(n * n)] for n in range(1, 51)],
            },
        ),
        task(
            "long_numbers",
            "long_output",
            f"Write the numbers 1 to 200, one per line, to {OUT}/numbers.txt.",
            {"type": "file_lines", "path": "outputs/numbers.txt", "lines": [str(n) for n in range(1, 201)]},
        ),
        task(
            "long_january",
            "long_output",
            f'Create {OUT}/january.json: a JSON list with one object per day of January 2025, like {{"date": "2025-01-01", "weekday": "Wednesday"}}.',
            {"type": "json_file", "path": "outputs/january.json", "equals": JAN},
        ),
        task(
            "long_times_table",
            "long_output",
            f"Write the multiplication table for 1 to 12 as CSV to {OUT}/times.csv: a header row x,1,2,...,12 and one row per x from 1 to 12.",
            {
                "type": "csv_rows",
                "path": "outputs/times.csv",
                "header": ["x", *map(str, range(1, 13))],
                "rows": [[str(x), *(str(x * y) for y in range(1, 13))] for x in range(1, 13)],
            },
        ),
        # -- started the way the web UI starts them: a file in uploads, the typed text only
        task(
            "upload_avg_price",
            "upload",
            "What is the average price in the file I uploaded?",
            {
                "type": "answer_number",
                "value": round(sum(p for _, p in PRODUCTS) / len(PRODUCTS), 2),
                "tolerance": 0.01,
            },
            {"uploads/products.csv": csv_text(["product", "price"], PRODUCTS)},
            upload=True,
        ),
        task(
            "upload_row_count",
            "upload",
            "How many rows, not counting the header, are in the CSV I just uploaded?",
            {"type": "answer_number", "value": len(VISITS)},
            {"uploads/visits.csv": csv_text(["day", "page", "visits"], VISITS)},
            upload=True,
        ),
        task(
            "upload_to_json",
            "upload",
            f"Turn the file I uploaded into JSON (a list of objects, one per row) and save it to {OUT}/contacts.json.",
            {
                "type": "json_file",
                "path": "outputs/contacts.json",
                "equals": [dict(zip(["name", "email", "city"], c, strict=False)) for c in CONTACTS],
            },
            {"uploads/contacts.csv": csv_text(["name", "email", "city"], CONTACTS)},
            upload=True,
        ),
        task(
            "upload_warmest",
            "upload",
            f"Which city in my upload is the warmest? Write just its name to {OUT}/warmest.txt.",
            {"type": "file_text", "path": "outputs/warmest.txt", "text": max(TEMPS, key=lambda t: t[1])[0]},
            {"uploads/temps.csv": csv_text(["city", "temp_c"], TEMPS)},
            upload=True,
        ),
    ]


drng = random.Random(2031)  # the new development tasks' data (the first forty keep theirs)
ARCHIVE = {
    f"workspace/archive/{y}/{m}/{n}.txt": f"entry {y}-{m} {n}\n"
    for y, ms in (("2023", ("03", "11")), ("2024", ("01", "06", "09")))
    for m in ms
    for n in ("a", "b")[: 1 + (int(m) % 2)]
}
ARCHIVE["workspace/archive/index.md"] = "# Archive\n"
POEM = [
    "The river keeps its counsel",
    "beneath a sky of slate;",
    "the herd moves on at evening,",
    "the gate swings on its weight.",
    "",
    "A lantern on the hillside,",
    "a dog that will not sleep,",
    "the fences hum with frost now",
    "across the folded sheep.",
    "",
    "And morning comes in slowly",
    "the way the old ones said:",
    "first the roofs, then the river,",
    "then the grass above the dead.",
]
WORKER = []
for i in range(90):
    level = drng.choice(["INFO", "INFO", "WARN"])
    job = 7 if level == "WARN" and i % 4 == 0 else drng.randint(0, 10)  # j07 warns most
    WORKER.append(
        f"2025-07-0{1 + i // 40} {i % 24:02d}:{(7 * i) % 60:02d}:00 {level} job=j{job:02d} "
        f"{drng.choice(['retrying', 'slow disk']) if level == 'WARN' else 'done'}"
    )
WARN_JOBS = [line.split()[3].removeprefix("job=") for line in WORKER if " WARN " in line]
[TOP_WARN_JOB] = [j for j in set(WARN_JOBS) if WARN_JOBS.count(j) == max(map(WARN_JOBS.count, WARN_JOBS))]
STOCK = [[f"{name}", drng.randint(3, 80)] for name in ("tea", "rice", "soap", "salt", "oil", "flour", "honey")]
STOCK[4][1] = 1


xrng = random.Random(4099)  # the third batch of development tasks' data
ACCESS = []
for i in range(120):
    status = xrng.choice([200, 200, 200, 200, 304, 404, 500])
    ACCESS.append(
        f"10.0.{xrng.randint(0, 3)}.{xrng.randint(1, 40)} - - [12/Mar/2025:{8 + i // 30:02d}:{(3 * i) % 60:02d}:{i % 60:02d} +0000] "
        f'"GET /{xrng.choice(["", "about", "shop", "cart", "login"])} HTTP/1.1" {status} {xrng.randint(200, 9000)}'
    )
STATUS_404 = sum(1 for line in ACCESS if line.split()[-2] == "404")
ERR_TIMES = [line.split("[")[1].split()[0].split(":", 1)[1] for line in ACCESS if line.split()[-2] == "500"]
DISTINCT_IPS = len({line.split()[0] for line in ACCESS})
SIZES = {
    "workspace/media/a.bin": 5000,
    "workspace/media/b.bin": 12000,
    "workspace/media/deep/c.bin": 700,
    "workspace/media/deep/d.bin": 30000,
    "workspace/media/e.txt": 42,
}
PLANETS = [["Mercury", 0.39], ["Venus", 0.72], ["Earth", 1.0], ["Mars", 1.52], ["Jupiter", 5.2], ["Saturn", 9.54]]
SCORES = [[n, xrng.randint(40, 99)] for n in ("ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana")]
SCORES[5][1] = 100
INVENTORY = [
    ["widget", "tools", 4, 2.5],
    ["bolt", "parts", 100, 0.1],
    ["nut", "parts", 250, 0.05],
    ["drill", "tools", 2, 89.0],
    ["saw", "tools", 3, 24.5],
    ["washer", "parts", 400, 0.02],
]


def dev_new_tasks() -> list[dict]:
    """Development tasks in the categories added with the held-out split (written apart from the
    test tasks: other data, other phrasing), so the development set exercises them too."""
    helpers = "import re\n\n\ndef slugify(text):\n    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n"
    return [
        task(
            "dev_fsq_count_files",
            "fs_question",
            f"How many files are there in {WS}/archive, subfolders included? Folders themselves don't count.",
            {"type": "answer_value", "value": len(ARCHIVE)},
            ARCHIVE,
        ),
        task(
            "dev_fsq_poem_lines",
            "fs_question",
            f"{WS}/poem.txt 一共有多少行（空行也算）？",
            {"type": "answer_value", "value": len(POEM)},
            {"workspace/poem.txt": "\n".join(POEM) + "\n"},
        ),
        task(
            "dev_bg_http_fetch",
            "background",
            f"Serve {WS}/site with python3 -m http.server on port 8123 in the background, download /hello.txt through it "
            f"and save what you get as {OUT}/fetched.txt.",
            {"type": "file_text", "path": "outputs/fetched.txt", "text": "hello from the herd"},
            {"workspace/site/hello.txt": "hello from the herd\n", "workspace/site/index.html": "<h1>herd</h1>\n"},
        ),
        task(
            "dev_logs_warn_jobs",
            "logs",
            f"How many WARN lines are there in {WS}/worker.log, and which job id shows up in the most of them?",
            [{"type": "answer_value", "value": len(WARN_JOBS)}, {"type": "answer_value", "value": TOP_WARN_JOB}],
            {"workspace/worker.log": "\n".join(WORKER) + "\n"},
        ),
        task(
            "dev_perm_sh_exec",
            "permissions",
            f"把 {WS}/tools 下的所有 .sh 脚本都加上可执行权限，别的文件不用动。",
            [
                {
                    "type": "executable",
                    "paths": ["workspace/tools/build.sh", "workspace/tools/lint.sh", "workspace/tools/ci/test.sh"],
                },
                {"type": "mode", "paths": ["workspace/tools/README.md"], "mode": "644"},
            ],
            {
                "workspace/tools/build.sh": "#!/bin/sh\necho build\n",
                "workspace/tools/lint.sh": "#!/bin/sh\necho lint\n",
                "workspace/tools/ci/test.sh": "#!/bin/sh\necho test\n",
                "workspace/tools/README.md": "Scripts for the build.\n",
            },
            modes={
                "workspace/tools/build.sh": "644",
                "workspace/tools/lint.sh": "644",
                "workspace/tools/ci/test.sh": "644",
                "workspace/tools/README.md": "644",
            },
        ),
        task(
            "dev_script_c2f",
            "scripting",
            f"Create a command-line tool {WS}/c2f.py that converts Celsius to Fahrenheit with one decimal: "
            "python3 c2f.py 100 prints 212.0.",
            [
                {"type": "run", "command": f"python3 c2f.py {c}", "cwd": "workspace", "stdout": f"{c * 9 / 5 + 32:.1f}"}
                for c in (100, 37, -40, 21.5)
            ],
        ),
        task(
            "dev_mf_module_rename",
            "multi_file",
            f"I renamed helpers.py to common.py in {WS}/tool, and now nothing imports. Update the imports in the other files "
            "so python3 main.py works again.",
            [
                {
                    "type": "run",
                    "command": "python3 main.py",
                    "cwd": "workspace/tool",
                    "stdout": "hello-herd\nherd-news",
                },
                {"type": "text_absent", "path": "workspace/tool", "text": "helpers"},
            ],
            {
                "workspace/tool/common.py": helpers,
                "workspace/tool/cli.py": "import helpers\n\n\ndef run(text):\n    print(helpers.slugify(text))\n",
                "workspace/tool/feed.py": "from helpers import slugify\n\n\ndef title(text):\n    return slugify(text)\n",
                "workspace/tool/main.py": "import cli\nfrom feed import title\n\ncli.run('Hello, Herd!')\nprint(title('Herd News'))\n",
            },
        ),
        task(
            "dev_val_least_stock",
            "single_value",
            f"{WS}/stock.csv 里库存（qty）最少的是哪个商品？只告诉我商品名。",
            {"type": "answer_value", "value": min(STOCK, key=lambda r: r[1])[0], "just": True},
            {"workspace/stock.csv": csv_text(["item", "qty"], STOCK)},
        ),
    ]


def dev_third_tasks() -> list[dict]:
    """A third batch of development tasks, in the categories the development set had one or two
    tasks of (written from the categories' descriptions, with their own data and phrasing, not
    from the test tasks)."""
    access = {"workspace/access.log": "\n".join(ACCESS) + "\n"}
    media = {rel: "x" * size for rel, size in SIZES.items()}
    return [
        task(
            "dev3_bg_counter",
            "background",
            f"Start python3 {WS}/ticker.py in the background (it writes a line to {WS}/ticks.txt every half second), wait until "
            f"ticks.txt has at least 3 lines, then copy the first line to {OUT}/first_tick.txt.",
            {"type": "file_text", "path": "outputs/first_tick.txt", "text": "tick 1"},
            {
                "workspace/ticker.py": "import time\nfor i in range(1, 40):\n    with open('/mnt/user-data/workspace/ticks.txt', 'a') as f:\n"
                "        f.write(f'tick {i}\\n')\n    time.sleep(0.5)\n"
            },
        ),
        task(
            "dev3_bg_json_api",
            "background",
            f"在后台用 python3 -m http.server 9091 提供 {WS}/api 目录，然后通过它下载 /status.json，告诉我其中 version 字段的值。",
            {"type": "answer_value", "value": "2.7.1"},
            {"workspace/api/status.json": '{"service": "herd", "version": "2.7.1", "ok": true}\n'},
        ),
        task(
            "dev3_logs_404",
            "logs",
            f"How many requests in {WS}/access.log got a 404 response?",
            {"type": "answer_value", "value": STATUS_404},
            access,
        ),
        task(
            "dev3_logs_first_500",
            "logs",
            f"{WS}/access.log 里第一次出现 500 状态码是在什么时间（时:分:秒）？",
            {"type": "answer_value", "value": ERR_TIMES[0]},
            access,
        ),
        task(
            "dev3_logs_distinct_ips",
            "logs",
            f"How many distinct client IP addresses appear in {WS}/access.log?",
            {"type": "answer_value", "value": DISTINCT_IPS},
            access,
        ),
        task(
            "dev3_fsq_total_bytes",
            "fs_question",
            f"How many bytes do the .bin files under {WS}/media take in total, subfolders included?",
            {"type": "answer_value", "value": sum(v for k, v in SIZES.items() if k.endswith(".bin"))},
            media,
        ),
        task(
            "dev3_fsq_exists_deep",
            "fs_question",
            f"Is there a file called d.bin anywhere under {WS}/media? Answer yes or no.",
            {"type": "answer_value", "value": "yes"},
            media,
        ),
        task(
            "dev3_val_farthest",
            "single_value",
            f"Which planet in {WS}/planets.csv is farthest from the sun (largest au)? Reply with the name only.",
            {"type": "answer_value", "value": max(PLANETS, key=lambda r: r[1])[0], "just": True},
            {"workspace/planets.csv": csv_text(["planet", "au"], PLANETS)},
        ),
        task(
            "dev3_val_top_score",
            "single_value",
            f"What is the highest score in {WS}/scores.csv? Just the number.",
            {"type": "answer_value", "value": max(r[1] for r in SCORES), "just": True},
            {"workspace/scores.csv": csv_text(["name", "score"], SCORES)},
        ),
        task(
            "dev3_perm_private_key",
            "permissions",
            f"Make {WS}/secrets/api.key readable and writable by its owner only; nobody else may read it.",
            {"type": "mode", "paths": ["workspace/secrets/api.key"], "mode": "600"},
            {"workspace/secrets/api.key": "k-123\n"},
            modes={"workspace/secrets/api.key": "644"},
        ),
        task(
            "dev3_script_word_freq",
            "scripting",
            f"Write {WS}/topword.py: python3 topword.py FILE prints the most frequent word of FILE (lower-cased) and nothing else.",
            [
                {"type": "run", "command": "python3 topword.py sample.txt", "cwd": "workspace", "stdout": "herd"},
                {"type": "run", "command": "python3 topword.py other.txt", "cwd": "workspace", "stdout": "gate"},
            ],
            {
                "workspace/sample.txt": "The herd moves. A herd rests; the HERD sleeps.\n",
                "workspace/other.txt": "gate gate fence gate fence\n",
            },
        ),
        task(
            "dev3_script_add",
            "scripting",
            f"创建命令行工具 {WS}/add.py：python3 add.py 2 3 4 输出这些数的和（这里是 9）。",
            [
                {
                    "type": "run",
                    "command": f"python3 add.py {' '.join(map(str, ns))}",
                    "cwd": "workspace",
                    "stdout": str(sum(ns)),
                }
                for ns in ((2, 3, 4), (10, 20), (7,))
            ],
        ),
        task(
            "dev3_mf_version_bump",
            "multi_file",
            f"Bump the version from 1.4.0 to 1.5.0 everywhere in {WS}/pkg (every file that mentions it).",
            [
                {"type": "text_absent", "path": "workspace/pkg", "text": "1.4.0"},
                {
                    "type": "run",
                    "command": "grep -rl 1.5.0 . | LC_ALL=C sort | tr '\\n' ' '",
                    "cwd": "workspace/pkg",
                    "stdout": "./README.md ./pkg/__init__.py ./setup.cfg",
                },
            ],
            {
                "workspace/pkg/setup.cfg": "[metadata]\nname = pkg\nversion = 1.4.0\n",
                "workspace/pkg/pkg/__init__.py": "__version__ = '1.4.0'\n",
                "workspace/pkg/README.md": "# pkg 1.4.0\n\nInstall pkg==1.4.0.\n",
                "workspace/pkg/CHANGES.md": "## 1.3.0\n- first\n",
            },
        ),
        task(
            "dev3_data_value_by_category",
            "data",
            f"From {WS}/inventory.csv (columns item, category, count, unit_price), compute the stock value (count times unit_price) "
            f"per category and save it to {OUT}/value.json as an object mapping category to value.",
            {
                "type": "json_file",
                "path": "outputs/value.json",
                "tolerance": 0.01,
                "equals": {c: round(sum(r[2] * r[3] for r in INVENTORY if r[1] == c), 2) for c in ("tools", "parts")},
            },
            {"workspace/inventory.csv": csv_text(["item", "category", "count", "unit_price"], INVENTORY)},
        ),
        task(
            "dev3_fix_off_by_one",
            "code_fix",
            f"{WS}/countdown.py should print 3, 2, 1 on separate lines (python3 countdown.py 3), but it misses one. Fix it.",
            {"type": "run", "command": "python3 countdown.py 3", "cwd": "workspace", "stdout": "3\n2\n1"},
            {"workspace/countdown.py": "import sys\n\nn = int(sys.argv[1])\nfor i in range(n, 1, -1):\n    print(i)\n"},
        ),
    ]


def all_tasks() -> list[dict]:
    """Every task: the development split, then the held-out test split."""
    return dev_tasks() + dev_new_tasks() + dev_third_tasks() + heldout_tasks()


def render() -> str:
    """The text of tasks.yaml."""
    header = "# Written by make_tasks.py (expected values are computed from the set-up files); do not edit by hand.\n"
    return header + yaml.safe_dump({"tasks": all_tasks()}, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":
    (HERE / "tasks.yaml").write_text(render())
    print(f"wrote {len(all_tasks())} tasks to {HERE / 'tasks.yaml'}")
