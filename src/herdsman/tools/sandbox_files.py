"""Reading a file's bytes from a thread's sandbox by its virtual path.

The Sandbox protocol reads text; images and documents need bytes. Sandboxes whose files live in host
directories (every provider here: :class:`HostBackedSandbox`) are read through their
``ThreadFiles``, by descriptors (race-free; paths that leave the virtual roots are refused); any
other sandbox is read with ``base64`` through its shell. Errors are ``ToolException`` with messages
in virtual paths only.
"""

from __future__ import annotations

import base64
import shlex
from typing import Any

from langchain_core.tools import ToolException

from herdsman.sandbox.base import HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import FileTooLargeError as FsTooLarge
from herdsman.sandbox.fs import NotFoundError


class FileTooLargeError(ToolException):
    """The file is larger than the caller accepts."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size // 1024} KB, more than the {limit // 1024} KB allowed here")
        self.path, self.size, self.limit = path, size, limit


def read_sandbox_bytes(sandbox: Any, path: str, limit: int) -> bytes:
    """The bytes of the file at virtual ``path`` (at most ``limit``; larger files raise).

    Host-backed sandboxes are read by descriptors; any other sandbox is read with ``base64``
    through its shell.
    """
    if isinstance(sandbox, HostBackedSandbox):
        try:
            return sandbox.files.read_bytes(path, limit)
        except FsTooLarge as exc:
            raise FileTooLargeError(path, exc.size, limit) from None
        except NotFoundError:
            raise ToolException(f"{path} does not exist; list the directory with ls to find the file") from None
        except SandboxError as exc:
            raise ToolException(str(exc)) from None
    result = sandbox.execute(f"base64 -w0 -- {shlex.quote(path)}")
    if result.exit_code != 0:
        raise ToolException(f"cannot read {path}: {result.output.strip()[:300]}")
    data = base64.b64decode(result.output.strip() or b"")
    if len(data) > limit:
        raise FileTooLargeError(path, len(data), limit)
    return data
