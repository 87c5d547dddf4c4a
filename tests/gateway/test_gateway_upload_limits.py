"""Uploads refuse, before writing anything, more files than ``gateway.max_upload_files`` (413)
and file names the filesystem would refuse (400 that says to rename), never a 500."""

from __future__ import annotations

import httpx
import pytest

from tests.gateway.gateway_support import CLIENT, running_gateway
from tests.gateway.test_gateway_files import host_dirs, staging_left
from tests.support import make_config


def _form(names: list[str]) -> tuple[bytes, str]:
    """A multipart body with one small file per name (names sent as raw UTF-8, as browsers do)."""
    parts = b"".join(
        b'--b\r\nContent-Disposition: form-data; name="files"; filename="'
        + n.encode("utf-8")
        + b'"\r\nContent-Type: text/plain\r\n\r\nx\r\n'
        for n in names
    )
    return parts + b"--b--\r\n", "multipart/form-data; boundary=b"


def test_more_files_than_the_limit_get_413_naming_it_and_keep_nothing(home, model) -> None:
    config = make_config(home, gateway={"max_upload_files": 3})
    with (
        running_gateway(config, model=model) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        assert http.get("/api/limits").json()["max_upload_files"] == 3
        tid = http.post("/threads", json={}).json()["thread_id"]
        body, ctype = _form([f"f{i}.txt" for i in range(4)])
        res = http.post(f"/api/threads/{tid}/uploads", content=body, headers={"content-type": ctype})
        assert res.status_code == 413
        assert "3 files" in res.json()["detail"] and "gateway.max_upload_files" in res.json()["detail"]
        folder = host_dirs(served, tid)
        assert list((folder / "user-data" / "uploads").iterdir()) == [] and staging_left(folder) == []
        body, ctype = _form([f"f{i}.txt" for i in range(3)])
        assert (
            http.post(f"/api/threads/{tid}/uploads", content=body, headers={"content-type": ctype}).status_code == 200
        )


@pytest.mark.parametrize(
    ("name", "says"),
    [("a" * 300 + ".txt", "too long"), ("é" * 130, "too long"), ("nul\x00.txt", "not a usable file name")],
)
def test_a_name_the_filesystem_refuses_is_a_400_that_says_to_rename(home, model, name, says) -> None:
    with (
        running_gateway(make_config(home), model=model) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        tid = http.post("/threads", json={}).json()["thread_id"]
        body, ctype = _form(["fine.txt", name])
        res = http.post(f"/api/threads/{tid}/uploads", content=body, headers={"content-type": ctype})
        assert res.status_code == 400, res.text
        assert says in res.json()["detail"] and "rename" in res.json()["detail"]
        folder = host_dirs(served, tid)
        assert list((folder / "user-data" / "uploads").iterdir()) == [] and staging_left(folder) == []
        deleted = http.delete(f"/api/threads/{tid}/uploads/{'a' * 300}")
        assert deleted.status_code == 400 and "too long" in deleted.json()["detail"]
        longest = "b" * 252
        ok = http.post(f"/api/threads/{tid}/uploads", files=[("files", (longest, b"fits", "text/plain"))])
        assert ok.status_code == 200 and ok.json()["files"][0]["filename"] == longest


def test_an_upload_past_the_threads_disk_quota_is_refused_whole(home, model) -> None:
    config = make_config(home, sandbox={"disk_quota_mb": 1})
    with (
        running_gateway(config, model=model) as served,
        httpx.Client(base_url=served.url, timeout=30, headers=CLIENT) as http,
    ):
        tid = http.post("/threads", json={}).json()["thread_id"]
        files = [("files", ("small.txt", b"x" * 1000)), ("files", ("big.bin", b"y" * 1_200_000))]
        res = http.post(f"/api/threads/{tid}/uploads", files=files)
        assert res.status_code == 413, res.text
        assert "disk quota exceeded" in res.json()["detail"] and "sandbox.disk_quota_mb" in res.json()["detail"]
        folder = host_dirs(served, tid)
        assert list((folder / "user-data" / "uploads").iterdir()) == [] and staging_left(folder) == []
        ok = http.post(f"/api/threads/{tid}/uploads", files=[("files", ("small.txt", b"x" * 1000))])
        assert ok.status_code == 200
