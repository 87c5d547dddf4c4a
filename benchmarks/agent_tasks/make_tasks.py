"""Write ``tasks.yaml``: the agent task benchmark's tasks, their set-up files and their checks.

The tasks are written out by this script so that every expected value is computed from the very
set-up files the agent gets (a sum over the CSV it will read, the lines of the log it will grep):
the data file cannot hold a wrong answer. ``python benchmarks/agent_tasks/make_tasks.py`` rewrites
it; a test checks that the committed file is what this script writes.
"""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import io
import json
import random
from pathlib import Path

import yaml

HERE = Path(__file__).parent
WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"
rng = random.Random(20)


def csv_text(header: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


REGIONS = ["north", "south", "east", "west"]
SALES = [[f"2025-0{1 + i % 6}-{10 + i % 18}", REGIONS[i % 4], round(rng.uniform(10, 500), 2)] for i in range(30)]
SALES_CSV = csv_text(["date", "region", "amount"], SALES)
SALES_TOTAL = round(sum(r[2] for r in SALES), 2)
BY_REGION = {r: round(sum(x[2] for x in SALES if x[1] == r), 2) for r in REGIONS}
PEOPLE = [["Ada", 36], ["Linus", 54], ["Grace", 85], ["Alan", 41], ["Edsger", 72]]
ORDERS = [{"id": i, "status": rng.choice(["ok", "ok", "failed", "pending"]), "total": rng.randint(5, 90)} for i in range(25)]
PRODUCTS = [[f"item{i}", round(rng.uniform(1, 99), 2)] for i in range(12)]
VISITS = [[f"2025-03-{1 + i % 28:02d}", rng.choice(["home", "about", "shop"]), rng.randint(1, 40)] for i in range(57)]
CONTACTS = [["Mia", "mia@example.org", "Oslo"], ["Noah", "noah@example.org", "Lima"], ["Ivy", "ivy@example.org", "Pune"]]
TEMPS = [["Oslo", 4.5], ["Cairo", 31.2], ["Lima", 19.8], ["Pune", 28.4], ["Quito", 14.1]]
LOG = "".join(
    f"2025-05-01 10:{i:02d}:00 {'ERROR' if i % 7 == 3 else 'INFO'} {'disk full' if i % 7 == 3 else 'request served'} id={i}\n"
    for i in range(40)
)
ERROR_LINES = [line for line in LOG.splitlines() if "ERROR" in line]
BIG_LINES = 137
ESSAY = " ".join(rng.choice(["the", "herd", "moves", "north", "slowly", "grass", "river", "calm"]) for _ in range(173)) + "\n"
A_NUMS = [rng.randint(1, 100) for _ in range(10)]
B_NUMS = [rng.randint(1, 100) for _ in range(10)]
TEAM = ["Zoe", "Adam", "Mira", "Karl", "Bea"]
NAMES = ["ann", "bob", "ann", "cid", "dan", "bob", "eve", "ann", "fay"]
UNIQUE = list(dict.fromkeys(NAMES))
PRIMES = [p for p in range(2, 30) if all(p % d for d in range(2, p))]
JAN = [{"date": f"2025-01-{d:02d}", "weekday": calendar.day_name[dt.date(2025, 1, d).weekday()]} for d in range(1, 32)]
LIBRARY = {f"library/book{i:02d}.txt": f"Chapter {i}. The {rng.choice(['owl', 'heron', 'crow', 'swan'])} flew over the valley.\n" for i in range(12)}
LIBRARY["library/book07.txt"] = "Chapter 7. A falcon circled above the herd.\n"
PROJECT = {
    "project/app.py": "def run():\n    # TODO: handle errors\n    pass\n# TODO: add logging\n",
    "project/util.py": "def helper():\n    return 1  # TODO: cache this\n",
    "project/db/models.py": "class User:\n    pass\n# TODO: add fields\n# TODO: add indexes\n",
    "project/README.md": "TODO: this one is not in a .py file\n",
}
TODO_COUNT = sum(text.count("TODO") for path, text in PROJECT.items() if path.endswith(".py"))


def task(id: str, category: str, prompt: str, check: dict | list, files: dict | None = None, upload: bool = False) -> dict:
    t = {"id": id, "category": category, "prompt": prompt, "files": files or {}, "check": check}
    if upload:
        t["upload"] = True
    return t


def all_tasks() -> list[dict]:
    return [
        # -- files
        task("files_create_note", "files", f"Create a file {WS}/todo.txt with three lines: buy milk, call mom, fix bike.",
             {"type": "file_lines", "path": "workspace/todo.txt", "lines": ["buy milk", "call mom", "fix bike"]}),
        task("files_copy_report", "files", f"Copy report.md from the workspace to {OUT}/report.md.",
             {"type": "file_text", "path": "outputs/report.md", "text": "# Report\n\nAll systems nominal.\n"},
             {"workspace/report.md": "# Report\n\nAll systems nominal.\n"}),
        task("files_rename_ext", "files", f"Rename every .txt file in {WS}/notes to .md.",
             [{"type": "exists", "paths": ["workspace/notes/a.md", "workspace/notes/b.md", "workspace/notes/c.md"]},
              {"type": "absent", "paths": ["workspace/notes/a.txt", "workspace/notes/b.txt", "workspace/notes/c.txt"]}],
             {"workspace/notes/a.txt": "alpha\n", "workspace/notes/b.txt": "beta\n", "workspace/notes/c.txt": "gamma\n"}),
        task("files_append_line", "files", f"Append the line 'line3' to {WS}/log.txt.",
             {"type": "file_lines", "path": "workspace/log.txt", "lines": ["line1", "line2", "line3"]},
             {"workspace/log.txt": "line1\nline2\n"}),
        # -- shell
        task("shell_count_py", "shell", f"How many .py files are in {WS}/src (including subfolders)? Write just the number to {OUT}/count.txt.",
             {"type": "file_number", "path": "outputs/count.txt", "value": 7},
             {**{f"workspace/src/m{i}.py": "x = 1\n" for i in range(5)}, "workspace/src/sub/n1.py": "y = 2\n",
              "workspace/src/sub/n2.py": "z = 3\n", "workspace/src/readme.txt": "hi\n", "workspace/src/sub/notes.txt": "hi\n"}),
        task("shell_largest_file", "shell", f"Which file in {WS}/data is the largest? Write its file name to {OUT}/largest.txt.",
             {"type": "file_text", "path": "outputs/largest.txt", "text": "b.log"},
             {"workspace/data/a.log": "x" * 10, "workspace/data/b.log": "x" * 500, "workspace/data/c.log": "x" * 50}),
        task("shell_zip_docs", "shell", f"Create a zip archive {OUT}/docs.zip containing the files in {WS}/docs.",
             {"type": "zip_names", "path": "outputs/docs.zip", "names": ["x.md", "y.md"]},
             {"workspace/docs/x.md": "# X\n", "workspace/docs/y.md": "# Y\n"}),
        task("shell_line_count", "shell", f"How many lines does {WS}/big.txt have?",
             {"type": "answer_number", "value": BIG_LINES},
             {"workspace/big.txt": "".join(f"row {i}\n" for i in range(BIG_LINES))}),
        # -- data
        task("data_csv_total", "data", f"What is the total of the amount column in {WS}/sales.csv?",
             {"type": "answer_number", "value": SALES_TOTAL, "tolerance": 0.05}, {"workspace/sales.csv": SALES_CSV}),
        task("data_csv_to_json", "data",
             f"Convert {WS}/people.csv to a JSON list of objects with keys name and age (age as a number), saved as {OUT}/people.json.",
             {"type": "json_file", "path": "outputs/people.json", "equals": [{"name": n, "age": a} for n, a in PEOPLE]},
             {"workspace/people.csv": csv_text(["name", "age"], PEOPLE)}),
        task("data_json_count", "data", f"How many orders in {WS}/orders.json have the status failed?",
             {"type": "answer_number", "value": sum(o["status"] == "failed" for o in ORDERS)},
             {"workspace/orders.json": json.dumps(ORDERS, indent=1)}),
        task("data_group_sum", "data",
             f"Compute the total amount per region in {WS}/sales.csv and save it to {OUT}/by_region.json as a JSON object mapping region to total.",
             {"type": "json_file", "path": "outputs/by_region.json", "equals": BY_REGION, "tolerance": 0.05},
             {"workspace/sales.csv": SALES_CSV}),
        # -- code fixes
        task("fix_name_error", "code_fix", f"{WS}/greet.py crashes. Fix it so that python3 greet.py Ann prints Hello, Ann!",
             {"type": "run", "command": "python3 greet.py Ann", "cwd": "workspace", "stdout": "Hello, Ann!"},
             {"workspace/greet.py": "import sys\n\nname = sys.argv[1]\nprint('Hello, ' + nme + '!')\n"}),
        task("fix_mean_tests", "code_fix", f"python3 test_stats.py fails in {WS}. Fix the bug in stats.py (not the test) so that it passes.",
             [{"type": "run", "command": "python3 test_stats.py", "cwd": "workspace"},
              {"type": "file_text", "path": "workspace/test_stats.py", "text": "from stats import mean\n\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\nprint('ok')\n"}],
             {"workspace/stats.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
              "workspace/test_stats.py": "from stats import mean\n\nassert mean([2, 4, 6]) == 4\nassert mean([5]) == 5\nprint('ok')\n"}),
        task("fix_keep_args", "code_fix",
             f"{WS}/wc.py should print the number of words in a file (python3 wc.py FILE), or the number of lines with --lines, but it prints the number of characters. Fix that one bug.",
             [{"type": "run", "command": "python3 wc.py sample.txt", "cwd": "workspace", "stdout": "5"},
              {"type": "run", "command": "python3 wc.py --lines sample.txt", "cwd": "workspace", "stdout": "2"}],
             {"workspace/wc.py": "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('path')\nparser.add_argument('--lines', action='store_true')\nargs = parser.parse_args()\ntext = open(args.path).read()\nif args.lines:\n    print(len(text.splitlines()))\nelse:\n    print(len(text))\n",
              "workspace/sample.txt": "one two three\nfour five\n"}),
        task("fix_config_key", "code_fix", f"python3 {WS}/server.py fails with a KeyError. Fix server.py so it prints the port from config.json.",
             {"type": "run", "command": "python3 server.py", "cwd": "workspace", "stdout": "listening on 8080"},
             {"workspace/server.py": "import json\n\nconfig = json.load(open('config.json'))\nprint('listening on', config['Port'])\n",
              "workspace/config.json": '{"port": 8080, "host": "localhost"}\n'}),
        # -- search
        task("search_word_file", "search", f"Which file in {WS}/library mentions a falcon? Write just its file name to {OUT}/answer.txt.",
             {"type": "file_text", "path": "outputs/answer.txt", "text": "book07.txt"},
             {f"workspace/{k}": v for k, v in LIBRARY.items()}),
        task("search_todo_count", "search", f"How many TODO comments are there in the .py files under {WS}/project?",
             {"type": "answer_number", "value": TODO_COUNT}, {f"workspace/{k}": v for k, v in PROJECT.items()}),
        task("search_errors_to_file", "search", f"Save all lines containing ERROR from {WS}/app.log to {OUT}/errors.txt.",
             {"type": "file_lines", "path": "outputs/errors.txt", "lines": ERROR_LINES}, {"workspace/app.log": LOG}),
        task("search_function_def", "search",
             f"In which file under {WS}/pkg is the function parse_date defined? Write its path relative to pkg (like a/b.py) to {OUT}/where.txt.",
             {"type": "file_text", "path": "outputs/where.txt", "text": "utils/dates.py"},
             {"workspace/pkg/main.py": "from utils.dates import parse_date\n\nprint(parse_date('2025-01-01'))\n",
              "workspace/pkg/utils/dates.py": "import datetime\n\ndef parse_date(s):\n    return datetime.date.fromisoformat(s)\n",
              "workspace/pkg/utils/text.py": "def slug(s):\n    return s.lower()\n"}),
        # -- multi-step
        task("multi_summary_md", "multi_step",
             f"Create {OUT}/summary.md with a line 'Total: <total amount>' and a line 'Rows: <number of data rows>' for {WS}/sales.csv.",
             {"type": "labelled_numbers", "path": "outputs/summary.md", "values": {"Total": SALES_TOTAL, "Rows": len(SALES)}, "tolerance": 0.05},
             {"workspace/sales.csv": SALES_CSV}),
        task("multi_primes", "multi_step",
             f"Write a Python script {WS}/primes.py that prints the prime numbers below 30, one per line. Run it and save its output to {OUT}/primes.txt.",
             [{"type": "file_lines", "path": "outputs/primes.txt", "lines": [str(p) for p in PRIMES]},
              {"type": "run", "command": "python3 primes.py", "cwd": "workspace", "stdout": "\n".join(str(p) for p in PRIMES)}]),
        task("multi_ini_edit", "multi_step", f"In {WS}/app.ini set port to 9090 and debug to false; keep everything else as it is.",
             {"type": "ini", "path": "workspace/app.ini", "section": "server", "values": {"port": "9090", "debug": "false", "host": "0.0.0.0", "workers": "4"}},
             {"workspace/app.ini": "[server]\nhost = 0.0.0.0\nport = 8000\ndebug = true\nworkers = 4\n"}),
        task("multi_dedupe", "multi_step",
             f"Remove duplicate lines from {WS}/names.txt (keep the first of each, in order) and save the result to {OUT}/unique.txt.",
             {"type": "file_lines", "path": "outputs/unique.txt", "lines": UNIQUE}, {"workspace/names.txt": "\n".join(NAMES) + "\n"}),
        # -- delegation
        task("deleg_word_count", "delegation", f"Use a sub-agent to count the words in {WS}/essay.txt, then save the number to {OUT}/words.txt.",
             {"type": "file_number", "path": "outputs/words.txt", "value": len(ESSAY.split())}, {"workspace/essay.txt": ESSAY}),
        task("deleg_two_sums", "delegation",
             f"Use sub-agents: one sums the numbers in {WS}/a.txt, another sums those in {WS}/b.txt. Save both sums to {OUT}/sums.json as {{\"a\": <sum>, \"b\": <sum>}}.",
             {"type": "json_file", "path": "outputs/sums.json", "equals": {"a": sum(A_NUMS), "b": sum(B_NUMS)}},
             {"workspace/a.txt": "\n".join(map(str, A_NUMS)) + "\n", "workspace/b.txt": "\n".join(map(str, B_NUMS)) + "\n"}),
        task("deleg_team_json", "delegation",
             f"Delegate to a sub-agent: create {OUT}/team.json, a JSON list of the names in {WS}/team.txt sorted alphabetically.",
             {"type": "json_file", "path": "outputs/team.json", "equals": sorted(TEAM)}, {"workspace/team.txt": "\n".join(TEAM) + "\n"}),
        task("deleg_fix_hello", "delegation", f"Ask a sub-agent to fix {WS}/hello.py so that python3 hello.py prints hello world.",
             {"type": "run", "command": "python3 hello.py", "cwd": "workspace", "stdout": "hello world"},
             {"workspace/hello.py": "def main():\n    print('hello world')\n\nmain(\n"}),
        # -- skills
        task("skill_bar_chart", "skill",
             f"Use the data-analysis skill to draw a bar chart of the total amount per region in {WS}/sales.csv, saved as {OUT}/regions.png.",
             {"type": "png", "path": "outputs/regions.png"}, {"workspace/sales.csv": SALES_CSV}),
        task("skill_report", "skill",
             f"Use the report-writing skill to write a short report on {WS}/sales.csv: its total amount and its number of rows.",
             {"type": "markdown_numbers", "path": "outputs/report.md", "numbers": [SALES_TOTAL, len(SALES)], "tolerance": 0.05},
             {"workspace/sales.csv": SALES_CSV}),
        task("skill_web_page", "skill",
             f"Use the web-page-builder skill to make a one-page site for a bakery called Crumbs in {OUT}/site.",
             {"type": "html_page", "path": "outputs/site/index.html", "title_contains": "Crumbs"}),
        task("skill_new_skill", "skill",
             "Use the skill-creator skill to make a skill named csv-summary that summarizes a CSV file.",
             {"type": "skill_md", "path": "outputs/skills/csv-summary/SKILL.md", "name": "csv-summary"}),
        # -- long outputs
        task("long_squares_csv", "long_output", f"Create {OUT}/squares.csv with the header n,square and one row for each n from 1 to 50.",
             {"type": "csv_rows", "path": "outputs/squares.csv", "header": ["n", "square"], "rows": [[str(n), str(n * n)] for n in range(1, 51)]}),
        task("long_numbers", "long_output", f"Write the numbers 1 to 200, one per line, to {OUT}/numbers.txt.",
             {"type": "file_lines", "path": "outputs/numbers.txt", "lines": [str(n) for n in range(1, 201)]}),
        task("long_january", "long_output",
             f"Create {OUT}/january.json: a JSON list with one object per day of January 2025, like {{\"date\": \"2025-01-01\", \"weekday\": \"Wednesday\"}}.",
             {"type": "json_file", "path": "outputs/january.json", "equals": JAN}),
        task("long_times_table", "long_output",
             f"Write the multiplication table for 1 to 12 as CSV to {OUT}/times.csv: a header row x,1,2,...,12 and one row per x from 1 to 12.",
             {"type": "csv_rows", "path": "outputs/times.csv", "header": ["x", *map(str, range(1, 13))],
              "rows": [[str(x), *(str(x * y) for y in range(1, 13))] for x in range(1, 13)]}),
        # -- started the way the web UI starts them: a file in uploads, the typed text only
        task("upload_avg_price", "upload", "What is the average price in the file I uploaded?",
             {"type": "answer_number", "value": round(sum(p for _, p in PRODUCTS) / len(PRODUCTS), 2), "tolerance": 0.01},
             {"uploads/products.csv": csv_text(["product", "price"], PRODUCTS)}, upload=True),
        task("upload_row_count", "upload", "How many rows, not counting the header, are in the CSV I just uploaded?",
             {"type": "answer_number", "value": len(VISITS)}, {"uploads/visits.csv": csv_text(["day", "page", "visits"], VISITS)}, upload=True),
        task("upload_to_json", "upload", f"Turn the file I uploaded into JSON (a list of objects, one per row) and save it to {OUT}/contacts.json.",
             {"type": "json_file", "path": "outputs/contacts.json", "equals": [dict(zip(["name", "email", "city"], c)) for c in CONTACTS]},
             {"uploads/contacts.csv": csv_text(["name", "email", "city"], CONTACTS)}, upload=True),
        task("upload_warmest", "upload", f"Which city in my upload is the warmest? Write just its name to {OUT}/warmest.txt.",
             {"type": "file_text", "path": "outputs/warmest.txt", "text": max(TEMPS, key=lambda t: t[1])[0]},
             {"uploads/temps.csv": csv_text(["city", "temp_c"], TEMPS)}, upload=True),
    ]


def render() -> str:
    """The text of tasks.yaml."""
    header = "# Written by make_tasks.py (expected values are computed from the set-up files); do not edit by hand.\n"
    return header + yaml.safe_dump({"tasks": all_tasks()}, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":
    (HERE / "tasks.yaml").write_text(render())
    print(f"wrote {len(all_tasks())} tasks to {HERE / 'tasks.yaml'}")
