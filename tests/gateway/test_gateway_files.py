"""A thread's files over REST: the directory listing (``GET /api/threads/{id}/files``) and
uploads that stream to disk and stop at ``gateway.max_upload_bytes``."""

from __future__ import annotations

import os
import select
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from herdsman_gateway.routes import files as files_route
from herdsman_gateway.routes.uploads import STAGING_PREFIX
from tests.gateway.gateway_support import CLIENT, RunningGateway, running_gateway, serve_subprocess
from tests.services import free_port
from tests.support import make_config

GB = 1 << 30
MB = 1 << 20


def host_dirs(gateway: RunningGateway, thread_id: str) -> Path:
    """The thread's folder on the host (its user-data and the uploads' staging live there)."""
    return gateway.app.state.gateway.sandbox.acquire(thread_id).paths.user_data.parent


def staging_left(thread_folder: Path) -> list[str]:
    """What an upload left in the thread's folder besides its user data (should be nothing)."""
    return [p.name for p in thread_folder.iterdir() if p.name.startswith(STAGING_PREFIX)]


async def new_thread(http: httpx.AsyncClient) -> str:
    return (await http.post("/threads", json={})).json()["thread_id"]


@pytest.fixture
async def http(gateway: RunningGateway):
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30, headers=CLIENT) as client:
        yield client


async def test_listing_shows_workspace_outputs_and_uploads_as_a_tree(http, gateway) -> None:
    tid = await new_thread(http)
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text("/mnt/user-data/workspace/src/main.py", "print('hi')\n")
    sandbox.write_text("/mnt/user-data/outputs/report.md", "# Report\n")
    res = await http.get(f"/api/threads/{tid}/files", params={"depth": 3})
    assert res.status_code == 200, res.text
    listing = res.json()
    assert listing["path"] == "/mnt/user-data" and listing["truncated"] is False
    by_path = {e["path"]: e for e in listing["entries"]}
    for folder in ("workspace", "uploads", "outputs", "workspace/src"):
        assert by_path[f"/mnt/user-data/{folder}"]["kind"] == "dir"
    report = by_path["/mnt/user-data/outputs/report.md"]
    assert report["kind"] == "file" and report["size"] == 9 and report["name"] == "report.md"
    assert report["content_type"].startswith("text/markdown") and report["modified"]
    assert by_path["/mnt/user-data/workspace/src/main.py"]["content_type"].startswith("text/x-python")
    # depth 1 of one folder, by its short name too
    outputs = (await http.get(f"/api/threads/{tid}/files", params={"path": "outputs"})).json()
    assert [e["path"] for e in outputs["entries"]] == ["/mnt/user-data/outputs/report.md"]
    top = (await http.get(f"/api/threads/{tid}/files")).json()["entries"]
    assert sorted(e["name"] for e in top) == ["outputs", "uploads", "workspace"]


async def test_listing_refuses_escapes_and_hides_links_that_leave(http, gateway, tmp_path: Path) -> None:
    tid = await new_thread(http)
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text("/mnt/user-data/workspace/inside.txt", "ok")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("not for the page")
    workspace = sandbox.paths.workspace
    (workspace / "out").symlink_to(secret)  # a link to a host folder outside the sandbox
    (workspace / "etc").symlink_to("/etc")
    (workspace / "alias.txt").symlink_to("/mnt/user-data/workspace/inside.txt")  # a link that stays inside
    listing = (
        await http.get(f"/api/threads/{tid}/files", params={"path": "/mnt/user-data/workspace", "depth": 4})
    ).json()
    names = sorted(e["name"] for e in listing["entries"])
    assert names == ["alias.txt", "inside.txt"], names
    assert "not for the page" not in str(listing) and str(tmp_path) not in str(listing)
    for bad in ("/mnt/user-data/../../etc", "/etc", "/mnt/user-data/workspace/out", "/mnt/skills"):
        res = await http.get(f"/api/threads/{tid}/files", params={"path": bad})
        assert res.status_code == 400, (bad, res.text)
        assert "leaves the sandbox" in res.json()["detail"] or "only /mnt/user-data" in res.json()["detail"]
    missing = await http.get(f"/api/threads/{tid}/files", params={"path": "/mnt/user-data/workspace/nope"})
    assert missing.status_code == 404 and "does not exist" in missing.json()["detail"]
    a_file = await http.get(f"/api/threads/{tid}/files", params={"path": "/mnt/user-data/workspace/inside.txt"})
    assert a_file.status_code == 400 and "artifacts" in a_file.json()["detail"]
    assert (await http.get("/api/threads/no-such-thread/files")).status_code == 404


async def test_listing_is_bounded(http, gateway, monkeypatch) -> None:
    tid = await new_thread(http)
    outputs = gateway.app.state.gateway.sandbox.acquire(tid).paths.outputs
    for i in range(12):
        (outputs / f"f{i:02}.txt").write_text("x")
    monkeypatch.setattr(files_route, "MAX_ENTRIES", 10)
    listing = (await http.get(f"/api/threads/{tid}/files", params={"depth": 2})).json()
    assert listing["truncated"] is True and len(listing["entries"]) == 10
    # breadth first: the three top folders come before the files inside them
    assert {e["name"] for e in listing["entries"][:3]} == {"workspace", "uploads", "outputs"}


def test_listing_is_owned_by_the_threads_user(home, model) -> None:
    config = make_config(home, gateway={"api_keys": ["key-ana", "key-bo"]})
    with running_gateway(config, model=model) as served:
        ana = httpx.Client(base_url=served.url, headers={"x-api-key": "key-ana"})
        bo = httpx.Client(base_url=served.url, headers={"x-api-key": "key-bo"})
        tid = ana.post("/threads", json={}).json()["thread_id"]
        assert ana.get(f"/api/threads/{tid}/files").status_code == 200
        assert bo.get(f"/api/threads/{tid}/files").status_code == 404
        assert httpx.get(f"{served.url}/api/threads/{tid}/files").status_code == 401
        ana.close()
        bo.close()


async def test_openapi_describes_the_listing_and_the_limits(http) -> None:
    spec = (await http.get("/openapi.json")).json()
    listing = spec["paths"]["/api/threads/{thread_id}/files"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"thread_id", "path", "depth"}
    assert listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/FileListing")
    assert "FileEntry" in spec["components"]["schemas"]
    limits = spec["paths"]["/api/limits"]["get"]
    assert limits["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Limits")


def small_limit_gateway(home: Path, model, limit: int):
    return running_gateway(make_config(home, gateway={"max_upload_bytes": limit}), model=model)


def test_uploads_over_the_configured_limit_get_413_and_leave_nothing(home, model) -> None:
    with (
        small_limit_gateway(home, model, MB) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        assert http.get("/api/limits").json() == {"max_upload_bytes": MB, "max_upload_files": 1000}
        tid = http.post("/threads", json={}).json()["thread_id"]
        ok = http.post(f"/api/threads/{tid}/uploads", files=[("files", ("small.txt", b"x" * 1000, "text/plain"))])
        assert ok.status_code == 200, ok.text
        big = http.post(
            f"/api/threads/{tid}/uploads",
            files=[
                ("files", ("first.txt", b"a" * 1000, "text/plain")),
                ("files", ("big.bin", os.urandom(2 * MB), "application/octet-stream")),
            ],
        )
        assert big.status_code == 413
        assert "1 MB" in big.json()["detail"] and "gateway.max_upload_bytes" in big.json()["detail"]
        folder = host_dirs(served, tid)
        assert sorted(p.name for p in (folder / "user-data" / "uploads").iterdir()) == ["small.txt"]
        assert staging_left(folder) == []
        listed = http.get(f"/api/threads/{tid}/uploads").json()["files"]
        assert [f["filename"] for f in listed] == ["small.txt"]


def test_a_broken_form_is_refused_and_leaves_nothing(home, model) -> None:
    with (
        small_limit_gateway(home, model, MB) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        tid = http.post("/threads", json={}).json()["thread_id"]
        head = b'--b\r\nContent-Disposition: form-data; name="files"; filename="cut.txt"\r\n\r\npartial data'
        res = http.post(
            f"/api/threads/{tid}/uploads", content=head, headers={"content-type": "multipart/form-data; boundary=b"}
        )
        assert res.status_code == 422 and "ended early" in res.json()["detail"]
        folder = host_dirs(served, tid)
        assert list((folder / "user-data" / "uploads").iterdir()) == [] and staging_left(folder) == []


def test_an_upload_with_one_refused_file_keeps_none_of_them(home, model) -> None:
    with (
        small_limit_gateway(home, model, MB) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        tid = http.post("/threads", json={}).json()["thread_id"]
        folder = host_dirs(served, tid)
        (folder / "user-data" / "uploads" / "data").mkdir()  # e.g. made by the agent
        res = http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("first.txt", b"one", "text/plain")), ("files", ("data", b"two", "text/plain"))],
        )
        assert res.status_code == 409
        assert (
            "/mnt/user-data/uploads/data is a folder" in res.json()["detail"]
            and "nothing was kept" in res.json()["detail"]
        )
        assert [p.name for p in (folder / "user-data" / "uploads").iterdir()] == ["data"]
        assert staging_left(folder) == []


# -- a 1 GB upload against a gateway in its own process --------------------------------------


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.fixture
def served_gateway(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """``herdsman serve`` in a subprocess with the default upload limit; its URL, process and home."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("needs Linux /proc to read the gateway's peak memory")
    port = free_port()
    home = tmp_path / "home"
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "home": str(home),
                "checkpointer": {"type": "memory"},
                "gateway": {"port": port},
                "models": [
                    {"name": "scripted", "use": "herdsman.models.scripted:ScriptedChatModel", "responses": ["ok"]}
                ],
            }
        )
    )
    with serve_subprocess(config, port, tmp_path, stdout=subprocess.DEVNULL, tries=600) as served:
        yield served.url, served.proc, home


def stream_chunked_upload(url: str, path: str, total: int, chunk: int = MB) -> tuple[int, str, int]:
    """POST a multipart upload of ``total`` generated bytes with chunked encoding over a raw socket.

    Sends until the server answers (or closes), so a server that refuses early is seen early.
    Returns the status, the response text and how many bytes were sent.
    """
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.setblocking(False)
    boundary = "herdsman-test-boundary"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nTransfer-Encoding: chunked\r\nX-Herdsman-Client: 1\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n"
    ).encode()
    part_head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="huge.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    block = b"\0" * chunk  # the same block over and over: the client never holds more than it
    framed = b"%x\r\n" % chunk + block + b"\r\n"
    pending = memoryview(head + b"%x\r\n" % len(part_head) + part_head + b"\r\n")
    sent = 0
    try:
        while sent < total:
            readable, writable, _ = select.select([sock], [sock], [], 30)
            if readable:
                break  # the server answered before the body ended
            if not writable:
                raise AssertionError("the gateway neither read the body nor answered for 30 s")
            try:
                n = sock.send(pending)
            except (BrokenPipeError, ConnectionResetError):
                break
            pending = pending[n:]
            if not pending:
                pending = memoryview(framed)
                sent += chunk
        response = b""
        while b"\r\n\r\n" not in response or len(response) < response.index(b"\r\n\r\n") + 4 + _length(response):
            ready, _, _ = select.select([sock], [], [], 30)
            assert ready, f"no complete response after {sent} bytes: {response!r}"
            data = sock.recv(65536)
            if not data:
                break
            response += data
    finally:
        sock.close()
    status = int(response.split(b" ", 2)[1]) if response else 0
    return status, response.decode("utf-8", "replace"), sent


def _length(response: bytes) -> int:
    for line in response.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_a_1_gb_upload_is_refused_at_the_limit_without_buffering(served_gateway) -> None:
    url, proc, home = served_gateway
    tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
    limit = httpx.get(f"{url}/api/limits").json()["max_upload_bytes"]
    assert limit == 50 * MB  # the default
    warm = httpx.post(
        f"{url}/api/threads/{tid}/uploads", files=[("files", ("warm.txt", b"warm up", "text/plain"))], headers=CLIENT
    )
    assert warm.status_code == 200, warm.text
    Path(f"/proc/{proc.pid}/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current size
    before = _status_kb(proc.pid, "VmHWM")
    status, text, sent = stream_chunked_upload(url, f"/api/threads/{tid}/uploads", GB)
    assert status == 413, text
    assert "50 MB" in text and "nothing was kept" in text
    assert sent < GB // 4, f"the gateway let the client send {sent} bytes before refusing"
    grown_mb = (_status_kb(proc.pid, "VmHWM") - before) / 1024
    # It read 50 MB before refusing: a gateway holding them in memory would have grown at least that much.
    assert grown_mb < 25, f"the gateway's peak memory grew by {grown_mb:.0f} MB during the upload"
    folder = home / "threads" / tid
    assert [p.name for p in (folder / "user-data" / "uploads").iterdir()] == ["warm.txt"]
    assert staging_left(folder) == []
    assert httpx.get(f"{url}/api/health").status_code == 200


async def test_outputs_download_as_one_zip_without_links_or_escapes(http, gateway, tmp_path: Path, monkeypatch) -> None:
    """ "Download all": the outputs as a zip, nested folders kept; links (out of the sandbox or not)
    are left out, paths outside /mnt/user-data are refused, and a folder too big gets 413."""
    import io
    import zipfile

    from herdsman_gateway.routes import archive as archive_route

    tid = await new_thread(http)
    sandbox = gateway.app.state.gateway.sandbox.acquire(tid)
    sandbox.write_text("/mnt/user-data/outputs/report.md", "# Report\n")
    sandbox.write_text("/mnt/user-data/outputs/site/index.html", "<h1>Hi</h1>\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the archive")
    (sandbox.paths.outputs / "leak.txt").symlink_to(secret)
    (sandbox.paths.outputs / "etc").symlink_to("/etc")
    res = await http.get(f"/api/threads/{tid}/archive")
    assert res.status_code == 200, res.text
    assert (
        res.headers["content-type"] == "application/zip"
        and 'filename="outputs.zip"' in res.headers["content-disposition"]
    )
    with zipfile.ZipFile(io.BytesIO(res.content)) as z:
        assert sorted(z.namelist()) == ["report.md", "site/index.html"]
        assert z.read("site/index.html") == b"<h1>Hi</h1>\n"
    assert b"not for the archive" not in res.content
    for bad in ("/etc", "/mnt/user-data/../../etc", "/mnt/user-data/outputs/etc", "/mnt/skills"):
        refused = await http.get(f"/api/threads/{tid}/archive", params={"path": bad})
        assert refused.status_code == 400, (bad, refused.text)
    assert (await http.get(f"/api/threads/{tid}/archive", params={"path": "outputs/report.md"})).status_code == 400
    assert (await http.get(f"/api/threads/{tid}/archive", params={"path": "outputs/nope"})).status_code == 404
    assert (await http.get("/api/threads/no-such-thread/archive")).status_code == 404
    monkeypatch.setattr(archive_route, "MAX_FILES", 1)
    big = await http.get(f"/api/threads/{tid}/archive")
    assert big.status_code == 413 and "download the files one by one" in big.json()["detail"]
