"""The media skills, each driven by the scripted model through ``/name``, scripts run in the jail.

sql-over-csv, data-cleaning, image-tools, diagram, text-to-speech and dashboard: each test
follows the skill's steps with scripted tool calls (including one mistake the skill's scripts
must name), then opens the artifact on the host the way a person's program would (CSV rows,
image header, SVG nodes, WAV frames, HTML table) and checks what it holds.
"""

from __future__ import annotations

import csv
import io
import struct
import wave
import zlib
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest

from herdsman.client import ToolResult
from herdsman.models.scripted import ScriptedChatModel
from tests.skills.test_public_skills import OUT, UP, WS, _needs_bwrap, bash, call, run, user_data  # noqa: F401

pytestmark = pytest.mark.bwrap
SCRIPTS = "/mnt/skills/public"


def ok(result: ToolResult) -> bool:
    """The command succeeded and its validator's last line is OK."""
    return not result.is_error and result.content.strip().endswith("OK")


def failed_with(result: ToolResult, message: str) -> bool:
    """The command exited 1 and said ``message``."""
    return message in result.content and result.content.strip().endswith("[exit code 1]")


def uploads(home: Path, thread: str) -> Path:
    folder = user_data(home, thread) / "uploads"
    folder.mkdir(parents=True)
    return folder


def png(width: int, height: int) -> bytes:
    """An RGB PNG of a blue-to-green gradient, written with the standard library."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    rows = b"".join(b"\x00" + bytes((20, y * 255 // height, 200) * width) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def jpeg_size(data: bytes) -> tuple[int, int]:
    """Width and height from a JPEG's start-of-frame segment."""
    assert data.startswith(b"\xff\xd8")
    i = 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    raise AssertionError("no start-of-frame segment")


async def test_sql_over_csv_joins_two_files_into_csv_and_markdown(home: Path) -> None:
    up = uploads(home, "t-sql")
    (up / "sales.csv").write_text(
        "Region,Product,Revenue\nNorth,A,100\nSouth,A,250\nNorth,B,50\nEast,B,\nSouth,C,75.5\n"
    )
    (up / "managers.csv").write_text("region,manager\nNorth,Ann\nSouth,Bo\nEast,Cy\n")
    query = f"python3 {SCRIPTS}/sql-over-csv/scripts/query.py {UP}/sales.csv {UP}/managers.csv"
    sql = "SELECT s.region, m.manager, SUM(s.revenue) AS total FROM sales s JOIN managers m USING (region) GROUP BY s.region ORDER BY total DESC"
    check = f"python3 {SCRIPTS}/sql-over-csv/scripts/check_result.py"
    model = ScriptedChatModel(
        responses=[
            bash(f"{query} --schema"),
            bash(f'{query} --sql "DELETE FROM sales" --out {OUT}/gone.csv'),
            bash(f'{query} --sql "{sql}" --out {OUT}/totals.csv'),
            bash(f'{query} --sql "{sql}" --out {OUT}/totals.md'),
            bash(f"{check} {OUT}/totals.csv"),
            bash(f"{check} {OUT}/totals.md"),
            "South leads with 325.5 (Bo). Files: outputs/totals.csv and totals.md",
        ]
    )
    results = await run(home, "t-sql", "/sql-over-csv total revenue per region with its manager", model)
    schema, delete, _, _, check_csv, check_md = results
    assert "table sales (5 rows): region TEXT, product TEXT, revenue REAL" in schema.content
    assert "table managers (3 rows): region TEXT, manager TEXT" in schema.content
    assert failed_with(delete, "only reading queries (SELECT or WITH ... SELECT) run here")
    assert "3 rows, 3 columns: region, manager, total" in check_csv.content and ok(check_csv) and ok(check_md)
    outputs = user_data(home, "t-sql") / "outputs"
    assert not (outputs / "gone.csv").exists()
    rows = list(csv.reader(io.StringIO((outputs / "totals.csv").read_text())))
    assert rows == [
        ["region", "manager", "total"],
        ["South", "Bo", "325.5"],
        ["North", "Ann", "150"],
        ["East", "Cy", ""],
    ]
    table = (outputs / "totals.md").read_text().splitlines()
    assert table[:3] == ["| region | manager | total |", "|---|---|---:|", "| South | Bo | 325.5 |"]
    assert '<active_skill name="sql-over-csv"' in model.calls[0].messages[0].text


async def test_data_cleaning_profiles_then_writes_clean_csv_and_report(home: Path) -> None:
    messy = ' Name ,Joined,Revenue,Notes, Empty \nAnn,2024-01-05,"1,200",ok,\nBo ,2024-02-10,n/a,,\n,,,,\nAnn,2024-01-05,"1,200",ok,\nCy,03/01/2024,$300,  big   deal ,\n'
    (uploads(home, "t-clean") / "customers.csv").write_text(messy)
    scripts = f"{SCRIPTS}/data-cleaning/scripts"
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {scripts}/profile.py {UP}/customers.csv --check"),
            bash(f"python3 {scripts}/clean.py {UP}/customers.csv --out {OUT}/customers-clean.csv --snake-headers"),
            bash(f"python3 {scripts}/profile.py {OUT}/customers-clean.csv --check"),
            "Cleaned: 5 rows became 3. Files: outputs/customers-clean.csv and customers-clean-report.md",
        ]
    )
    results = await run(home, "t-clean", "/data-cleaning tidy up customers.csv", model)
    before, cleaned, after = results
    assert "customers.csv: 5 rows, 5 columns" in before.content and "duplicate rows: 1; empty rows: 1" in before.content
    assert failed_with(before, "problem: `Revenue`: 1 placeholder cells")
    assert "wrote /mnt/user-data/outputs/customers-clean.csv: 3 rows, 4 columns" in cleaned.content
    assert "- `revenue`: text to numbers (whole numbers)" in cleaned.content
    assert "- revenue: number, min 300, max 1200" in after.content and ok(after)
    outputs = user_data(home, "t-clean") / "outputs"
    rows = list(csv.reader(io.StringIO((outputs / "customers-clean.csv").read_text())))
    assert rows == [
        ["name", "joined", "revenue", "notes"],
        ["Ann", "2024-01-05", "1200", "ok"],
        ["Bo", "2024-02-10", "", ""],
        ["Cy", "2024-03-01", "300", "big deal"],
    ]
    report = (outputs / "customers-clean-report.md").read_text()
    assert "- input: 5 rows, 5 columns" in report and "dropped 1 duplicate rows" in report
    assert "| joined | date | 0 |" in report and "| revenue | number | 1 |" in report
    assert (user_data(home, "t-clean") / "uploads" / "customers.csv").read_text() == messy


async def test_image_tools_resize_annotate_convert_and_check(home: Path) -> None:
    (uploads(home, "t-image") / "photo.png").write_bytes(png(1200, 800))
    image = f"python3 {SCRIPTS}/image-tools/scripts/image.py"
    check = f"python3 {SCRIPTS}/image-tools/scripts/check_image.py"
    model = ScriptedChatModel(
        responses=[
            bash(f"{image} info {UP}/photo.png"),
            bash(f"{image} resize {UP}/photo.png --out {OUT}/photo-small.png --width 600"),
            bash(
                f'{image} annotate {OUT}/photo-small.png --out {OUT}/photo-labelled.png --text "Door" --box 100,100,900,250'
            ),
            bash(
                f'{image} annotate {OUT}/photo-small.png --out {OUT}/photo-labelled.png --text "Door" --box 100,100,300,250 --color yellow'
            ),
            bash(f"{image} convert {OUT}/photo-labelled.png --out {OUT}/photo-labelled.jpg"),
            bash(f"{check} {OUT}/photo-small.png --width 640"),
            bash(f"{check} {OUT}/photo-labelled.jpg --width 600 --height 400 --format JPEG"),
            "Resized to 600x400, labelled the door: outputs/photo-labelled.jpg",
        ]
    )
    results = await run(home, "t-image", "/image-tools make it 600 wide and mark the door", model)
    info, resized, outside, labelled, converted, wrong, right = results
    assert "photo.png: PNG, 1200x800, RGB" in info.content
    assert "wrote photo-small.png: PNG, 600x400, RGB" in resized.content
    assert failed_with(outside, "--box 100,100,900,250 is outside the 600x400 image")
    assert not labelled.is_error and "wrote photo-labelled.jpg: JPEG, 600x400, RGB" in converted.content
    assert failed_with(wrong, "width is 600, not 640")
    assert "photo-labelled.jpg: JPEG, 600x400, RGB" in right.content and ok(right)
    outputs = user_data(home, "t-image") / "outputs"
    assert png_size((outputs / "photo-small.png").read_bytes()) == (600, 400)
    assert png_size((outputs / "photo-labelled.png").read_bytes()) == (600, 400)
    assert (outputs / "photo-labelled.png").read_bytes() != (outputs / "photo-small.png").read_bytes()
    assert jpeg_size((outputs / "photo-labelled.jpg").read_bytes()) == (600, 400)


async def test_diagram_from_a_text_description_to_svg_and_png(home: Path) -> None:
    spec = "title: Checkout\ndirection: LR\nBrowser [person]\nBrowser -> API : HTTPS\nAPI => Database\nAPI -- Cache\n"
    draw = f"python3 {SCRIPTS}/diagram/scripts/diagram.py {WS}/diagram.txt --out {OUT}/checkout.svg --out {OUT}/checkout.png"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{WS}/diagram.txt", content=spec),
            bash(draw),
            call(
                "str_replace",
                path=f"{WS}/diagram.txt",
                old="API => Database\n",
                new="API -> Database : SQL\nDatabase [cylinder]\n",
            ),
            bash(draw),
            bash(
                f'python3 {SCRIPTS}/diagram/scripts/check_diagram.py {OUT}/checkout.svg --nodes "Browser,API,Database,Cache"'
            ),
            "The diagram is in outputs/checkout.svg and checkout.png.",
        ]
    )
    results = await run(home, "t-diagram", "/diagram the checkout: browser, API, database, cache", model)
    assert failed_with(results[1], "error: line 5: cannot read 'API => Database'")
    assert "4 nodes, 3 edges" in results[3].content and not results[3].is_error
    assert "edges: Browser -> API, API -> Database, API -- Cache" in results[4].content and ok(results[4])
    outputs = user_data(home, "t-diagram") / "outputs"
    svg = ElementTree.parse(outputs / "checkout.svg").getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = {g.get("class"): [] for g in svg.iter(f"{ns}g")}
    for g in svg.iter(f"{ns}g"):
        titles[g.get("class")].append(g.findtext(f"{ns}title"))
    assert sorted(titles["node"]) == ["API", "Browser", "Cache", "Database"]
    assert titles["edge"] == ["Browser->API", "API->Database", "API->Cache"]
    texts = [t.text for t in svg.iter(f"{ns}text")]
    assert {"Checkout", "HTTPS", "SQL"} <= set(texts)
    width, height = png_size((outputs / "checkout.png").read_bytes())
    assert width > height > 0  # left to right
    assert '"Database" [shape=cylinder' in (outputs / "checkout.dot").read_text()
    # fontconfig's cache went to the command's scratch space, not into the user's files
    assert sorted(p.name for p in (user_data(home, "t-diagram") / "workspace").iterdir()) == ["diagram.txt"]


async def test_text_to_speech_writes_a_wav_that_plays(home: Path) -> None:
    text = "# Weekly update\n\nSales grew **12%** this week. See [the report](report.md).\n"
    speak = f"python3 {SCRIPTS}/text-to-speech/scripts/speak.py --text-file {WS}/speech.md --out {OUT}/update.wav"
    model = ScriptedChatModel(
        responses=[
            call("write_file", path=f"{WS}/speech.md", content=text),
            bash(f"{speak} --voice english"),
            bash(f"{speak} --voice en-us"),
            bash(f"python3 {SCRIPTS}/text-to-speech/scripts/check_audio.py {OUT}/update.wav"),
            "The spoken update is outputs/update.wav.",
        ]
    )
    results = await run(home, "t-speech", "/text-to-speech read this update aloud", model)
    assert failed_with(results[1], "no voice 'english'")
    assert (
        "wrote /mnt/user-data/outputs/update.wav" in results[2].content
        and "voice en-us, 10 words" in results[2].content
    )
    assert "update.wav: WAV, 1 channel(s), 22050 Hz, 16 bit" in results[3].content and ok(results[3])
    with wave.open(str(user_data(home, "t-speech") / "outputs" / "update.wav"), "rb") as w:
        seconds = w.getnframes() / w.getframerate()
        samples = w.readframes(w.getnframes())
    assert 1.5 < seconds < 30 and w.getnchannels() == 1 and w.getsampwidth() == 2
    assert max(abs(s) for (s,) in struct.iter_unpack("<h", samples)) > 1000  # speech, not silence
    assert sorted(p.name for p in (user_data(home, "t-speech") / "workspace").iterdir()) == ["speech.md"]


class Page(HTMLParser):
    """Table cells, inline SVG count and every attribute value of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.svgs, self.attributes, self._cell = 0, [], None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [(tag, k, v or "") for k, v in attrs]
        self.svgs += tag == "svg"
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell += data


async def test_dashboard_is_one_offline_html_with_cards_charts_and_table(home: Path) -> None:
    data = "date,region,product,revenue,units\n2024-01-05,North,A,100,2\n2024-01-20,South,A,250,5\n2024-02-03,North,B,50,1\n2024-02-14,East,<b>B</b>,,3\n2024-03-01,South,C,75.5,1\n"
    (uploads(home, "t-dash") / "sales.csv").write_text(data)
    model = ScriptedChatModel(
        responses=[
            bash(f"python3 {SCRIPTS}/dashboard/scripts/dashboard.py {UP}/sales.csv --columns"),
            bash(
                f"python3 {SCRIPTS}/dashboard/scripts/dashboard.py {UP}/sales.csv --out {OUT}/dashboard.html --title 'Q1 sales' --chart bar:region:revenue --chart line:date:units --kpi revenue:sum --kpi units:mean"
            ),
            bash(f"python3 {SCRIPTS}/dashboard/scripts/check_dashboard.py {OUT}/dashboard.html --rows 5"),
            "South leads with 325.50. Dashboard: outputs/dashboard.html",
        ]
    )
    columns, built, checked = await run(home, "t-dash", "/dashboard a dashboard of sales.csv", model)
    assert (
        "- date: date\n- region: text, 3 distinct\n- product: text, 4 distinct\n- revenue: number\n- units: number"
        in columns.content
    )
    assert "chart: bar sum of revenue by region: South 325.50, North 150\n" in built.content
    assert "note: no revenue values for region = East; left out of the chart" in built.content  # unknown, not 0
    assert "2 cards (sum of revenue 475.50; mean of units 2.40), 2 charts, 5 table rows" in built.content
    assert "title 'Q1 sales', 2 cards, 2 charts, table of 5 rows" in checked.content and ok(checked)
    html = (user_data(home, "t-dash") / "outputs" / "dashboard.html").read_text()
    page = Page()
    page.feed(html)
    assert page.rows[0] == ["date", "region", "product", "revenue", "units"]
    assert page.rows[1:] == [
        ["2024-01-05", "North", "A", "100", "2"],
        ["2024-01-20", "South", "A", "250", "5"],
        ["2024-02-03", "North", "B", "50", "1"],
        ["2024-02-14", "East", "<b>B</b>", "", "3"],
        ["2024-03-01", "South", "C", "75.50", "1"],
    ]
    assert page.svgs == 2 and "&lt;b&gt;B&lt;/b&gt;" in html  # cells are escaped, not markup
    assert "http:" not in html and "https:" not in html
    assert not [a for a in page.attributes if a[1] in ("src", "href")]


async def test_meeting_notes_checker_names_problems_until_the_minutes_are_right(home: Path) -> None:
    raw = "Release sync 2024-05-02. Ann, Bo, Cy.\nAgreed to ship v2 on May 20.\nAnn updates the docs by 2024-05-10. Bo fixes the login bug. Who owns billing?\n"
    (uploads(home, "t-notes") / "notes.txt").write_text(raw)
    minutes = (
        "# Release sync - 2024-05-02\n\n**Attendees:** Ann, Bo, Cy\n\n## Summary\nThe v2 date is set and the work is split.\n\n"
        "## Decisions\n- Ship v2 on 2024-05-20\n\n## Action items\n| # | Owner | Task | Due |\n|---|---|---|---|\n"
        "| 1 | Ann | Update the docs | 2024-05-10 |\n| 2 | Dan | Fix the login bug | next week |\n\n## Open questions\n- Who owns billing?\n"
    )
    path = f"{OUT}/release-sync-minutes.md"
    check = f"python3 {SCRIPTS}/meeting-notes/scripts/check_notes.py {path} --source {UP}/notes.txt --csv {OUT}/release-sync-actions.csv"
    model = ScriptedChatModel(
        responses=[
            bash(f"cat {SCRIPTS}/meeting-notes/templates/action-items.md"),
            call("write_file", path=path, content=minutes),
            bash(check),
            call(
                "str_replace",
                path=path,
                old="| 2 | Dan | Fix the login bug | next week |",
                new="| 2 | Bo | Fix the login bug | TBD |",
            ),
            bash(check),
            "Two action items: Ann updates the docs (2024-05-10), Bo fixes the login bug (TBD).",
        ]
    )
    results = await run(home, "t-notes", "/meeting-notes action items from notes.txt", model)
    assert "| # | Owner | Task | Due |" in results[0].content
    first, second = results[2], results[4]
    assert failed_with(first, "action item 2: due 'next week' must be YYYY-MM-DD or TBD")
    assert "action item 2: owner 'Dan' is not in the raw notes" in first.content
    assert "2. Bo: Fix the login bug (due TBD)" in second.content and ok(second)
    rows = list(
        csv.reader(io.StringIO((user_data(home, "t-notes") / "outputs" / "release-sync-actions.csv").read_text()))
    )
    assert rows == [
        ["number", "owner", "task", "due"],
        ["1", "Ann", "Update the docs", "2024-05-10"],
        ["2", "Bo", "Fix the login bug", "TBD"],
    ]
