"""The held-out test split of the agent task benchmark.

These tasks are for measuring, never for tuning: their transcripts are not read to write or tune a
rule (see README.md). They cover the development categories and the question-style ones (answers
read off the file system, background processes, logs, permissions, small command-line scripts,
edits across several files, answers that must be a single value); a good part is in Chinese.
As in ``make_tasks.py``, every expected value is computed from the set-up files below.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import statistics
from collections import Counter

from taskkit import OUT, WS, csv_text, task

rng = random.Random(3131)


def _t(*args, **kwargs) -> dict:
    return task(*args, split="test", **kwargs)


def _unique_max(counts: dict) -> str:
    """The key with the highest count, asserted to be the only one (the data must not be ambiguous)."""
    best = max(counts.values())
    [key] = [k for k, v in counts.items() if v == best]
    return key


# -- files, shell, data --------------------------------------------------------------------
DOWNLOADS = {
    "workspace/downloads/invoice-march.pdf": "%PDF-1.4 invoice\n",
    "workspace/downloads/scan_004.pdf": "%PDF-1.4 scan\n",
    "workspace/downloads/notes.txt": "call the bank\n",
    "workspace/downloads/photo.jpg": "JPEG\n",
    "workspace/downloads/manual-v2.pdf": "%PDF-1.4 manual\n",
}
PDFS = sorted(p.rsplit("/", 1)[1] for p in DOWNLOADS if p.endswith(".pdf"))
SCORES = [[n, rng.randint(52, 99)] for n in ("Li Wei", "Zhang Min", "Wang Fang", "Chen Jie", "Liu Yang", "Zhao Lei")]
PHOTOS = {
    f"workspace/photos/{folder}/img_{i:03d}.{rng.choice(['jpg', 'jpg', 'png', 'heic', 'mov'])}": "not really an image\n"
    for i, folder in enumerate(
        ["2023", "2023", "2023/trip", "2024", "2024", "2024", "2024/party", "2024/party", "misc"] * 2
    )
}
EXT_COUNTS = dict(Counter(p.rsplit(".", 1)[1] for p in PHOTOS))
SITE = {
    "workspace/site/index.html": "<html><body>hi</body></html>\n",
    "workspace/site/css/style.css": "body { margin: 0 }\n",
    "workspace/site/js/app.js": "console.log('hi');\n",
}
INVENTORY = [
    ["widget", 120, 2.50],
    ["gadget", 15, 89.00],
    ["sprocket", 400, 1.10],
    ["gizmo", 35, 42.50],
    ["doohickey", 8, 150.00],
    ["flange", 650, 0.95],
    ["valve", 60, 18.75],
    ["bolt", 900, 0.12],
]
TOP_VALUE = max(INVENTORY, key=lambda r: r[1] * r[2])[0]
USERS = [
    {"name": n, "email": f"{n.lower()}@example.com", "age": rng.randint(19, 64), "active": rng.random() < 0.6}
    for n in (
        "Amara",
        "Bo",
        "Chidi",
        "Dana",
        "Elif",
        "Femi",
        "Gus",
        "Hana",
        "Ines",
        "Jon",
        "Kira",
        "Lars",
        "Mei",
        "Nils",
    )
]
USERS[3].update(age=30, active=True)  # exactly 30 is not older than 30
ACTIVE_OVER_30 = [u["email"] for u in USERS if u["active"] and u["age"] > 30]
CLASS_SCORES = [[rng.choice("ABC"), f"s{i:02d}", rng.randint(48, 100)] for i in range(24)]
CLASS_AVG = {
    c: round(statistics.mean(r[2] for r in CLASS_SCORES if r[0] == c), 2) for c in sorted({r[0] for r in CLASS_SCORES})
}

# -- code fixes ------------------------------------------------------------------------------
PAGER_TEST = (
    "from pager import page\n\nitems = list(range(1, 24))\nassert page(items, 1, 10) == list(range(1, 11))\n"
    "assert page(items, 3, 10) == [21, 22, 23]\nassert page(items, 4, 10) == []\nprint('ok')\n"
)
PRICES = [f"{rng.randint(100, 9999) / 100:.2f}" for _ in range(12)]
PRICE_SUM = f"{sum(float(p) for p in PRICES):.2f}"
FIZZ_BUGGY = (
    "import sys\n\nn = int(sys.argv[1])\nfor i in range(1, n + 1):\n    if i % 3 == 0:\n        print('Fizz')\n"
    "    elif i % 5 == 0:\n        print('Buzz')\n    elif i % 15 == 0:\n        print('FizzBuzz')\n    else:\n        print(i)\n"
)


def fizzbuzz(n: int) -> str:
    """What a right fizz.py prints for ``n``."""
    return "\n".join(
        "FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i)
        for i in range(1, n + 1)
    )


# -- search, multi-step, delegation ----------------------------------------------------------
APP = {
    "workspace/app/api/client.py": "import requests\n\n\ndef get(url):\n    return requests.get(url, timeout=5).json()\n",
    "workspace/app/api/__init__.py": "",
    "workspace/app/metrics.py": "requests_total = 0\n\n\ndef bump():\n    global requests_total\n    requests_total += 1\n",
    "workspace/app/sync/fetch.py": "from requests import Session\n\nsession = Session()\n",
    "workspace/app/sync/local.py": "import os\n\n# v1 called the server here; now everything is local\nROOT = os.getcwd()\n",
    "workspace/app/main.py": "from api.client import get\n\nprint(get('http://localhost:9000/health'))\n",
}
MAIL_SUBJECTS = [
    "Lunch on Friday?",
    "Invoice #2231 for March",
    "Team offsite plans",
    "Your INVOICE is ready",
    "Re: server migration",
    "Newsletter: spring edition",
    "Overdue invoice reminder",
    "Password reset",
]
MAIL = {
    f"workspace/mail/{i:03d}.eml": f"From: someone@example.org\nSubject: {s}\n\nHello,\nsee the subject.\n"
    for i, s in enumerate(MAIL_SUBJECTS, 1)
}
INVOICE_MAIL = sorted(p.rsplit("/", 1)[1] for p, text in MAIL.items() if "invoice" in text.lower())
DEPLOY = {
    f"workspace/deploy/{env}.yaml": f"env: {env}\nserver:\n  host: {env}.internal\n  port: {port}\ndatabase:\n  host: db.{env}.internal\n  port: 5432\n"
    for env, port in (("prod", 443), ("staging", 8443), ("dev", 3000))
}
EXPENSES = []
for i in range(20):
    cents = rng.randint(1000, 90000)
    cents += cents % 10 == 0  # a last decimal that is not 0: the amount reads back the same in any tool
    EXPENSES.append(
        [f"2025-04-{1 + i:02d}", ("travel", "meals", "office")[i % 3], f"{cents / 100:.2f}", f"receipt {100 + i}"]
    )
TRAVEL = sorted((r for r in EXPENSES if r[1] == "travel"), key=lambda r: -float(r[2]))
WORD_COUNTS = {"river": 9, "stone": 7, "cloud": 5, "leaf": 4, "wind": 3, "sun": 2, "moon": 1}
WORDS = [w for w, n in WORD_COUNTS.items() for _ in range(n)]
rng.shuffle(WORDS)
DELEG_LOGS = {
    f"workspace/logs/{name}.txt": "".join(f"{name} event {j}\n" for j in range(rng.randint(5, 40)))
    for name in ("api", "db", "cache", "queue")
}
DELEG_LOGS["workspace/logs/README.md"] = "Logs of the four services.\nOne event per line.\n"
NUMS = [rng.randint(-500, 500) for _ in range(30)]

# -- skills, long outputs, uploads -----------------------------------------------------------
TRAFFIC = [[f"2025-05-{d:02d}", dt.date(2025, 5, d).strftime("%A"), rng.randint(200, 900)] for d in range(1, 31)]
Q1_2024 = [(dt.date(2024, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(91)]
CALLS = [
    [f"+41 44 {rng.randint(100, 999)} {rng.randint(10, 99)} {rng.randint(10, 99)}", rng.randint(5, 1800)]
    for _ in range(25)
]
CITY_ORDERS = [
    [1000 + i, c, rng.randint(20, 400)]
    for i, c in enumerate(
        [
            "Chengdu",
            "Wuhan",
            "Chengdu",
            "Xi'an",
            "Hangzhou",
            "Wuhan",
            "Chengdu",
            "Hangzhou",
            "Chengdu",
            "Xi'an",
            "Wuhan",
            "Chengdu",
        ]
    )
]
TOP_CITY = _unique_max(Counter(r[1] for r in CITY_ORDERS))

# -- questions answered from the file system -------------------------------------------------
STOCK_LINES = 213
ASSETS = {
    "workspace/assets/logo.svg": "<svg/>" + "x" * 1228 + "\n",
    "workspace/assets/css/main.css": "a{}" + "y" * 5674 + "\n",
    "workspace/assets/css/print.css": "p{}\n",
    "workspace/assets/fonts/body.woff": "w" * 20480,
    "workspace/assets/img/hero.webp": "i" * 13107,
}
ASSETS_BYTES = sum(len(text.encode()) for text in ASSETS.values())
PROJ = {
    "workspace/proj/services/api/secrets.env": "API_KEY=changeme\n",
    "workspace/proj/docs/secrets.env.example": "API_KEY=\n",
    "workspace/proj/services/web/app.py": "print('web')\n",
    "workspace/proj/README.md": "# proj\n",
    "workspace/proj/config/settings.toml": "debug = false\n",
}
REPORTS = {
    "2024-annual.md": 1717000000,
    "q1-summary.md": 1714000000,
    "q2-summary.md": 1722000000,
    "q3-summary.md": 1719000000,
    "draft-notes.md": 1700000000,
}
NEWEST_REPORT = max(REPORTS, key=REPORTS.get)
MEDIA = {
    "workspace/media/podcast/ep1.mp3": 12000,
    "workspace/media/podcast/ep2.mp3": 15500,
    "workspace/media/music/theme.ogg": 9000,
    "workspace/media/cover.png": 4000,
    "workspace/media/trailer.mp4": 15050,
}
LARGEST_MEDIA = max(MEDIA, key=MEDIA.get)

# -- background processes --------------------------------------------------------------------
ITEMS = [{"sku": f"A{100 + i}", "stock": rng.randint(0, 40)} for i in range(30)]
LOW_STOCK = sum(item["stock"] < 10 for item in ITEMS)
STOCK_SERVER = """import json
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

ITEMS = json.loads(Path(__file__).with_name("items.json").read_text())


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/low-stock":
            body = json.dumps({"count": sum(i["stock"] < 10 for i in ITEMS)}).encode()
            self.send_response(200)
        else:
            body = b'{"error": "not found"}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


HTTPServer(("127.0.0.1", 8391), Handler).serve_forever()
"""
BLOCKS = [f"block {i} {rng.getrandbits(32):08x}" for i in range(20)]
CRUNCH = """import hashlib
import time
from pathlib import Path

blocks = Path(__file__).with_name("blocks.txt").read_text().splitlines()
digest = hashlib.sha256()
for i, line in enumerate(blocks, 1):
    digest.update(line.encode())
    if i % 5 == 0:
        print(f"processed {i} blocks", flush=True)
        time.sleep(0.3)
print(f"checksum: {digest.hexdigest()[:12]}", flush=True)
"""
CHECKSUM = hashlib.sha256("".join(BLOCKS).encode()).hexdigest()[:12]
CRUNCH_LOG = [f"processed {i} blocks" for i in range(5, len(BLOCKS) + 1, 5)] + [f"checksum: {CHECKSUM}"]
CHANGELOG = [
    f"- {rng.choice(['fix', 'add', 'improve'])} {rng.choice(['login', 'search', 'export', 'cache'])}" for _ in range(17)
]
APP_SERVER = """from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

HERE = Path(__file__).parent


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        version = (HERE / "VERSION").read_text().strip()
        build = len((HERE / "CHANGELOG.txt").read_text().splitlines())
        body = f"demo-app {version} (build {build})" if self.path == "/version" else "not found"
        self.send_response(200 if self.path == "/version" else 404)
        self.end_headers()
        self.wfile.write(body.encode())


HTTPServer(("127.0.0.1", 8472), Handler).serve_forever()
"""

# -- logs ------------------------------------------------------------------------------------
GATEWAY = [
    f"2025-06-01 {h:02d}:{m:02d} gateway {rng.choice(['request ok', 'request ok', 'request ok', 'connection reset by peer', 'upstream timeout'])}"
    for h in range(6)
    for m in range(0, 60, 3)
]
RESETS = sum("connection reset" in line for line in GATEWAY)
SERVICE = []
when = dt.datetime(2025, 6, 3, 8, 0, 0)
for i in range(120):
    when += dt.timedelta(seconds=rng.randint(5, 300))
    level = "INFO" if i in (0, 119) else rng.choice(["INFO", "INFO", "INFO", "WARN", "ERROR"])
    SERVICE.append((when.strftime("%Y-%m-%dT%H:%M:%SZ"), level))
SERVICE_LOG = "".join(f"{ts} {lvl} worker: {'job failed' if lvl == 'ERROR' else 'tick'}\n" for ts, lvl in SERVICE)
SERVICE_ERRORS = [ts for ts, lvl in SERVICE if lvl == "ERROR"]
ACCESS = [
    f"GET /{rng.choice(['home', 'cart', 'pay', 'search'])} user=u{rng.randint(1000, 1040)} 200" for _ in range(150)
]
DISTINCT_USERS = len({line.split("user=")[1].split()[0] for line in ACCESS})
NGINX = [
    f'10.0.0.{rng.randint(1, 40)} - - [10/Oct/2025:13:{i // 60:02d}:{i % 60:02d} +0000] "GET /{rng.choice(["", "shop", "api/items", "login"])} HTTP/1.1" '
    f'{rng.choice([200, 200, 200, 200, 301, 404, 500])} {rng.randint(100, 9000)} "-" "curl/8.5"'
    for i in range(180)
]
STATUS_COUNTS = dict(Counter(line.split('" ')[1].split()[0] for line in NGINX))

# -- permissions, scripting, multi-file edits, single values ---------------------------------
SCRIPTS_MODES = {
    "backup.sh": "755",
    "cleanup.sh": "644",
    "report.py": "755",
    "notes.txt": "644",
    "sync.sh": "700",
    "lib.sh": "644",
    "run": "755",
}
EXECUTABLE_SCRIPTS = sorted(n for n, m in SCRIPTS_MODES.items() if int(m, 8) & 0o100)
KEYS = ["workspace/keys/id_ed25519", "workspace/keys/api.token", "workspace/keys/backup.key"]
ORDERS = [[f"item{i}", rng.randint(1, 9), f"{rng.randint(100, 5000) / 100:.2f}"] for i in range(9)]
TEXT_COUNTS = {"data": 8, "model": 6, "train": 5, "loss": 3, "epoch": 2}
TEXT_WORDS = [w for w, n in TEXT_COUNTS.items() for _ in range(n)]
rng.shuffle(TEXT_WORDS)
CART_PRICES = (4.5, 12.0, 3.25)
CART_TOTAL = round(sum(CART_PRICES) * 1.2, 2)
SERVICES_INI = {"auth": (8001, 30, 3), "billing": (8002, 45, 5), "search": (8003, 20, 2)}
READINGS = [round(rng.uniform(-20, 40), 1) for _ in range(40)]
CATALOG = [
    {"name": f"product-{i}", "price": rng.choice([19.9, 49.0, 99.5, 100, 100.5, 120, 250, 399, 75])} for i in range(18)
]
OVER_100 = sum(p["price"] > 100 for p in CATALOG)
OWNERS = {"auth": "Kofi Mensah", "billing": "Priya Nair", "search": "Tomás Ruiz", "notifications": "Aiko Tanaka"}
EVENTS = [[(dt.date(2025, 1, 1) + dt.timedelta(days=rng.randint(0, 300))).isoformat(), f"event {i}"] for i in range(15)]


def heldout_tasks() -> list[dict]:
    """The test split."""
    return [
        # -- files
        _t(
            "test_files_move_pdfs",
            "files",
            f"Tidy up {WS}/downloads: move all the .pdf files into a new folder {WS}/downloads/pdf and leave everything else where it is.",
            [
                {
                    "type": "exists",
                    "paths": [f"workspace/downloads/pdf/{n}" for n in PDFS]
                    + ["workspace/downloads/notes.txt", "workspace/downloads/photo.jpg"],
                },
                {"type": "absent", "paths": [f"workspace/downloads/{n}" for n in PDFS]},
            ],
            DOWNLOADS,
        ),
        _t(
            "test_files_add_header",
            "files",
            f"{WS}/scores.csv 缺少表头。请在第一行前面加上表头 name,score，其余内容保持不变。",
            {
                "type": "csv_rows",
                "path": "workspace/scores.csv",
                "header": ["name", "score"],
                "rows": [[n, str(s)] for n, s in SCORES],
            },
            {"workspace/scores.csv": "".join(f"{n},{s}\n" for n, s in SCORES)},
        ),
        # -- shell
        _t(
            "test_shell_tarball",
            "shell",
            f"Pack the {WS}/site folder into a gzipped tarball at {OUT}/site.tar.gz.",
            {"type": "tar_names", "path": "outputs/site.tar.gz", "names": ["index.html", "style.css", "app.js"]},
            SITE,
        ),
        _t(
            "test_shell_ext_counts",
            "shell",
            f'统计一下 {WS}/photos（包括子目录）里每种扩展名各有多少个文件，结果存成 JSON 对象写到 {OUT}/ext_counts.json，比如 {{"jpg": 3}}。',
            {"type": "json_file", "path": "outputs/ext_counts.json", "equals": EXT_COUNTS},
            PHOTOS,
        ),
        # -- data
        _t(
            "test_data_top_stock_value",
            "data",
            f"Which product in {WS}/inventory.csv ties up the most money (quantity times unit price)? Write its name to {OUT}/top.txt.",
            {"type": "file_text", "path": "outputs/top.txt", "text": TOP_VALUE},
            {"workspace/inventory.csv": csv_text(["product", "quantity", "unit_price"], INVENTORY)},
        ),
        _t(
            "test_data_active_emails",
            "data",
            f"List the emails of the active users older than 30 in {WS}/users.json, one per line in the file's order, in {OUT}/emails.txt.",
            {"type": "file_lines", "path": "outputs/emails.txt", "lines": ACTIVE_OVER_30},
            {"workspace/users.json": json.dumps(USERS, indent=2)},
        ),
        _t(
            "test_data_class_avg",
            "data",
            f"{WS}/grades.csv 里每个班（class 列）的平均分是多少？存到 {OUT}/class_avg.json，键是班级名，值是平均分（保留两位小数）。",
            {"type": "json_file", "path": "outputs/class_avg.json", "equals": CLASS_AVG, "tolerance": 0.01},
            {"workspace/grades.csv": csv_text(["class", "student", "score"], CLASS_SCORES)},
        ),
        # -- code fixes
        _t(
            "test_fix_pager",
            "code_fix",
            f"Page 1 of my pager returns the second page's items. Fix pager.py in {WS}; test_pager.py shows what it should do (leave the test alone).",
            [
                {"type": "run", "command": "python3 test_pager.py", "cwd": "workspace", "stdout": "ok"},
                {"type": "file_text", "path": "workspace/test_pager.py", "text": PAGER_TEST},
            ],
            {
                "workspace/pager.py": 'def page(items, number, size):\n    """The items of page `number` (1-based), `size` per page."""\n'
                "    start = number * size\n    return items[start:start + size]\n",
                "workspace/test_pager.py": PAGER_TEST,
            },
        ),
        _t(
            "test_fix_price_sum",
            "code_fix",
            f"python3 total.py prices.txt crashes with a TypeError in {WS}. Fix total.py so it prints the sum of the prices with two decimals.",
            {"type": "run", "command": "python3 total.py prices.txt", "cwd": "workspace", "stdout": PRICE_SUM},
            {
                "workspace/total.py": "import sys\n\ntotal = 0\nfor line in open(sys.argv[1]):\n    if line.strip():\n        total += line.strip()\nprint(f'{total:.2f}')\n",
                "workspace/prices.txt": "\n".join(PRICES) + "\n",
            },
        ),
        _t(
            "test_fix_fizzbuzz",
            "code_fix",
            f"{WS}/fizz.py 有个 bug：15 的倍数应该输出 FizzBuzz，现在却输出 Fizz。请修好它，让 python3 fizz.py N 按 FizzBuzz 规则打印 1 到 N。",
            [
                {"type": "run", "command": "python3 fizz.py 15", "cwd": "workspace", "stdout": fizzbuzz(15)},
                {"type": "run", "command": "python3 fizz.py 31", "cwd": "workspace", "stdout": fizzbuzz(31)},
            ],
            {"workspace/fizz.py": FIZZ_BUGGY},
        ),
        # -- search
        _t(
            "test_search_requests_imports",
            "search",
            f"Which Python files under {WS}/app import the requests library? Put their paths relative to app, sorted, one per line, in {OUT}/uses_requests.txt.",
            {"type": "file_lines", "path": "outputs/uses_requests.txt", "lines": ["api/client.py", "sync/fetch.py"]},
            APP,
        ),
        _t(
            "test_search_invoice_mail",
            "search",
            f"找出 {WS}/mail 里所有提到 invoice 的邮件（不区分大小写），把文件名按字母顺序写到 {OUT}/invoices.txt，每行一个。",
            {"type": "file_lines", "path": "outputs/invoices.txt", "lines": INVOICE_MAIL},
            MAIL,
        ),
        _t(
            "test_search_staging_port",
            "search",
            f"Which port does the web server listen on in staging? The deployment configs are in {WS}/deploy.",
            {"type": "answer_value", "value": 8443},
            DEPLOY,
        ),
        # -- multi-step
        _t(
            "test_multi_travel_expenses",
            "multi_step",
            f"From {WS}/expenses.csv keep only the travel rows, sort them by amount, largest first, and save them with the same header as {OUT}/travel.csv.",
            {
                "type": "csv_rows",
                "path": "outputs/travel.csv",
                "header": ["date", "category", "amount", "note"],
                "rows": TRAVEL,
            },
            {"workspace/expenses.csv": csv_text(["date", "category", "amount", "note"], EXPENSES)},
        ),
        _t(
            "test_multi_top_words",
            "multi_step",
            f"统计 {WS}/words.txt 里每个单词出现的次数，把出现最多的 3 个写到 {OUT}/top3.txt，每行写“单词 次数”（例如 apple 5），按次数从高到低排列。",
            {
                "type": "file_lines",
                "path": "outputs/top3.txt",
                "lines": [f"{w} {n}" for w, n in list(WORD_COUNTS.items())[:3]],
            },
            {"workspace/words.txt": "\n".join(" ".join(WORDS[i : i + 6]) for i in range(0, len(WORDS), 6)) + "\n"},
        ),
        # -- delegation
        _t(
            "test_deleg_line_counts",
            "delegation",
            f'Have a sub-agent count the lines of each .txt file in {WS}/logs, then save the counts to {OUT}/lines.json as {{"<file name>": <lines>}}.',
            {
                "type": "json_file",
                "path": "outputs/lines.json",
                "equals": {p.rsplit("/", 1)[1]: t.count("\n") for p, t in DELEG_LOGS.items() if p.endswith(".txt")},
            },
            DELEG_LOGS,
        ),
        _t(
            "test_deleg_min_max",
            "delegation",
            f'请交给一个子代理（sub-agent）找出 {WS}/nums.txt 里最大和最小的数，然后把结果保存到 {OUT}/range.json，格式为 {{"min": 最小值, "max": 最大值}}。',
            {"type": "json_file", "path": "outputs/range.json", "equals": {"min": min(NUMS), "max": max(NUMS)}},
            {"workspace/nums.txt": "\n".join(map(str, NUMS)) + "\n"},
        ),
        # -- skills
        _t(
            "test_skill_weekday_chart",
            "skill",
            f"Use the data-analysis skill to chart the average visits per weekday in {WS}/traffic.csv, saved to {OUT}/weekdays.png.",
            {"type": "png", "path": "outputs/weekdays.png"},
            {"workspace/traffic.csv": csv_text(["date", "weekday", "visits"], TRAFFIC)},
        ),
        _t(
            "test_skill_teahouse_site",
            "skill",
            f"用 web-page-builder 技能给一家叫“青山茶馆”的茶馆做一个单页网站，放在 {OUT}/teahouse 目录里。",
            {"type": "html_page", "path": "outputs/teahouse/index.html", "title_contains": "青山茶馆"},
        ),
        # -- long outputs
        _t(
            "test_long_powers_of_two",
            "long_output",
            f"Create {OUT}/powers.csv with the header n,power listing 2 to the power n for n from 0 to 64.",
            {
                "type": "csv_rows",
                "path": "outputs/powers.csv",
                "header": ["n", "power"],
                "rows": [[str(n), str(2**n)] for n in range(65)],
            },
        ),
        _t(
            "test_long_q1_dates",
            "long_output",
            f"生成 {OUT}/dates.txt：列出 2024 年第一季度的每一天（格式如 2024-01-01），每行一个。",
            {"type": "file_lines", "path": "outputs/dates.txt", "lines": Q1_2024},
        ),
        # -- uploads
        _t(
            "test_upload_median_call",
            "upload",
            "What's the median call duration in the file I uploaded?",
            {"type": "answer_value", "value": statistics.median(r[1] for r in CALLS)},
            {"uploads/calls.csv": csv_text(["caller", "duration_s"], CALLS)},
            upload=True,
        ),
        _t(
            "test_upload_top_city",
            "upload",
            f"我上传的订单表里，哪个城市的订单最多？把城市名写到 {OUT}/city.txt 就行。",
            {"type": "file_text", "path": "outputs/city.txt", "text": TOP_CITY},
            {"uploads/orders.csv": csv_text(["order_id", "city", "amount"], CITY_ORDERS)},
            upload=True,
        ),
        # -- questions answered from the file system
        _t(
            "test_fsq_line_count",
            "fs_question",
            f"How many lines are in {WS}/inventory/stock.txt?",
            {"type": "answer_value", "value": STOCK_LINES},
            {"workspace/inventory/stock.txt": "".join(f"sku-{i:04d}\n" for i in range(STOCK_LINES))},
        ),
        _t(
            "test_fsq_folder_bytes",
            "fs_question",
            f"How many bytes do the files in {WS}/assets take up altogether, subfolders included? I mean the sum of the file sizes.",
            {"type": "answer_value", "value": ASSETS_BYTES},
            ASSETS,
        ),
        _t(
            "test_fsq_file_exists",
            "fs_question",
            f"{WS}/proj 里（包括子目录）有没有一个叫 secrets.env 的文件？有的话告诉我它的位置（相对 proj 的路径）。",
            {"type": "answer_value", "value": "services/api/secrets.env"},
            PROJ,
        ),
        _t(
            "test_fsq_newest_file",
            "fs_question",
            f"Which file in {WS}/reports did I change last? Just the file name, please.",
            {"type": "answer_value", "value": NEWEST_REPORT, "just": True},
            {f"workspace/reports/{n}": f"# {n}\n" for n in REPORTS},
            mtimes={f"workspace/reports/{n}": t for n, t in REPORTS.items()},
        ),
        _t(
            "test_fsq_largest_file",
            "fs_question",
            f"{WS}/media 目录（含子目录）里哪个文件最大？它有多少字节？",
            [
                {"type": "answer_value", "value": LARGEST_MEDIA.rsplit("/", 1)[1]},
                {"type": "answer_value", "value": MEDIA[LARGEST_MEDIA]},
            ],
            {p: "m" * size for p, size in MEDIA.items()},
        ),
        # -- background processes
        _t(
            "test_bg_stock_server",
            "background",
            f"{WS}/stock_server.py is a tiny HTTP API on port 8391. Start it in the background and ask it for /low-stock: what count does it report?",
            {"type": "answer_value", "value": LOW_STOCK},
            {"workspace/stock_server.py": STOCK_SERVER, "workspace/items.json": json.dumps(ITEMS, indent=1)},
        ),
        _t(
            "test_bg_crunch_log",
            "background",
            f"Start {WS}/crunch.py in the background with its output going to {OUT}/crunch.log, wait until it has finished, "
            "and tell me the checksum it ends with.",
            [
                {"type": "file_lines", "path": "outputs/crunch.log", "lines": CRUNCH_LOG},
                {"type": "answer_value", "value": CHECKSUM},
            ],
            {"workspace/crunch.py": CRUNCH, "workspace/blocks.txt": "\n".join(BLOCKS) + "\n"},
        ),
        _t(
            "test_bg_version_server",
            "background",
            f"在后台启动 {WS}/app_server.py（端口 8472），然后请求 http://127.0.0.1:8472/version，把返回的内容原样写到 {OUT}/version.txt。",
            {"type": "file_text", "path": "outputs/version.txt", "text": f"demo-app 2.7.1 (build {len(CHANGELOG)})"},
            {
                "workspace/app_server.py": APP_SERVER,
                "workspace/VERSION": "2.7.1\n",
                "workspace/CHANGELOG.txt": "\n".join(CHANGELOG) + "\n",
            },
        ),
        # -- logs
        _t(
            "test_logs_resets",
            "logs",
            f"How many 'connection reset' errors are there in {WS}/logs/gateway.log?",
            {"type": "answer_value", "value": RESETS},
            {
                "workspace/logs/gateway.log": "\n".join(GATEWAY) + "\n",
                "workspace/logs/gateway.log.1": "2025-05-31 23:57 gateway connection reset by peer\n" * 7,
            },
        ),
        _t(
            "test_logs_error_window",
            "logs",
            f"When did the first and the last ERROR happen in {WS}/service.log? Save them to {OUT}/errors.json as "
            '{"first": "<timestamp>", "last": "<timestamp>"}, timestamps as they appear in the log.',
            {
                "type": "json_file",
                "path": "outputs/errors.json",
                "equals": {"first": SERVICE_ERRORS[0], "last": SERVICE_ERRORS[-1]},
            },
            {"workspace/service.log": SERVICE_LOG},
        ),
        _t(
            "test_logs_distinct_users",
            "logs",
            f"{WS}/access.log 里一共出现了多少个不同的用户？用户 ID 在 user= 后面。",
            {"type": "answer_value", "value": DISTINCT_USERS},
            {"workspace/access.log": "\n".join(ACCESS) + "\n"},
        ),
        _t(
            "test_logs_status_codes",
            "logs",
            f'Count the requests per HTTP status code in {WS}/nginx/access.log and save the counts to {OUT}/status.json, e.g. {{"200": 12}}.',
            {"type": "json_file", "path": "outputs/status.json", "equals": STATUS_COUNTS},
            {"workspace/nginx/access.log": "\n".join(NGINX) + "\n"},
        ),
        # -- permissions
        _t(
            "test_perm_deploy_script",
            "permissions",
            f"{WS}/bin/deploy.sh won't run (permission denied). Make it executable, run it and tell me what it prints.",
            [
                {"type": "executable", "paths": ["workspace/bin/deploy.sh"]},
                {"type": "answer_value", "value": "2025.06.3"},
            ],
            {
                "workspace/bin/deploy.sh": '#!/bin/sh\necho "deploying release $(cat "$(dirname "$0")/../RELEASE")"\n',
                "workspace/RELEASE": "2025.06.3\n",
            },
            modes={"workspace/bin/deploy.sh": "644"},
        ),
        _t(
            "test_perm_find_executables",
            "permissions",
            f"{WS}/scripts 里哪些文件有可执行权限？把文件名按字母顺序写进 {OUT}/exec.txt，一行一个。",
            {"type": "file_lines", "path": "outputs/exec.txt", "lines": EXECUTABLE_SCRIPTS},
            {f"workspace/scripts/{n}": "#!/bin/sh\necho hi\n" for n in SCRIPTS_MODES},
            modes={f"workspace/scripts/{n}": m for n, m in SCRIPTS_MODES.items()},
        ),
        _t(
            "test_perm_private_keys",
            "permissions",
            f"The files in {WS}/keys can be read by everyone. Lock them down so only their owner can read and write them (mode 600); "
            "leave the rest of the workspace alone.",
            [
                {"type": "mode", "paths": KEYS, "mode": "600"},
                {"type": "mode", "paths": ["workspace/notes.txt"], "mode": "644"},
            ],
            {**{k: "secret\n" for k in KEYS}, "workspace/notes.txt": "rotate keys monthly\n"},
            modes={**dict(zip(KEYS, ("644", "664", "644"), strict=False)), "workspace/notes.txt": "644"},
        ),
        # -- scripting a command
        _t(
            "test_script_colsum",
            "scripting",
            f"Write a small command-line tool {WS}/colsum.py: `python3 colsum.py FILE COLUMN` prints the sum of the named column "
            "of a CSV file with two decimals. orders.csv is there to try it on.",
            [
                {
                    "type": "run",
                    "command": f"python3 colsum.py orders.csv {col}",
                    "cwd": "workspace",
                    "stdout": f"{sum(float(r[i]) for r in ORDERS):.2f}",
                }
                for i, col in ((1, "qty"), (2, "price"))
            ],
            {"workspace/orders.csv": csv_text(["item", "qty", "price"], ORDERS)},
        ),
        _t(
            "test_script_wordfreq",
            "scripting",
            f"写一个命令行脚本 {WS}/wordfreq.py：用法是 python3 wordfreq.py 文件 N，输出文件中出现次数最多的前 N 个单词，每行一个“单词 次数”，按次数从高到低排。"
            "目录里的 text.txt 可以拿来试。",
            [
                {
                    "type": "run",
                    "command": f"python3 wordfreq.py text.txt {n}",
                    "cwd": "workspace",
                    "stdout": "\n".join(f"{w} {c}" for w, c in list(TEXT_COUNTS.items())[:n]),
                }
                for n in (3, 1)
            ],
            {"workspace/text.txt": " ".join(TEXT_WORDS) + "\n"},
        ),
        _t(
            "test_script_greet_sh",
            "scripting",
            f"Write a bash script {WS}/greet.sh that takes a name and an optional greeting (default Hello) and prints "
            "'<greeting>, <name>!'. Make it executable.",
            [
                {"type": "executable", "paths": ["workspace/greet.sh"]},
                {"type": "run", "command": "./greet.sh Ada", "cwd": "workspace", "stdout": "Hello, Ada!"},
                {"type": "run", "command": "./greet.sh Ada Hi", "cwd": "workspace", "stdout": "Hi, Ada!"},
            ],
        ),
        _t(
            "test_script_checkport",
            "scripting",
            f"Write {WS}/checkport.py: it takes one argument and, if it is a valid TCP port number (1-65535), prints valid and exits "
            "with 0; otherwise (out of range, or not a number) it prints invalid and exits with 1.",
            [
                {
                    "type": "run",
                    "command": f"python3 checkport.py {arg}; echo rc=$?",
                    "cwd": "workspace",
                    "stdout": f"{word}\nrc={rc}",
                }
                for arg, word, rc in (
                    ("8080", "valid", 0),
                    ("65535", "valid", 0),
                    ("70000", "invalid", 1),
                    ("0", "invalid", 1),
                    ("abc", "invalid", 1),
                )
            ],
        ),
        # -- edits across several files
        _t(
            "test_mf_rename_function",
            "multi_file",
            f"Rename the function calc_total to compute_total everywhere in {WS}/shop.",
            [
                {"type": "text_absent", "path": "workspace/shop", "text": "calc_total"},
                {
                    "type": "run",
                    "command": "python3 main.py",
                    "cwd": "workspace/shop",
                    "stdout": f"total: {CART_TOTAL:.2f}\n{CART_TOTAL}",
                },
                {"type": "run", "command": "python3 -c 'from pricing import compute_total'", "cwd": "workspace/shop"},
            ],
            {
                "workspace/shop/pricing.py": 'TAX = 0.2\n\n\ndef calc_total(prices):\n    """The sum of the prices, tax included."""\n'
                "    return round(sum(prices) * (1 + TAX), 2)\n",
                "workspace/shop/cart.py": "from pricing import calc_total\n\n\nclass Cart:\n    def __init__(self):\n        self.prices = []\n\n"
                "    def add(self, price):\n        self.prices.append(price)\n\n    def total(self):\n        return calc_total(self.prices)\n",
                "workspace/shop/report.py": "import pricing\n\n\ndef line(prices):\n    return f'total: {pricing.calc_total(prices):.2f}'\n",
                "workspace/shop/main.py": f"from cart import Cart\nfrom report import line\n\ncart = Cart()\nfor p in {CART_PRICES}:\n    cart.add(p)\n"
                "print(line(cart.prices))\nprint(cart.total())\n",
            },
        ),
        _t(
            "test_mf_timeouts",
            "multi_file",
            f"把 {WS}/services 下所有服务配置文件（*.ini）里的 timeout 都改成 60，其他设置不要动。",
            [
                {
                    "type": "ini",
                    "path": f"workspace/services/{name}.ini",
                    "section": "service",
                    "values": {"name": name, "port": str(port), "timeout": "60", "retries": str(retries)},
                }
                for name, (port, _timeout, retries) in SERVICES_INI.items()
            ],
            {
                **{
                    f"workspace/services/{name}.ini": f"[service]\nname = {name}\nport = {port}\ntimeout = {timeout}\nretries = {retries}\n"
                    for name, (port, timeout, retries) in SERVICES_INI.items()
                },
                "workspace/services/README.md": "Each service has an .ini file; timeout is in seconds.\n",
            },
        ),
        _t(
            "test_mf_version_bump",
            "multi_file",
            f"Bump the version of the package in {WS}/pkg from 1.4.2 to 1.5.0 everywhere it appears.",
            [
                {"type": "text_absent", "path": "workspace/pkg", "text": "1.4.2"},
                {
                    "type": "run",
                    "command": "python3 -c 'import sys; sys.path.insert(0, \"src\"); import mylib; print(mylib.__version__)'",
                    "cwd": "workspace/pkg",
                    "stdout": "1.5.0",
                },
                {
                    "type": "file_text",
                    "path": "workspace/pkg/pyproject.toml",
                    "text": '[project]\nname = "mylib"\nversion = "1.5.0"\n\n[tool.mylib]\nstrict = true\n',
                },
                {
                    "type": "file_text",
                    "path": "workspace/pkg/README.md",
                    "text": "# mylib\n\nInstall mylib 1.5.0 with pip.\n",
                },
            ],
            {
                "workspace/pkg/pyproject.toml": '[project]\nname = "mylib"\nversion = "1.4.2"\n\n[tool.mylib]\nstrict = true\n',
                "workspace/pkg/src/mylib/__init__.py": '__version__ = "1.4.2"\n',
                "workspace/pkg/README.md": "# mylib\n\nInstall mylib 1.4.2 with pip.\n",
                "workspace/pkg/docs/conf.py": 'project = "mylib"\nrelease = "1.4.2"\n',
            },
        ),
        # -- answers that must be a single value
        _t(
            "test_val_readings_sum",
            "single_value",
            f"Add up the readings in {WS}/readings.txt (one per line). Reply with just the total.",
            {"type": "answer_value", "value": round(sum(READINGS), 1), "tolerance": 0.01, "just": True},
            {"workspace/readings.txt": "\n".join(map(str, READINGS)) + "\n"},
        ),
        _t(
            "test_val_over_100",
            "single_value",
            f"{WS}/catalog.json 里价格超过 100 的商品有几个？只回答数字。",
            {"type": "answer_value", "value": OVER_100, "just": True},
            {"workspace/catalog.json": json.dumps(CATALOG, indent=2)},
        ),
        _t(
            "test_val_billing_owner",
            "single_value",
            f"Who owns the billing service according to {WS}/services.yaml? Answer with the name only.",
            {"type": "answer_value", "value": OWNERS["billing"], "just": True},
            {
                "workspace/services.yaml": "services:\n"
                + "".join(
                    f"  - name: {s}\n    owner: {o}\n    tier: {1 + i % 2}\n" for i, (s, o) in enumerate(OWNERS.items())
                )
            },
        ),
        _t(
            "test_val_earliest_event",
            "single_value",
            f"{WS}/events.csv 中最早的事件发生在哪一天？只回答日期（YYYY-MM-DD），不要别的。",
            {"type": "answer_value", "value": min(e[0] for e in EVENTS), "just": True},
            {"workspace/events.csv": csv_text(["date", "event"], EVENTS)},
        ),
    ]
