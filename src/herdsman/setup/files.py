"""Read and write ``config.yaml`` and ``.env`` without losing what the user wrote.

``config.yaml`` goes through ruamel.yaml's round trip, so comments, key order and keys the wizard
does not touch stay as they were; the previous file is kept as a dated backup and the new one
replaces it atomically with the same mode. Secrets go to ``.env`` through python-dotenv's
``set_key`` (other lines kept), which is created readable by its owner only (0600).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dotenv import set_key
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from herdsman.config.loader import ENV_FILE

HEADER = (
    "Written by herdsman setup; run it again to change these answers, or edit by hand.\n"
    "Every key is documented in config.example.yaml. Secrets are in .env beside this file.\n"
)


class SetupError(Exception):
    """Something the wizard cannot do; the message says what to fix. Nothing was written."""


def _yaml() -> YAML:
    yaml = YAML()  # round trip
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    yaml.representer.add_representer(type(None), _null)  # null stays null, not an empty value
    return yaml


def _null(representer: Any, _data: None) -> Any:
    return representer.represent_scalar("tag:yaml.org,2002:null", "null")


def read_document(path: Path) -> CommentedMap:
    """``config.yaml`` as a round-trip map (a new one with a header when there is no file)."""
    if not path.exists():
        doc = CommentedMap()
        doc.yaml_set_start_comment(HEADER)
        return doc
    try:
        data = _yaml().load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}") from None
    except YAMLError as exc:
        raise SetupError(
            f"{path} is not valid YAML ({str(exc).splitlines()[0]}); fix it first, nothing was changed"
        ) from None
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise SetupError(f"{path}: the top level must be a mapping of sections; fix it first, nothing was changed")
    return data


def dump_document(doc: Any) -> str:
    """The YAML text of ``doc``."""
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def backup(path: Path) -> Path | None:
    """Copy ``path`` to ``<name>.<date-time>.bak`` beside it (0600); ``None`` when there is no file."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{stamp}-{n}.bak")
        n += 1
    shutil.copy2(path, target)
    os.chmod(target, 0o600)  # it may hold a literal secret the edit moved to .env
    return target


def write_text_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step, keeping its mode (0644 for a new file); a
    symlink stays a symlink and its target is replaced."""
    path = path.resolve() if path.is_symlink() else path
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def env_path(config_path: Path) -> Path:
    """The ``.env`` the loader reads for ``config_path``."""
    return config_path.parent / ENV_FILE


def check_secret(name: str, value: str) -> None:
    """Refuse a secret ``.env`` cannot hold on one line (a key or token never has control characters)."""
    if not value:
        raise SetupError(f"the value for {name} is empty; give the key or token itself")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise SetupError(f"the value for {name} contains a line break or control character; paste the key alone")


def write_secrets(path: Path, secrets: Mapping[str, str]) -> None:
    """Set each variable in the ``.env`` at ``path`` (created 0600; other lines stay)."""
    if not secrets:
        return
    path = path.resolve() if path.is_symlink() else path  # like config.yaml: the link's target is the file
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600))
    os.chmod(path, 0o600)
    for name, value in secrets.items():
        check_secret(name, value)
        set_key(path, name, value, quote_mode="always")
