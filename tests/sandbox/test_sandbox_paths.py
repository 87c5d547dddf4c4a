"""Virtual path resolution: thread ids, roots, traversal, symlinks, scrubbing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from herdsman.sandbox import InvalidThreadIdError, PathEscapeError, ThreadPaths, validate_thread_id
from herdsman.sandbox.fs import ThreadFiles
from herdsman.sandbox.paths import ReadOnlyPathError


def resolve(paths: ThreadPaths, path: str, write: bool = False) -> Path:
    """The host path behind virtual ``path``, resolved the way every host-side access does
    (``ThreadFiles.locate``: by descriptors, links read in virtual space)."""
    with ThreadFiles(paths).locate(path, write=write) as loc:
        root = loc.root
        rel = loc.vpath[len(root.virtual) :].lstrip("/")
        return root.host / rel if rel else root.host


@pytest.fixture
def paths(tmp_path: Path, skills_dir: Path) -> ThreadPaths:
    p = ThreadPaths.for_thread(tmp_path / "home", "t1", skills_dir)
    p.ensure_dirs()
    return p


@pytest.mark.parametrize("good", ["t1", "3f0c1f3e-9a4b-4c1e-8f7a-1b2c3d4e5f60", "a.b_c-d", "A" * 128])
def test_valid_thread_ids_pass(good: str) -> None:
    assert validate_thread_id(good) == good


@pytest.mark.parametrize("bad", ["", "..", ".", "../x", "a/b", "a\\b", "-x", "a b", "a\x00b", "é", "A" * 129, "~root"])
def test_unsafe_thread_ids_are_refused_with_a_clear_message(bad: str) -> None:
    with pytest.raises(InvalidThreadIdError, match="invalid thread id.*letters, digits"):
        validate_thread_id(bad)


def test_layout_is_per_thread_under_home(tmp_path: Path, paths: ThreadPaths) -> None:
    base = Path(os.path.realpath(tmp_path)) / "home" / "threads" / "t1" / "user-data"
    assert paths.workspace == base / "workspace"
    assert paths.uploads == base / "uploads"
    assert paths.outputs == base / "outputs"
    assert all(d.is_dir() for d in (paths.workspace, paths.uploads, paths.outputs))


def test_relative_paths_start_in_the_workspace(paths: ThreadPaths) -> None:
    (paths.workspace / "notes").mkdir()
    assert resolve(paths, "notes/a.md") == paths.workspace / "notes" / "a.md"
    assert resolve(paths, "./a.md") == paths.workspace / "a.md"
    assert resolve(paths, "~/a.md") == paths.workspace / "a.md"
    assert resolve(paths, "/mnt/user-data/uploads/x.csv") == paths.uploads / "x.csv"
    assert resolve(paths, "../outputs/r.md") == paths.outputs / "r.md"


@pytest.mark.parametrize(
    "escape",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "/mnt/user-data/workspace/../../..",
        "/mnt/user-data/workspace/../../../etc/shadow",
        "../../../../../../../../tmp",
        "/",
        "/mnt",
        "/tmp/x",
    ],
)
def test_paths_leaving_the_roots_are_refused(paths: ThreadPaths, escape: str) -> None:
    with pytest.raises(PathEscapeError, match="leaves the sandbox"):
        resolve(paths, escape)


def test_a_host_path_of_the_thread_itself_is_refused(paths: ThreadPaths) -> None:
    with pytest.raises(PathEscapeError):
        resolve(paths, str(paths.workspace / "a.txt"))


def test_skills_are_readable_but_not_writable(paths: ThreadPaths, skills_dir: Path) -> None:
    assert resolve(paths, "/mnt/skills/public/demo/SKILL.md").read_text().startswith("---")
    with pytest.raises(ReadOnlyPathError, match="/mnt/skills is read-only"):
        resolve(paths, "/mnt/skills/public/x.md", write=True)
    with pytest.raises(ReadOnlyPathError):
        resolve(paths, "/mnt/user-data/new.txt", write=True)


def test_no_skills_folder_means_no_skills_root(tmp_path: Path) -> None:
    p = ThreadPaths.for_thread(tmp_path / "home", "t1", tmp_path / "missing")
    with pytest.raises(PathEscapeError, match="no skills folder"):
        resolve(p, "/mnt/skills/x")


def test_symlink_to_etc_is_refused_even_as_last_component(paths: ThreadPaths) -> None:
    os.symlink("/etc", paths.workspace / "etc")
    os.symlink("/etc/passwd", paths.workspace / "pw")
    for p in ("etc", "etc/passwd", "pw"):
        with pytest.raises(PathEscapeError, match="symbolic link"):
            resolve(paths, p)


def test_symlink_to_another_threads_dir_is_refused(tmp_path: Path, paths: ThreadPaths) -> None:
    other = ThreadPaths.for_thread(tmp_path / "home", "t2")
    other.ensure_dirs()
    (other.workspace / "secret.txt").write_text("t2 secret")
    os.symlink(other.workspace, paths.workspace / "other")
    os.symlink("../../../t2/user-data/workspace/secret.txt", paths.workspace / "rel")
    for p in ("other/secret.txt", "other", "rel"):
        with pytest.raises(PathEscapeError):
            resolve(paths, p)


def test_dangling_symlink_pointing_outside_is_refused_for_writes(tmp_path: Path, paths: ThreadPaths) -> None:
    target = tmp_path / "outside" / "new.txt"
    os.symlink(target, paths.workspace / "dangling")
    with pytest.raises(PathEscapeError):
        resolve(paths, "dangling", write=True)
    with pytest.raises(PathEscapeError):
        resolve(paths, "dangling/child", write=True)


def test_symlink_loops_are_refused(paths: ThreadPaths) -> None:
    os.symlink("b", paths.workspace / "a")
    os.symlink("a", paths.workspace / "b")
    with pytest.raises(PathEscapeError, match="too many levels"):
        resolve(paths, "a")


def test_symlinks_inside_the_sandbox_follow_virtual_paths(paths: ThreadPaths) -> None:
    (paths.uploads / "data.csv").write_text("a,b\n")
    os.symlink("/mnt/user-data/uploads/data.csv", paths.workspace / "data.csv")
    os.symlink("../outputs", paths.workspace / "out")
    assert resolve(paths, "data.csv") == paths.uploads / "data.csv"
    assert resolve(paths, "out/report.md", write=True) == paths.outputs / "report.md"


def test_scrub_replaces_every_host_path_with_its_virtual_form(
    tmp_path: Path, paths: ThreadPaths, skills_dir: Path
) -> None:
    text = (
        f"cwd={paths.workspace}/src up={paths.uploads}/a out={paths.outputs} "
        f"ud={paths.user_data} skills={skills_dir}/public home={tmp_path / 'home'}/threads/t2 "
        f"mount=/some/other/root/home/threads/t1/user-data/workspace"
    )
    scrubbed = paths.scrub(text)
    assert str(tmp_path) not in scrubbed
    assert os.path.realpath(tmp_path) not in scrubbed
    assert "cwd=/mnt/user-data/workspace/src" in scrubbed
    assert "up=/mnt/user-data/uploads/a" in scrubbed
    assert "out=/mnt/user-data/outputs" in scrubbed
    assert "ud=/mnt/user-data " in scrubbed
    assert "skills=/mnt/skills/public" in scrubbed
    assert "home=<herdsman-home>/threads/t2" in scrubbed
    assert "mount=/mnt/user-data/workspace" in scrubbed


def test_to_host_text_rewrites_virtual_paths_in_commands(paths: ThreadPaths) -> None:
    cmd = "cat /mnt/user-data/uploads/a.csv > /mnt/user-data/outputs/b.csv; ls /mnt/skills"
    host = paths.to_host_text(cmd)
    assert f"cat {paths.uploads}/a.csv > {paths.outputs}/b.csv" in host
    assert host.endswith(f"ls {paths.skills}")
    assert paths.to_host_text("echo x/mnt/user-data/workspace") == "echo x/mnt/user-data/workspace"
