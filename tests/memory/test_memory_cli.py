"""``herdsman memory list / edit / delete / export / pending`` against a real SQLite memory.

The commands run in this process (:func:`tests.support.run_cli_here`: the same command code, exit
codes and output, without a new Python process whose imports cost seconds of CPU per call); the
first listing runs in a new process, so the real entry point stays covered."""

from __future__ import annotations

import json
from pathlib import Path

from herdsman.config import load_config
from herdsman.memory.backend import close_store, open_store
from herdsman.memory.facts import Fact
from herdsman.memory.store import MemoryStore
from tests.support import run_cli, run_cli_here


def seed(project: Path) -> tuple[str, str]:
    (project / "config.yaml").write_text("home: .herdsman\nmemory: {enabled: true, user_id: ann}\n")
    config = load_config(project / "config.yaml").config
    raw = open_store(config)
    store = MemoryStore(raw)
    a = store.put("ann", Fact.new("Ann writes CLI tools in Rust", "preference", 0.9, "t-1"))
    b = store.put("ann", Fact.new("Ann deploys on Fridays", "behavior", 0.6, "t-2"))
    store.put("bob", Fact.new("Bob likes Go", "preference"))
    store.set_summary("ann", "Ann maintains a Rust CLI.")
    close_store(raw)
    return a.id, b.id


def test_list_edit_delete_export(tmp_path: Path) -> None:
    rust, friday = seed(tmp_path)
    listed = run_cli("memory", "list", cwd=tmp_path)  # a new process: `python -m herdsman` itself
    assert listed.returncode == 0, listed.stderr
    assert "Ann writes CLI tools in Rust" in listed.stdout and rust in listed.stdout
    assert "context: Ann maintains a Rust CLI." in listed.stdout and "Bob" not in listed.stdout

    edited = run_cli_here("memory", "edit", friday, "--content", "Ann deploys on Thursdays", cwd=tmp_path)
    assert edited.returncode == 0 and "Ann deploys on Thursdays" in edited.stdout
    bad = run_cli_here("memory", "edit", "nope", "--confidence", "0.1", cwd=tmp_path)
    assert bad.returncode == 1 and "no fact 'nope'" in bad.stderr

    deleted = run_cli_here("memory", "delete", rust, cwd=tmp_path)
    assert deleted.returncode == 0 and "forgot 1 fact(s)" in deleted.stdout

    out = tmp_path / "memory.json"
    exported = run_cli_here("memory", "export", "--all-users", "-o", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    data = json.loads(out.read_text())
    assert [f["content"] for f in data["ann"]["facts"]] == ["Ann deploys on Thursdays"]
    assert data["ann"]["facts"][0]["source_thread"] == "t-2"
    assert [f["content"] for f in data["bob"]["facts"]] == ["Bob likes Go"]

    wiped = run_cli_here("memory", "delete", "--all", "--user", "bob", cwd=tmp_path)
    assert wiped.returncode == 0
    assert "No memory for user 'bob'" in run_cli_here("memory", "list", "-u", "bob", cwd=tmp_path).stdout
    assert "No pending memory updates" in run_cli_here("memory", "pending", cwd=tmp_path).stdout


def test_flush_runs_the_memory_model_on_pending_updates(tmp_path: Path) -> None:
    reply = json.dumps(
        {
            "facts": [
                {
                    "content": "Ann deploys with Helm charts",
                    "category": "behavior",
                    "confidence": 0.9,
                    "quote": "we deploy with Helm charts",
                }
            ]
        }
    )
    (tmp_path / "memo.yaml").write_text(yaml_list(reply))
    (tmp_path / "config.yaml").write_text(
        "home: .herdsman\n"
        "models:\n  - {name: memo, use: 'herdsman.models.scripted:ScriptedChatModel', script: memo.yaml}\n"
        "memory: {enabled: true, model: memo, user_id: ann}\n"
    )
    from herdsman.memory.backend import memory_db_path
    from herdsman.memory.queue import UpdateQueue

    queue = UpdateQueue(memory_db_path(load_config(tmp_path / "config.yaml").config))
    queue.enqueue(
        "t-9",
        "ann",
        [{"role": "user", "content": "I'm Ann; we deploy with Helm charts"}, {"role": "assistant", "content": "ok"}],
    )
    queue.close()
    assert "t-9" in run_cli_here("memory", "pending", cwd=tmp_path).stdout
    flushed = run_cli_here("memory", "flush", cwd=tmp_path)
    assert flushed.returncode == 0, flushed.stderr
    assert "wrote 1 update(s); 0 still pending" in flushed.stdout
    assert "Ann deploys with Helm charts" in run_cli_here("memory", "list", cwd=tmp_path).stdout


def yaml_list(*replies: str) -> str:
    return "".join(f"- {json.dumps(r)}\n" for r in replies)


def test_herdsman_run_writes_its_turn_to_memory_before_it_exits(tmp_path: Path) -> None:
    """The turn's update is debounced (memory.debounce_seconds: 300), yet ``herdsman run`` writes
    it before the process ends: the next run, in a new thread, already knows the fact."""
    reply = json.dumps(
        {
            "facts": [
                {
                    "content": "Ann deploys with Helm charts",
                    "category": "behavior",
                    "confidence": 0.9,
                    "quote": "we deploy with Helm charts",
                }
            ]
        }
    )
    (tmp_path / "memo.yaml").write_text(yaml_list(reply))
    (tmp_path / "lead.yaml").write_text(yaml_list("Noted.", "Use your Helm charts."))
    (tmp_path / "config.yaml").write_text(
        "home: .herdsman\ntitle: {enabled: false}\nlead: {model_retries: 0}\n"
        "models:\n"
        "  - {name: lead, use: 'herdsman.models.scripted:ScriptedChatModel', script: lead.yaml}\n"
        "  - {name: memo, use: 'herdsman.models.scripted:ScriptedChatModel', script: memo.yaml}\n"
        "memory: {enabled: true, model: memo, user_id: ann, debounce_seconds: 300}\n"
    )
    first = run_cli_here("run", "I'm Ann; we deploy with Helm charts", "--thread", "t-1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "No pending memory updates" in run_cli_here("memory", "pending", cwd=tmp_path).stdout
    assert "Ann deploys with Helm charts" in run_cli_here("memory", "list", cwd=tmp_path).stdout


def test_graph_export_off_switch_and_purge_of_one_user(tmp_path: Path) -> None:
    from herdsman.memory.audit import Origin
    from herdsman.memory.backend import memory_db_path
    from herdsman.memory.graph import GraphStore
    from herdsman.memory.graph_schema import ExtractedRelation
    from herdsman.memory.queue import UpdateQueue

    seed(tmp_path)
    config = load_config(tmp_path / "config.yaml").config
    raw = open_store(config)
    graph = GraphStore(raw)
    for user in ("ann", "bob"):
        graph.put_relation(
            user,
            ExtractedRelation(subject="Atlas", predicate="deploys_to", object="AWS"),
            Origin("updater", "t-1", "r-1"),
        )
    close_store(raw)
    queue = UpdateQueue(memory_db_path(config))
    queue.enqueue(
        "t-ann", "ann", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], delay=600
    )
    queue.enqueue(
        "t-bob", "bob", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], delay=600
    )
    queue.close()

    listed = run_cli_here("memory", "graph", cwd=tmp_path)
    assert (
        listed.returncode == 0 and "Atlas" in listed.stdout and "deploys_to" in listed.stdout and "AWS" in listed.stdout
    )
    exported = json.loads(run_cli_here("memory", "export", "--user", "ann", cwd=tmp_path).stdout)["ann"]
    assert exported["enabled"] is True
    assert [(r["subject_name"], r["predicate"], r["object_name"]) for r in exported["relations"]] == [
        ("Atlas", "deploys_to", "AWS")
    ]
    assert {e["name"] for e in exported["entities"]} == {"Atlas", "AWS"}
    assert {(a["kind"], a["thread_id"], a["run_id"]) for a in exported["audit"] if a["kind"] == "relation"} == {
        ("relation", "t-1", "r-1")
    }

    assert run_cli_here("memory", "off", "--user", "ann", cwd=tmp_path).stdout.strip() == "memory is off for 'ann'"
    assert json.loads(run_cli_here("memory", "export", "-u", "ann", cwd=tmp_path).stdout)["ann"]["enabled"] is False
    assert "Memory is off for 'ann'" in run_cli_here("memory", "list", cwd=tmp_path).stdout
    refused = run_cli_here("memory", "purge", "--user", "ann", cwd=tmp_path)  # no --yes, nothing typed: not confirmed
    assert refused.returncode == 1
    purged = run_cli_here("memory", "purge", "--user", "ann", "--yes", cwd=tmp_path)
    assert purged.returncode == 0, purged.stderr
    after = json.loads(run_cli_here("memory", "export", "-u", "ann", cwd=tmp_path).stdout)["ann"]
    assert after == {"enabled": False, "summary": "", "facts": [], "entities": [], "relations": [], "audit": []}
    pending = run_cli_here("memory", "pending", cwd=tmp_path).stdout
    assert "t-ann" not in pending and "t-bob" in pending
    bob = json.loads(run_cli_here("memory", "export", "-u", "bob", cwd=tmp_path).stdout)["bob"]
    assert bob["facts"] and bob["relations"]  # another user's memory is untouched


def test_sweep_applies_retention_from_the_cli(tmp_path: Path) -> None:
    from herdsman.memory.backend import memory_db_path
    from herdsman.memory.queue import UpdateQueue

    seed(tmp_path)
    assert "not set" in run_cli_here("memory", "sweep", cwd=tmp_path).stdout
    (tmp_path / "config.yaml").write_text(
        "home: .herdsman\nmemory: {enabled: true, user_id: ann, retention_days: {behavior: 1}}\n"
    )
    config = load_config(tmp_path / "config.yaml").config
    raw = open_store(config)
    store = MemoryStore(raw)
    old = next(f for f in store.facts("ann") if f.category == "behavior")
    raw.put(("memory", "ann", "facts"), old.id, {**old.to_value(), "updated_at": "2020-01-01T00:00:00+00:00"})
    close_store(raw)
    queue = UpdateQueue(memory_db_path(config))  # turns never learned: kept no longer than the shortest retention
    queue.enqueue("t-old", "ann", [{"role": "user", "content": "We deploy on Fridays."}], delay=3600)
    with queue._tx() as cur:
        cur.execute("UPDATE memory_pending SET created_at = 1577836800 WHERE thread_id = 't-old'")  # 2020-01-01
    queue.enqueue("t-new", "ann", [{"role": "user", "content": "Review my branch."}], delay=3600)
    queue.close()
    swept = run_cli_here("memory", "sweep", cwd=tmp_path)
    assert swept.returncode == 0 and "removed 2 item(s)" in swept.stdout
    pending = run_cli_here("memory", "pending", cwd=tmp_path).stdout
    assert "t-old" not in pending and "t-new" in pending
    listed = run_cli_here("memory", "list", cwd=tmp_path).stdout
    assert "Ann deploys on Fridays" not in listed and "Ann writes CLI tools in Rust" in listed


def test_relations_and_entities_are_ended_corrected_and_deleted_and_the_audit_read_from_the_cli(tmp_path: Path) -> None:
    """The governance REST offers, from the command line: end a relation (history), correct it (a new
    id), delete it; show and delete an entity; read the audit trail. Only the named user's graph."""
    from herdsman.memory.audit import Origin
    from herdsman.memory.graph import GraphStore
    from herdsman.memory.graph_schema import ExtractedRelation

    seed(tmp_path)
    raw = open_store(load_config(tmp_path / "config.yaml").config)
    graph = GraphStore(raw)
    deploy = graph.put_relation(
        "ann",
        ExtractedRelation(subject="Atlas", predicate="deploys_to", object="AWS", valid_from="2026-01-10"),
        Origin("updater", "t-1", "r-1"),
    )
    uses = graph.put_relation("ann", ExtractedRelation(subject="Atlas", predicate="uses", object="Redis"), Origin())
    bobs = graph.put_relation("bob", ExtractedRelation(subject="Zephyr", predicate="uses", object="Kafka"), Origin())
    close_store(raw)

    for bad, words in (
        (["--end", "soon"], "--end 'soon' is not a date"),
        (["--object", "x"], "--object must name"),
        (["--end", "2001-01-01"], "before the relation began"),
        ([], "give one of"),
        (["--delete", "--end", "2026-03-01"], "give one of"),
    ):
        res = run_cli_here("memory", "relation", deploy.id, *bad, cwd=tmp_path)
        assert res.returncode == 2 and words in res.stderr, (bad, res.stderr)
    assert run_cli_here("memory", "relation", "r-none", "--delete", cwd=tmp_path).returncode == 1
    assert run_cli_here("memory", "relation", bobs.id, "--delete", cwd=tmp_path).returncode == 1  # ann's graph only

    fixed = run_cli_here("memory", "relation", deploy.id, "--object", "Azure", cwd=tmp_path)
    assert (
        fixed.returncode == 0
        and "corrected" in fixed.stdout
        and "Atlas deploys to Azure (since 2026-01-10)" in fixed.stdout
    )
    new_id = fixed.stdout.split("[r:")[1].split("]")[0]
    ended = run_cli_here("memory", "relation", new_id, "--end", "2026-03-01", cwd=tmp_path)
    assert ended.returncode == 0 and "from 2026-01-10 until 2026-03-01" in ended.stdout
    again = run_cli_here("memory", "relation", new_id, "--end", "2026-04-01", cwd=tmp_path)
    assert again.returncode == 1 and "already ended" in again.stderr
    assert run_cli_here("memory", "relation", uses.id, "--delete", cwd=tmp_path).returncode == 0

    about = run_cli_here("memory", "entity", "atlas", cwd=tmp_path)
    assert about.returncode == 0 and "History:" in about.stdout and "Atlas deploys to Azure" in about.stdout
    assert "Redis" not in about.stdout
    assert run_cli_here("memory", "entity", "Nowhere", cwd=tmp_path).returncode == 1
    assert run_cli_here("memory", "entity", "Atlas", "--delete", cwd=tmp_path).returncode == 0
    after = json.loads(run_cli_here("memory", "export", "-u", "ann", cwd=tmp_path).stdout)["ann"]
    assert after["relations"] == [] and "Atlas" not in {e["name"] for e in after["entities"]}
    assert json.loads(run_cli_here("memory", "export", "-u", "bob", cwd=tmp_path).stdout)["bob"][
        "relations"
    ]  # untouched

    audit = run_cli_here("memory", "audit", cwd=tmp_path)
    assert audit.returncode == 0
    rows = [line for line in audit.stdout.splitlines() if deploy.id in line]
    assert any("put" in r and "updater" in r and "t-1" in r and "r-1" in r for r in rows)
    assert any("delete" in r and "cli" in r for r in rows)  # the correction replaced it
    assert "correct" in audit.stdout and "close" in audit.stdout
    assert "No audit records for user 'carl'" in run_cli_here("memory", "audit", "-u", "carl", cwd=tmp_path).stdout
