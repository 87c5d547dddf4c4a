"""Editing an existing config.yaml keeps the user's comments and keys; secrets go to a 0600 .env
that the loader reads; what the machine has is found for real (a socket, a kubeconfig)."""

from __future__ import annotations

import os
import shutil
import socketserver
import stat
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from herdsman.config import load_config
from herdsman.setup.detect import SandboxChoice, find_docker, find_kubeconfig, ping_engine
from herdsman.setup.files import SetupError, backup, dump_document, read_document, write_secrets, write_text_atomically
from herdsman.setup.plan import Answers, ChannelAnswer, ModelAnswer, apply_answers
from tests.support import REPO

USER_CONFIG = """\
# my own notes: keep these
home: .herdsman   # where things live

models:
  - name: work
    use: langchain_openai:ChatOpenAI
    model: gpt-4o
    api_key: $WORK_KEY
    temperature: 0.1    # I like it cold
lead:
  model: work
  max_steps: 77
sandbox:
  provider: local
  command_timeout_seconds: 33   # slow machine
"""


def test_editing_keeps_comments_untouched_keys_and_order(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(USER_CONFIG)
    doc = read_document(path)
    apply_answers(
        doc,
        Answers(
            model=ModelAnswer("anthropic", api_key="sk-ant"),
            memory=True,
            channels={"discord": ChannelAnswer(True, ["me"], {"DISCORD_BOT_TOKEN": "t"})},
        ),
    )
    text = dump_document(doc)
    for kept in (
        "# my own notes: keep these",
        "home: .herdsman   # where things live",
        "temperature: 0.1    # I like it cold",
        "max_steps: 77",
        "command_timeout_seconds: 33   # slow machine",
        "  - name: work",
    ):
        assert kept in text
    assert text.index("name: anthropic") < text.index("name: work")
    config = load_config_text(tmp_path, text, WORK_KEY="w", ANTHROPIC_API_KEY="a", DISCORD_BOT_TOKEN="t")
    assert config.lead_model_name() == "anthropic" and config.lead.max_steps == 77
    assert config.model_by_name("work").extra_kwargs() == {"temperature": 0.1}
    assert config.sandbox.command_timeout_seconds == 33 and config.memory.enabled


def test_the_example_config_survives_an_edit_line_for_line(tmp_path: Path) -> None:
    example = (REPO / "config.example.yaml").read_text()
    path = tmp_path / "config.yaml"
    path.write_text(example)
    doc = read_document(path)
    outcome = apply_answers(doc, Answers(sandbox=SandboxChoice("docker"), memory=True))
    changed = [(a, b) for a, b in zip(example.splitlines(), dump_document(doc).splitlines(), strict=False) if a != b]
    assert len(example.splitlines()) == len(dump_document(doc).splitlines())
    assert [b.split("#")[0].strip() for _, b in changed] == ["provider: docker", "enabled: true"]
    assert outcome.changes == ["sandbox.provider: docker", "memory.enabled: true"]


def load_config_text(folder: Path, text: str, **env: str):
    (folder / "config.yaml").write_text(text)
    return load_config(folder / "config.yaml", env=env).config


def test_secrets_go_to_a_private_env_file_the_loader_reads(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# mine\nOTHER=1\n")
    os.chmod(env_file, 0o644)
    odd = "sk-'quote\"$HOME${X}\\end"
    write_secrets(env_file, {"OPENAI_API_KEY": odd})
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert env_file.read_text().startswith("# mine\nOTHER=1\n")
    config_text = "models:\n  - {name: a, use: 'langchain_openai:ChatOpenAI', api_key: $OPENAI_API_KEY}\n"
    assert load_config_text(tmp_path, config_text).models[0].api_key == odd  # literally, no expansion
    assert load_config_text(tmp_path, config_text, OPENAI_API_KEY="from-env").models[0].api_key == "from-env"
    fresh = tmp_path / "new" / ".env"
    fresh.parent.mkdir()
    write_secrets(fresh, {"K": "v"})
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    with pytest.raises(SetupError, match="line break"):
        write_secrets(fresh, {"K": "two\nlines"})


def test_backup_keeps_every_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    assert backup(path) is None
    path.write_text("a: 1\n")
    first, second = backup(path), backup(path)
    assert first != second and first.read_text() == second.read_text() == "a: 1\n"
    assert stat.S_IMODE(first.stat().st_mode) == 0o600


def test_a_symlinked_config_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "herdsman.yaml"
    real.parent.mkdir()
    real.write_text("a: 1\n")
    os.chmod(real, 0o640)
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    write_text_atomically(link, "a: 2\n")
    assert link.is_symlink() and real.read_text() == "a: 2\n" and stat.S_IMODE(real.stat().st_mode) == 0o640


def test_a_broken_config_is_refused_before_anything_changes(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("models: [\n")
    with pytest.raises(SetupError, match="not valid YAML.*nothing was changed"):
        read_document(path)
    path.write_text("- a list\n")
    with pytest.raises(SetupError, match="top level must be a mapping"):
        read_document(path)


class _Ping(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        body = b"OK" if self.path == "/_ping" else b"no"
        self.send_response(200 if self.path == "/_ping" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _UnixHTTP(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def get_request(self):  # http.server wants a (host, port) client address
        request, _ = super().get_request()
        return request, ("local", 0)


def test_a_docker_api_engine_is_found_by_pinging_its_socket(tmp_path: Path) -> None:
    sock = tmp_path / "engine.sock"
    server = _UnixHTTP(str(sock), _Ping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert ping_engine(f"unix://{sock}") is None
        found = find_docker({"DOCKER_HOST": f"unix://{sock}"})
        assert found.available and found.where == f"unix://{sock}"
    finally:
        server.shutdown()
        server.server_close()
    assert "no socket" in ping_engine(f"unix://{tmp_path}/none.sock")
    missing = find_docker({"DOCKER_HOST": f"unix://{tmp_path}/none.sock", "XDG_RUNTIME_DIR": str(tmp_path)})
    assert not missing.available and "none.sock" in missing.detail


def test_a_kubeconfig_is_found_with_its_context(tmp_path: Path) -> None:
    assert not find_kubeconfig({}, home=tmp_path).available
    kube = tmp_path / "kube.yaml"
    kube.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\ncontexts: []\n")
    found = find_kubeconfig({"KUBECONFIG": f"{kube}{os.pathsep}/other"}, home=tmp_path)
    assert (found.available, found.where, found.context) == (True, str(kube), "prod")
    (tmp_path / ".kube").mkdir()
    shutil.copy(kube, tmp_path / ".kube" / "config")
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    assert "no current-context" in find_kubeconfig({}, home=tmp_path).detail
