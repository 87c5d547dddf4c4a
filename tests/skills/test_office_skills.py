"""The office skills (slides, Word, Excel, PDF, letters), driven by the scripted model through ``/name``.

Each test follows the skill's steps with scripted tool calls, its scripts running in the
bubblewrap jail on the system's python3, and then opens the file it delivered with the same
library a user's program would read it with (python-pptx, python-docx, openpyxl, pypdf, the
email package): slide titles, headings, table cells, formulas and charts, pages and text.
"""

from __future__ import annotations

import email
import importlib.util
import re
import sys
from email import policy
from pathlib import Path
from types import ModuleType

import pytest
from docx import Document
from openpyxl import load_workbook
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pypdf import PdfReader

from herdsman.client import ToolResult
from herdsman.models.scripted import ScriptedChatModel
from herdsman.sandbox.bwrap import bwrap_status
from tests.skills.test_public_skills import OUT, SKILLS, UP, WS, bash, call, run, user_data

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not bwrap_status().available, reason=f"bubblewrap unusable here: {bwrap_status().reason}"),
]
PUBLIC = "/mnt/skills/public"


def script_module(skill: str, script: str) -> ModuleType:
    """``skills/public/<skill>/scripts/<script>.py`` imported here, for its functions."""
    name = f"skill_{skill.replace('-', '_')}_{script}"
    spec = importlib.util.spec_from_file_location(name, SKILLS / "public" / skill / "scripts" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def upload_png(home: Path, thread: str, name: str) -> None:
    """A 640x400 bar chart PNG in the thread's uploads (drawn by the data-analysis skill's plain renderer)."""
    module = script_module("data-analysis", "bar_chart")
    uploads = user_data(home, thread) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    (uploads / name).write_bytes(module.plain_chart([("South", 325.0), ("North", 150.0)]))


def exit_code(result: ToolResult) -> int:
    """The exit code of a bash result (the tool notes a non-zero one on its last line)."""
    found = re.search(r"\[exit code (\d+)\]\s*$", result.content)
    return int(found.group(1)) if found else 0


def all_succeeded(results: list[ToolResult]) -> bool:
    """No tool reported an error and every command exited 0."""
    return not any(r.is_error or exit_code(r) for r in results)


async def run_steps(
    home: Path, thread: str, message: str, steps: list[dict]
) -> tuple[list[ToolResult], ScriptedChatModel]:
    """Send ``message`` to a scripted model that makes the tool calls ``steps``, then answers."""
    model = ScriptedChatModel(responses=[*steps, "Done."])
    return await run(home, thread, message, model), model


async def build_fix_check(
    home: Path, thread: str, message: str, *, source: str, content: str, build: str, error: str, fix: dict, check: str
) -> tuple[list[ToolResult], ScriptedChatModel]:
    """The skills' loop as a model follows it: write ``source``, ``build`` (which fails saying
    ``error``), ``fix`` it, build again, ``check`` the artifact (which says OK), answer.
    Returns the tool results (1 and 3 are the builds, 4 the check) and the model."""
    steps = [call("write_file", path=source, content=content), bash(build), fix, bash(build), bash(check)]
    results, model = await run_steps(home, thread, message, steps)
    assert exit_code(results[1]) == 1 and error in results[1].content, results[1].content
    assert all_succeeded(results[2:]), results
    assert results[4].content.strip().endswith("OK"), results[4].content
    return results, model


def system_prompt(model: ScriptedChatModel) -> str:
    """The system prompt of the model's first call."""
    return model.calls[0].messages[0].text


async def test_slide_deck_names_a_missing_title_then_builds_the_deck(home: Path) -> None:
    upload_png(home, "t-deck", "chart.png")
    broken = '{"title": "Q3 review", "slides": [{"bullets": ["Revenue up 12%"]}]}'
    outline = (
        '{"title": "Q3 review", "subtitle": "Sales team, October",'
        ' "slides": [{"title": "Results", "bullets": ["Revenue up 12%", "  South leads", "Costs flat"],'
        f' "image": "{UP}/chart.png", "notes": "Mention the South first."}},'
        ' {"title": "Next steps", "bullets": ["Hire two people", "Open the East office"]}]}'
    )
    results, model = await build_fix_check(
        home,
        "t-deck",
        "/slide-deck a short deck on our Q3 results",
        source=f"{WS}/deck.json",
        content=broken,
        build=f"python3 {PUBLIC}/slide-deck/scripts/make_deck.py {WS}/deck.json {OUT}/q3.pptx",
        error="slide 1 has no title",
        fix=call("write_file", path=f"{WS}/deck.json", content=outline),
        check=f"python3 {PUBLIC}/slide-deck/scripts/check_deck.py {OUT}/q3.pptx",
    )
    assert "3 slides" in results[3].content
    assert "2. Results - 3 text lines, 1 pictures, notes" in results[4].content

    deck = Presentation(str(user_data(home, "t-deck") / "outputs" / "q3.pptx"))
    assert [s.shapes.title.text for s in deck.slides] == ["Q3 review", "Results", "Next steps"]
    assert deck.slide_width * 9 == deck.slide_height * 16  # 16:9
    results_slide = deck.slides[1]
    body = [s for s in results_slide.placeholders if s.placeholder_format.idx == 1][0]
    assert [(p.text, p.level) for p in body.text_frame.paragraphs] == [
        ("Revenue up 12%", 0),
        ("South leads", 1),
        ("Costs flat", 0),
    ]
    pictures = [s for s in results_slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE]
    assert len(pictures) == 1 and pictures[0].image.size == (640, 400)
    picture = pictures[0]
    assert picture.left + picture.width <= deck.slide_width and picture.top + picture.height <= deck.slide_height
    assert abs(picture.width / picture.height - 640 / 400) < 0.01  # aspect kept
    assert results_slide.notes_slide.notes_text_frame.text == "Mention the South first."
    assert '<active_skill name="slide-deck"' in system_prompt(model)


async def test_markdown_to_slides_turns_each_section_into_a_slide(home: Path) -> None:
    uploads = user_data(home, "t-md") / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "talk.md").write_text(
        "# Moving to SQLite\nPlatform team\n\n## Why\n- One file, no server\n- Fast enough for us\n  - 2k writes/s measured\n\n"
        "## Risks\nOne writer at a time.\nNotes: say WAL mode helps\n\n## Plan\n1. Pilot in March\n2. Migrate in April\n"
    )
    steps = [
        bash(f"python3 {PUBLIC}/slide-deck/scripts/make_deck.py {UP}/talk.md {OUT}/talk.pptx"),
        bash(f"python3 {PUBLIC}/slide-deck/scripts/check_deck.py {OUT}/talk.pptx"),
    ]
    results, model = await run_steps(home, "t-md", "/markdown-to-slides make slides of talk.md", steps)
    assert all_succeeded(results), results
    assert results[1].content.strip().endswith("OK")
    deck = Presentation(str(user_data(home, "t-md") / "outputs" / "talk.pptx"))
    assert [s.shapes.title.text for s in deck.slides] == ["Moving to SQLite", "Why", "Risks", "Plan"]
    assert deck.slides[0].placeholders[1].text == "Platform team"
    why = [(p.text, p.level) for p in deck.slides[1].placeholders[1].text_frame.paragraphs]
    assert why == [("One file, no server", 0), ("Fast enough for us", 0), ("2k writes/s measured", 1)]
    assert deck.slides[2].notes_slide.notes_text_frame.text == "say WAL mode helps"
    assert [p.text for p in deck.slides[3].placeholders[1].text_frame.paragraphs] == [
        "Pilot in March",
        "Migrate in April",
    ]
    assert '<active_skill name="markdown-to-slides"' in system_prompt(
        model
    ) and "slide-deck/scripts/make_deck.py" in system_prompt(model)


async def test_word_document_names_a_bad_table_row_then_builds_the_docx(home: Path) -> None:
    upload_png(home, "t-docx", "chart.png")
    document = (
        "# Q3 sales report\n\nRevenue grew **12%** to 475 EUR.\n\n## Regions\n\n"
        "| Region | Revenue |\n|---|---|\n| South | 325 |\n| North |\n\n"
        "- South leads\n- East has no data\n\n"
        f"![Revenue by region]({UP}/chart.png)\n\n## Next steps\n\nOpen an office in the East.\n"
    )
    results, _ = await build_fix_check(
        home,
        "t-docx",
        "/word-document write up the Q3 sales as a Word file",
        source=f"{WS}/document.md",
        content=document,
        build=f"python3 {PUBLIC}/word-document/scripts/make_docx.py {WS}/document.md {OUT}/q3.docx",
        error="line 10: this table row has 1 cells but the header has 2",
        fix=call("str_replace", path=f"{WS}/document.md", old="| North |\n", new="| North | 150 |\n"),
        check=f"python3 {PUBLIC}/word-document/scripts/check_docx.py {OUT}/q3.docx",
    )
    assert "table 1: 3 rows x 2 columns; header: Region | Revenue" in results[4].content

    doc = Document(str(user_data(home, "t-docx") / "outputs" / "q3.docx"))
    headings = [(p.style.name, p.text) for p in doc.paragraphs if p.style.name.startswith(("Title", "Heading"))]
    assert headings == [("Title", "Q3 sales report"), ("Heading 1", "Regions"), ("Heading 1", "Next steps")]
    summary = next(p for p in doc.paragraphs if p.text.startswith("Revenue grew"))
    assert [(r.text, bool(r.bold)) for r in summary.runs] == [
        ("Revenue grew ", False),
        ("12%", True),
        (" to 475 EUR.", False),
    ]
    assert [[c.text for c in row.cells] for row in doc.tables[0].rows] == [
        ["Region", "Revenue"],
        ["South", "325"],
        ["North", "150"],
    ]
    assert [p.text for p in doc.paragraphs if p.style.name == "List Bullet"] == ["South leads", "East has no data"]
    assert len(doc.inline_shapes) == 1
    assert doc.core_properties.title == "Q3 sales report"


async def test_spreadsheet_has_formulas_totals_and_a_chart(home: Path) -> None:
    spec = (
        '{"sheets": [{"name": "Sales", "columns": ["Region", "Q1", "Q2"],'
        ' "rows": [["North", 100, "120"], ["South", 250, 75], ["East", "1,000", 5]],'
        ' "formulas": {"Total": "=B{row}+C{row}"}, "totals": "SUM",'
        ' "chart": {"type": "bar", "title": "Revenue by region", "x": "Region", "y": ["Q1", "Q9"]}}]}'
    )
    results, _ = await build_fix_check(
        home,
        "t-xlsx",
        "/spreadsheet an Excel file of the sales with totals and a chart",
        source=f"{WS}/sheet.json",
        content=spec,
        build=f"python3 {PUBLIC}/spreadsheet/scripts/make_xlsx.py {WS}/sheet.json {OUT}/sales.xlsx",
        error="no column 'Q9'; the columns are: Region, Q1, Q2, Total",
        fix=call("str_replace", path=f"{WS}/sheet.json", old='"Q9"', new='"Q2"'),
        check=f"python3 {PUBLIC}/spreadsheet/scripts/check_xlsx.py {OUT}/sales.xlsx",
    )
    check = results[4].content
    assert "D4: =B4+C4 = 1005" in check and "B5: =SUM(B2:B4) = 1350" in check and "D5: =SUM(D2:D4) = 1550" in check
    assert "chart: barChart 'Revenue by region', 2 series" in check

    wb = load_workbook(str(user_data(home, "t-xlsx") / "outputs" / "sales.xlsx"))
    ws = wb["Sales"]
    assert [c.value for c in ws[1]] == ["Region", "Q1", "Q2", "Total"]
    assert [c.value for c in ws[4]] == ["East", 1000, 5, "=B4+C4"]  # "1,000" stored as a number
    assert [c.value for c in ws[5]] == ["Total", "=SUM(B2:B4)", "=SUM(C2:C4)", "=SUM(D2:D4)"]
    assert ws.freeze_panes == "A2" and ws["A1"].font.b
    (chart,) = ws._charts
    assert chart.tagname == "barChart" and len(chart.series) == 2
    assert [s.val.numRef.f for s in chart.series] == [
        "'Sales'!$B$2:$B$4",
        "'Sales'!$C$2:$C$4",
    ]  # data rows, not the totals
    categories = chart.series[0].cat
    assert (categories.numRef or categories.strRef).f == "'Sales'!$A$2:$A$4"


async def test_spreadsheet_from_an_uploaded_csv_keeps_its_formulas_as_text(home: Path) -> None:
    uploads = user_data(home, "t-csv") / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "orders.csv").write_text(
        'item,qty\nbolts,40\n"=HYPERLINK(""http://evil.example"",""click"")",2\nnuts,8\n'
    )
    spec = f'{{"sheets": [{{"name": "Orders", "csv": "{UP}/orders.csv", "totals": "SUM", "chart": {{"type": "pie", "x": "item", "y": ["qty"]}}}}]}}'
    steps = [
        call("write_file", path=f"{WS}/sheet.json", content=spec),
        bash(f"python3 {PUBLIC}/spreadsheet/scripts/make_xlsx.py {WS}/sheet.json {OUT}/orders.xlsx"),
        bash(f"python3 {PUBLIC}/spreadsheet/scripts/check_xlsx.py {OUT}/orders.xlsx"),
    ]
    results, _ = await run_steps(home, "t-csv", "/spreadsheet a workbook of orders.csv with a total", steps)
    assert all_succeeded(results), results
    assert "B5: =SUM(B2:B4) = 50" in results[2].content and "1 formulas" in results[2].content
    ws = load_workbook(str(user_data(home, "t-csv") / "outputs" / "orders.xlsx"))["Orders"]
    assert (
        ws["A3"].value == '=HYPERLINK("http://evil.example","click")' and ws["A3"].data_type == "s"
    )  # text, never run
    assert [ws["B2"].value, ws["B5"].value] == [40, "=SUM(B2:B4)"] and ws["B5"].data_type == "f"
    assert ws._charts[0].tagname == "pieChart"


def test_markdown_blocks_reads_lists_tables_and_inline_styles(tmp_path: Path) -> None:
    blocks = script_module("word-document", "markdown_blocks")
    title, parsed = blocks.parse(
        "# Plan\n\nFirst line\nsecond line with **bold** and `code`.\n\n### Detail\n"
        "- a\n  - a1\n1. one\n2. two\n\n| k | v |\n|:--|--:|\n| x | 1 |\n",
        tmp_path / "plan.md",
    )
    assert title == "Plan"
    assert [(b.kind, b.text, b.level) for b in parsed[:2]] == [
        ("paragraph", "First line second line with **bold** and `code`.", 0),
        ("heading", "Detail", 2),
    ]
    assert blocks.runs(parsed[0].text) == [
        ("First line second line with ", ""),
        ("bold", "bold"),
        (" and ", ""),
        ("code", "code"),
        (".", ""),
    ]
    assert [(b.ordered, b.items) for b in parsed[2:4]] == [
        (False, [(0, "a"), (1, "a1")]),
        (True, [(0, "one"), (0, "two")]),
    ]
    assert parsed[4].rows == [["k", "v"], ["x", "1"]]
    with pytest.raises(SystemExit, match="line 2: the image missing.png does not exist"):
        blocks.parse("# T\n![chart](missing.png)\n", tmp_path / "t.md")


def test_pdf_report_carries_an_equal_copy_of_the_markdown_reader() -> None:
    """Each skill stands alone (it can be exported, installed or mounted without the other):
    pdf-report keeps its own copy of word-document's reader, byte for byte the same."""
    ours, theirs = (
        SKILLS / "public" / name / "scripts" / "markdown_blocks.py" for name in ("pdf-report", "word-document")
    )
    assert ours.read_bytes() == theirs.read_bytes(), (
        "copy word-document/scripts/markdown_blocks.py to pdf-report/scripts/"
    )


def test_no_public_skill_reaches_into_another_skills_folder() -> None:
    names = [p.name for p in (SKILLS / "public").iterdir() if (p / "SKILL.md").is_file()]
    assert "pdf-report" in names
    for folder in (SKILLS / "public").iterdir():
        for file in folder.rglob("*.py"):
            text = file.read_text(encoding="utf-8")
            assert "parents[2]" not in text and "../../" not in text, file
            for other in set(names) - {folder.name}:
                assert f'"{other}" / "scripts"' not in text and f"/{other}/scripts" not in text, (file, other)


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(), reason="no system python3 (the jail's) here")
def test_pdf_report_builds_a_pdf_from_its_own_folder_alone(tmp_path: Path) -> None:
    import shutil
    import subprocess

    alone = shutil.copytree(SKILLS / "public" / "pdf-report", tmp_path / "pdf-report")  # no word-document beside it
    (tmp_path / "r.md").write_text(
        "# Alone\n\nText with **bold**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", encoding="utf-8"
    )
    done = subprocess.run(["/usr/bin/python3", str(alone / "scripts" / "make_pdf.py"), str(tmp_path / "r.md"), str(tmp_path / "r.pdf")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    if "No module named 'reportlab'" in done.stderr:
        pytest.skip("the system python3 has no reportlab (python3-reportlab)")
    assert done.returncode == 0, done.stderr
    assert "Alone" in PdfReader(str(tmp_path / "r.pdf")).pages[0].extract_text()


async def test_pdf_report_has_pages_text_a_table_and_an_image(home: Path) -> None:
    upload_png(home, "t-pdf", "chart.png")
    findings = "".join(
        f"Finding {n}: the South region kept its lead in week {n}, with steady margins.\n\n" for n in range(1, 41)
    )
    report = (
        "# Q3 sales report\n\nRevenue grew **12%** to 475 EUR; South leads.\n\n## Regions\n\n"
        "| Region | Revenue (EUR) |\n|---|---|\n| South | 325 |\n| North | 150 |\n\n"
        f"![Revenue by region]({UP}/chart.png)\n\n## Weekly findings\n\n{findings}"
    )
    steps = [
        call("write_file", path=f"{WS}/report.md", content=report),
        bash(f"python3 {PUBLIC}/pdf-report/scripts/make_pdf.py {WS}/report.md {OUT}/q3.pdf --author 'Sales team'"),
        bash(f"python3 {PUBLIC}/pdf-report/scripts/check_pdf.py {OUT}/q3.pdf"),
    ]
    results, _ = await run_steps(home, "t-pdf", "/pdf-report a PDF of the Q3 sales", steps)
    assert all_succeeded(results), results
    assert results[2].content.strip().endswith("OK")

    reader = PdfReader(str(user_data(home, "t-pdf") / "outputs" / "q3.pdf"))
    pages = len(reader.pages)
    assert pages > 1 and f"wrote {OUT}/q3.pdf: {pages} page(s)" in results[1].content
    assert f"q3.pdf: {pages} page(s), 210 x 297 mm, title 'Q3 sales report'" in results[2].content
    assert reader.metadata.title == "Q3 sales report" and reader.metadata.author == "Sales team"
    first = " ".join(reader.pages[0].extract_text().split())
    assert "Q3 sales report" in first and "Revenue grew 12% to 475 EUR" in first
    assert "Region Revenue (EUR) South 325 North 150" in first  # the table, row by row
    text = " ".join(" ".join(p.extract_text().split()) for p in reader.pages)
    assert "Finding 40: the South region kept its lead in week 40" in text and f"Page {pages}" in text
    xobjects = reader.pages[0]["/Resources"]["/XObject"]
    assert [x.get_object()["/Subtype"] for x in xobjects.values()] == ["/Image"]
    image = next(iter(xobjects.values())).get_object()
    assert (image["/Width"], image["/Height"]) == (640, 400)


async def test_letter_or_email_writes_an_eml_and_a_docx_from_notes(home: Path) -> None:
    parts = (
        '{"from": {"name": "Ana Silva", "address": ["1 Main St", "Lisbon"], "email": "ana@example.org"},'
        ' "to": {"name": "Mr Jones", "address": ["Acme Ltd", "Leeds"], "email": "jones@example.org"},'
        ' "date": "2 December 2026", "subject": "Late delivery of order 1234", "greeting": "Dear Mr Jones,",'
        ' "paragraphs": ["Order 1234 arrived on 30 November, two weeks after the agreed 16 November.",'
        ' "Please refund the express shipping fee of 25 EUR by 15 December."],'
        ' "closing": "Kind regards,", "signature": "Ana Silva"}'
    )
    scripts = f"{PUBLIC}/letter-or-email/scripts"
    steps = [
        call("write_file", path=f"{WS}/letter.json", content=parts),
        bash(f"python3 {scripts}/make_letter.py {WS}/letter.json {OUT}/complaint.eml"),
        bash(f"python3 {scripts}/check_letter.py {OUT}/complaint.eml"),
        bash(f"python3 {scripts}/make_letter.py {WS}/letter.json {OUT}/complaint.docx"),
        bash(f"python3 {scripts}/check_letter.py {OUT}/complaint.docx"),
    ]
    results, _ = await run_steps(home, "t-letter", "/letter-or-email complain to Acme about the late order 1234", steps)
    assert all_succeeded(results), results
    assert results[2].content.strip().endswith("OK") and results[4].content.strip().endswith("OK")

    outputs = user_data(home, "t-letter") / "outputs"
    message = email.message_from_bytes((outputs / "complaint.eml").read_bytes(), policy=policy.default)
    assert message["From"] == "Ana Silva <ana@example.org>" and message["To"] == "Mr Jones <jones@example.org>"
    assert message["Subject"] == "Late delivery of order 1234" and message["Date"]
    body = message.get_body(preferencelist=("plain",)).get_content()
    assert body.startswith("Dear Mr Jones,\n\nOrder 1234 arrived") and body.rstrip().endswith(
        "Kind regards,\nAna Silva"
    )
    letter = [p.text for p in Document(str(outputs / "complaint.docx")).paragraphs]
    assert letter[:4] == ["Ana Silva", "1 Main St", "Lisbon", "2 December 2026"]
    assert "Subject: Late delivery of order 1234" in letter and letter[-1] == "Ana Silva"


def test_letter_checker_names_placeholders_and_a_missing_greeting(tmp_path: Path) -> None:
    module = script_module("letter-or-email", "check_letter")
    draft = tmp_path / "draft.md"
    draft.write_text(
        "Re: the meeting\n\nThe meeting moves to [Date] in room TODO; please bring the reports of the last quarter, printed.\n\nBest regards,\nAna\n"
    )
    assert module.check(draft)[1] == [
        "no greeting line (such as 'Dear Ms Smith,'); add one",
        "placeholder text 'TODO' is left in; replace it with the real content",
        "placeholder text '[Date]' is left in; replace it with the real content",
    ]
    draft.write_text(
        "Dear team,\n\nThe meeting moves to 3 May in room 4; please bring the reports of the last quarter, printed.\n\nBest regards,\nAna\n"
    )
    assert module.check(draft)[1] == []
