"""Skills proposed from runs that worked (issue 34, item 4): what a proposal is made of.

A run's successful commands and scripts become a skill whose parameters are the request's values;
the generated script is run for real with other values; secrets never reach a proposal; a draft
that names a path outside the virtual folders is not kept, and an edit that adds one is refused
at accept; accepted skills install as the user's own and show in their catalog only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from herdsman.skills.catalog import load_skills
from herdsman.skills.learning.draft import draft_skill
from herdsman.skills.learning.generalize import shell_text
from herdsman.skills.learning.store import ProposalError, ProposalNotFoundError, ProposalStore
from herdsman.skills.learning.trace import read_trace
from herdsman.skills.learning.values import parameters
from herdsman.skills.parse import parse_skill_text
from tests.skills.learning_support import CSV_CALLS, CSV_REQUEST, turn

SECRET = "sk-proj-abcdefghijklmnop1234567890"
SKILL_SECRET = "tok-4471-private-value"


def _store(tmp_path: Path) -> ProposalStore:
    skills = tmp_path / "skills"
    (skills / "public").mkdir(parents=True)
    return ProposalStore(tmp_path / "proposals", skills, max_pending=3)


def test_a_csv_run_becomes_a_skill_whose_script_takes_the_values_as_options(tmp_path: Path) -> None:
    trace = read_trace(turn(CSV_REQUEST, CSV_CALLS))
    assert trace is not None
    assert [s.command for s in trace.steps] == ["python3 /mnt/user-data/workspace/summarize.py"]  # head only looked
    draft = draft_skill(trace, lambda n: f"/mnt/skills/users/ana/{n}", {})
    assert draft is not None
    assert [(p.name, p.value) for p in draft.parameters] == [
        ("input", "/mnt/user-data/uploads/sales.csv"),
        ("column", "amount"),
        ("output", "/mnt/user-data/outputs/summary.json"),
    ]
    skill = parse_skill_text(draft.skill_md, file="SKILL.md", directory=tmp_path / draft.name)
    assert skill.name == draft.name == "summarize-column-json"
    assert skill.outputs == ("**/*.json",) and skill.examples == (CSV_REQUEST,)
    command = f'python3 /mnt/skills/users/ana/{draft.name}/scripts/summarize.py --input "${{INPUT}}" --column "${{COLUMN}}" --output "${{OUTPUT}}"'
    assert command in skill.body and "INPUT=/mnt/user-data/uploads/sales.csv" in skill.body
    script = draft.files["scripts/summarize.py"]
    assert "open('/mnt" not in script and "r['amount']" not in script and "SKILL_ARGS.output" in script

    # the generalized script does the same work on another file, column and output
    (tmp_path / "costs.csv").write_text("item,price\na,2.5\nb,4\n", encoding="utf-8")
    (tmp_path / "summarize.py").write_text(script, encoding="utf-8")
    out = tmp_path / "costs.json"
    done = subprocess.run(
        [
            sys.executable,
            str(tmp_path / "summarize.py"),
            "--input",
            str(tmp_path / "costs.csv"),
            "--column",
            "price",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"rows": 2, "total": 6.5}
    missing = subprocess.run(
        [sys.executable, str(tmp_path / "summarize.py")], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "--input" in missing.stderr  # a value left out fails loudly


def test_shell_commands_get_variables_quoted_for_where_the_value_stands() -> None:
    request = "Keep the ERROR lines of /mnt/user-data/uploads/app.log where the third field is above 20"
    commands = ["grep ERROR /mnt/user-data/uploads/app.log | awk '$3 > 20' > /mnt/user-data/outputs/errors.txt"]
    params = parameters(request, commands, [])
    assert [(p.name, p.value, p.kind) for p in params] == [
        ("value", "ERROR", "text"),
        ("input", "/mnt/user-data/uploads/app.log", "path"),
        ("field", "20", "number"),
    ]
    text, used = shell_text(commands[0], params)
    assert text == ('grep "${VALUE}" "${INPUT}" | awk \'$3 > \'"${FIELD}"\'\' > /mnt/user-data/outputs/errors.txt')
    assert used == params
    lines = subprocess.run(
        ["bash", "-c", f"VALUE=WARN; INPUT=/dev/stdin; FIELD=5; {text.split(' > /mnt')[0]}"],
        input="WARN a 9\nWARN b 2\nERROR c 50\n",
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert lines == "WARN a 9\n"


def test_a_python_program_in_a_here_document_takes_the_new_values(tmp_path: Path) -> None:
    """The embedded model's usual shape, ``python3 - <<'EOF'`` (a quoted here-document, whose body
    the shell never expands): the program gets ``--name`` options, the word inside a regular
    expression's literal included, and counts the new word in the new file."""
    request = (
        "Count how many times the word 'lamp' appears in /mnt/user-data/uploads/story1.txt, ignoring "
        "case, and write the number to /mnt/user-data/outputs/count1.txt"
    )
    command = (
        "python3 - <<'HERDSMAN_PROGRAM'\nimport re\n"
        "with open('/mnt/user-data/uploads/story1.txt') as f:\n    text = f.read().lower()\n"
        "count = len(re.findall(r'\\blamp\\b', text))\n"
        "with open('/mnt/user-data/outputs/count1.txt', 'w') as f:\n    f.write(str(count))\n"
        "HERDSMAN_PROGRAM"
    )
    params = parameters(request, [command], [])
    text, used = shell_text(command, params)
    assert {p.name for p in used} >= {"input", "output"} and "blamp" not in text
    story, out = tmp_path / "story2.txt", tmp_path / "count2.txt"
    story.write_text("River lamp river.\nriverside RIVER\n")
    values = {p.variable: p.value for p in params} | {"INPUT": str(story), "OUTPUT": str(out)}
    word = next(p.variable for p in used if p.value == "lamp")
    values[word] = "river"
    assigned = "".join(f"{k}={json.dumps(v)}\n" for k, v in values.items())
    done = subprocess.run(["bash", "-c", assigned + text], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "3"  # "riverside" is no word "river"


def test_a_here_document_program_is_saved_as_the_skills_script_and_its_block_runs_with_new_values(
    tmp_path: Path,
) -> None:
    """The skill's step is one short command (the model only fills values): the program a run fed to
    ``python3 -`` is the skill's ``scripts/program.py``; two values listed after one word get that
    word's name (``columns 'name' and 'age'``: COLUMNS, COLUMNS_2); a word of the program's
    comments (``number``) is no parameter."""
    request = (
        "Convert the JSON records in /mnt/user-data/uploads/people1.json to CSV with the columns 'name' "
        "and 'age' (a header row first) in /mnt/user-data/outputs/people1.csv"
    )
    program = (
        "import json, csv\n# write the number of rows with a header\n"
        "with open('/mnt/user-data/uploads/people1.json') as f:\n    data = json.load(f)\n"
        "with open('/mnt/user-data/outputs/people1.csv', 'w', newline='') as f:\n"
        "    w = csv.writer(f)\n    w.writerow(['name', 'age'])\n"
        "    for item in data:\n        w.writerow([item['name'], item['age']])\n"
    )
    trace = read_trace(turn(request, [("bash", {"command": f"python3 - <<'EOF'\n{program}EOF"}, 0)]))
    assert trace is not None
    folder = tmp_path / "skill"
    draft = draft_skill(trace, lambda n: str(folder), {})
    assert draft is not None
    assert [(p.variable, p.value) for p in draft.parameters] == [
        ("INPUT", "/mnt/user-data/uploads/people1.json"),
        ("COLUMNS", "name"),
        ("COLUMNS_2", "age"),
        ("OUTPUT", "/mnt/user-data/outputs/people1.csv"),
    ]
    block = draft.skill_md.split("```bash\n")[1].split("```")[0]
    assert "<<" not in block and "import json" not in block  # the program is in the script only
    assert f"python3 {folder}/scripts/program.py " in block
    for rel, text in draft.files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    (tmp_path / "people2.json").write_text(json.dumps([{"name": "Li", "city": "Xi'an", "age": 3}]))
    out = tmp_path / "people2.csv"
    values = {"INPUT": tmp_path / "people2.json", "COLUMNS": "city", "COLUMNS_2": "name", "OUTPUT": out}
    lines = [
        f"{k}={json.dumps(str(values[k]))}" if k in values else line
        for line in block.splitlines()
        for k in [line.split("=")[0]]
    ]
    done = subprocess.run(["bash", "-c", "\n".join(lines)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == ["city,name", "Xi'an,Li"]


def test_an_unquoted_here_document_the_shell_expanded_is_not_saved_as_a_script() -> None:
    """Python read ``$HOME`` already expanded from ``<<EOF``: the body is not what ran, so it stays
    in the command; a quoted one, or an unquoted one with nothing to expand, is saved."""
    request = "Write the word lamp to /mnt/user-data/outputs/w.txt"
    saved: list[str] = []

    def save(text: str) -> str:
        saved.append(text)
        return "/mnt/skills/users/ana/w/scripts/program.py"

    expanded = "python3 - <<EOF\nprint('$HOME lamp', file=open('/mnt/user-data/outputs/w.txt', 'w'))\nEOF"
    params = parameters(request, [expanded], [])
    text, _ = shell_text(expanded, params, save)
    assert saved == [] and "<<EOF" in text
    plain = "python3 - <<EOF\nprint('lamp', file=open('/mnt/user-data/outputs/w.txt', 'w'))\nEOF"
    text, _ = shell_text(plain, parameters(request, [plain], []), save)
    assert len(saved) == 1 and text.startswith("python3 /mnt/skills/users/ana/w/scripts/program.py --")


def test_here_documents_are_split_as_bash_reads_them() -> None:
    """Red-team cases: a body line ``EOF `` (a trailing space) does not end a here-document, so
    what follows it stays Python, not shell; a ``cat`` here-document on the ``python3 -`` line is
    no program; ``python3`` in the request is not put into the command; a value after the word
    "path" is no ``PATH=`` that would break the block."""
    saved: list[str] = []

    def save(text: str) -> str:
        saved.append(text)
        return f"/mnt/skills/users/ana/x/scripts/program_{len(saved)}.py"

    request = "Use python3 to write lamp to /mnt/user-data/outputs/w.txt"
    body = "EOF = rm = rf = 1\nprint('lamp', file=open('/mnt/user-data/outputs/w.txt', 'w'))\nEOF \nrm -rf\n"
    command = f"python3 - <<'EOF'\n{body}EOF\necho done"
    text, _ = shell_text(command, parameters(request, [command], []), save)
    run, after = text.splitlines()
    assert run.startswith("python3 /mnt/skills/users/ana/x/scripts/program_1.py --") and after == "echo done"
    assert '--output "${OUTPUT}"' in run and "python3" not in run[len("python3") :]
    assert "EOF \nrm -rf\n" in saved[0]  # the whole body, as Python read it
    mixed = "cat <<'A' > /mnt/user-data/outputs/w.txt && python3 - <<'B'\nlamp\nA\nprint(1)\nB"
    text, _ = shell_text(mixed, parameters(request, [mixed], []), save)
    assert len(saved) == 1 and "lamp\nA\n" in text  # cat's data stays where it was
    params = parameters("Replace the path 'old' with 'new' in /mnt/user-data/uploads/a.txt", ["sed s/old/new/"], [])
    assert [p.variable for p in params] == ["PATH_VALUE", "PATH_VALUE_2"]


def test_an_unquoted_here_document_gets_the_variable_and_a_quoted_one_is_kept() -> None:
    request = "Write the word lamp to /mnt/user-data/outputs/w.txt"
    params = parameters(request, ["cat > /mnt/user-data/outputs/w.txt <<EOF\nlamp\nEOF"], [])
    text, _ = shell_text("cat > /mnt/user-data/outputs/w.txt <<EOF\n'lamp'\nEOF\necho lamp", params)
    assert text.splitlines()[1] == "'${" + next(p.variable for p in params if p.value == "lamp") + "}'"
    kept, _ = shell_text("cat > /mnt/user-data/outputs/w.txt <<'EOF'\nlamp\nEOF", params)
    assert kept.splitlines()[1] == "lamp"
    here_string, _ = shell_text('cat <<< "x"\necho lamp\nx', params)  # <<< is no here-document
    assert here_string.splitlines()[1] == 'echo "${' + next(p.variable for p in params if p.value == "lamp") + '}"'


def test_nothing_is_proposed_from_a_run_whose_work_only_looked_or_failed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    looked = read_trace(
        turn("What is in sales.csv?", [("bash", {"command": "cat /mnt/user-data/uploads/sales.csv"}, 0)])
    )
    failed = read_trace(
        turn(CSV_REQUEST, [*CSV_CALLS[:2], ("bash", {"command": "python3 /mnt/user-data/workspace/summarize.py"}, 1)])
    )
    assert looked is not None and failed is not None
    assert store.propose("ana", looked, {}) is None and store.propose("ana", failed, {}) is None
    assert store.list("ana") == []


def test_secrets_never_reach_a_proposal(tmp_path: Path) -> None:
    store = _store(tmp_path)
    calls = [
        (
            "bash",
            {"command": f"export OPENAI_API_KEY={SECRET} && python3 -c 'print(1)' > /mnt/user-data/outputs/one.txt"},
            0,
        ),
        (
            "bash",
            {"command": f"curl -s -H 'X-Token: {SKILL_SECRET}' https://example.com/r > /mnt/user-data/outputs/r.json"},
            0,
        ),
        (
            "write_file",
            {"path": "/mnt/user-data/workspace/call.py", "content": f"api_key = '{SECRET}'\nprint(api_key[:2])\n"},
            0,
        ),
        ("bash", {"command": "python3 /mnt/user-data/workspace/call.py"}, 0),
    ]
    trace = read_trace(turn(f"Fetch the report with token {SKILL_SECRET} into r.json", calls))
    assert trace is not None
    proposal = store.propose("ana", trace, {"REPORT_TOKEN": SKILL_SECRET})
    assert proposal is not None
    everything = json.dumps(proposal.summary()) + json.dumps(proposal.files())
    kept = "".join(p.read_text() for p in (tmp_path / "proposals").rglob("*") if p.is_file())
    for secret in (SECRET, SKILL_SECRET):
        assert secret not in everything and secret not in kept
    assert set(proposal.env) == {"OPENAI_API_KEY", "REPORT_TOKEN", "API_KEY"}
    skill = parse_skill_text(proposal.files()["SKILL.md"], file="SKILL.md", directory=tmp_path / proposal.name)
    assert set(skill.env) == set(proposal.env)  # the user sets them as the skill's secrets
    assert any("reaches the network" in note for note in proposal.review)


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("cat /etc/passwd > /mnt/user-data/outputs/p.txt", "/etc/passwd"),
        ("cp /mnt/user-data/uploads/../../../etc/shadow /mnt/user-data/outputs/s", "'..'"),
        ("cat ../../secret.txt > /mnt/user-data/outputs/s.txt", "'..'"),
        ("cat /mnt/skills/users/bo/bo-report/SKILL.md > /mnt/user-data/outputs/b.md", "/mnt/skills/users/bo"),
        ("cp /root/.ssh/id_rsa /mnt/user-data/outputs/k", "/root/.ssh/id_rsa"),
    ],
)
def test_a_draft_naming_a_path_outside_the_virtual_folders_is_not_kept(tmp_path: Path, command: str, why: str) -> None:
    store = _store(tmp_path)
    trace = read_trace(turn("Copy the file for me", [("bash", {"command": command}, 0)]))
    assert trace is not None and trace.steps
    assert store.propose("ana", trace, {}) is None
    assert store.list("ana") == [] and not any((tmp_path / "skills").rglob("SKILL.md"))


def test_accept_installs_the_users_own_skill_and_decline_forgets(tmp_path: Path) -> None:
    store = _store(tmp_path)
    trace = read_trace(turn(CSV_REQUEST, CSV_CALLS))
    assert trace is not None
    first = store.propose("ana", trace, {}, thread_id="t-1")
    second = store.propose("ana", trace, {}, thread_id="t-2")
    assert first is not None and second is not None and second.name == f"{first.name}-2"
    assert [p.name for p in store.list("ana")] == [second.name, first.name] or {p.name for p in store.list("ana")} == {
        first.name,
        second.name,
    }
    assert (
        store.list("bo") == [] and load_skills(store.skills_root, user="ana").all_skills == []
    )  # nothing installed yet
    with pytest.raises(ProposalNotFoundError):
        store.accept("bo", first.name)

    installed = store.accept("ana", first.name)
    assert (
        installed.skill.owner == "ana" and installed.skill.directory == store.skills_root / "users" / "ana" / first.name
    )
    assert [s.name for s in load_skills(store.skills_root, user="ana").skills.values()] == [first.name]
    assert (
        load_skills(store.skills_root, user="bo").all_skills == [] and load_skills(store.skills_root).all_skills == []
    )
    assert (installed.skill.directory / "scripts" / "summarize.py").is_file()
    with pytest.raises(ProposalNotFoundError):
        store.accept("ana", first.name)  # once

    store.decline("ana", second.name)
    assert store.list("ana") == []
    with pytest.raises(ProposalNotFoundError):
        store.decline("ana", second.name)


def test_an_edited_proposal_is_checked_again_and_a_rename_moves_its_script_paths(tmp_path: Path) -> None:
    store = _store(tmp_path)
    trace = read_trace(turn(CSV_REQUEST, CSV_CALLS))
    assert trace is not None
    proposal = store.propose("ana", trace, {})
    assert proposal is not None
    text = proposal.files()["SKILL.md"]
    hostile = text.replace("set -e", "set -e\ncat /root/.bashrc >> /mnt/user-data/outputs/x")
    with pytest.raises(ProposalError, match="/root/.bashrc"):
        store.accept("ana", proposal.name, hostile)
    with pytest.raises(ValueError, match="name"):
        store.accept("ana", proposal.name, text.replace(f"name: {proposal.name}", "name: Bad Name"))
    assert store.get("ana", proposal.name) and load_skills(store.skills_root, user="ana").all_skills == []

    edited = text.replace(f"name: {proposal.name}", "name: csv-column-sum")
    installed = store.accept("ana", proposal.name, edited)
    body = installed.skill.body
    assert (
        installed.skill.name == "csv-column-sum" and "/mnt/skills/users/ana/csv-column-sum/scripts/summarize.py" in body
    )
    assert proposal.name not in body.split("## Steps")[1]


def test_the_oldest_proposals_go_past_max_pending(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for n in range(5):
        trace = read_trace(
            turn(f"Write file{n}.txt", [("bash", {"command": f"echo {n} > /mnt/user-data/outputs/file{n}.txt"}, 0)])
        )
        assert trace is not None and store.propose(None, trace, {}) is not None
    assert len(store.list(None)) == 3
    assert (tmp_path / "proposals" / "_local").is_dir()
