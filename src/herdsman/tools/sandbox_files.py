"""Reading a file's bytes from a thread's sandbox by its virtual path.

The Sandbox protocol reads text; images and documents need bytes. Sandboxes whose files live
in host directories (every provider here: ``sandbox.paths``) are read directly, after the
provider's own path resolution (which refuses paths that leave the virtual roots) and without
following a final symlink; any other sandbox is read with ``base64`` through its shell.
Errors are ``ToolException`` with messages in virtual paths only.
"""

from __future__ import annotations

import base64
import os
import shlex
import stat
from typing import Any

from langchain_core.tools import ToolException


class FileTooLargeError(ToolException):
    """The file is larger than the caller accepts."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size // 1024} KB, more than the {limit // 1024} KB allowed here")
        self.path, self.size, self.limit = path, size, limit


def read_sandbox_bytes(sandbox: Any, path: str, limit: int) -> bytes:
    """The bytes of the file at virtual ``path`` (at most ``limit``; larger files raise).

    Sandboxes whose files live in host directories (``paths``) are read directly, without
    following a final symlink; any other sandbox is read with ``base64`` through its shell.
    """
    paths = getattr(sandbox, "paths", None)
    if paths is not None and hasattr(paths, "resolve"):
        host = paths.resolve(path)
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise ToolException(f"{path} is not a regular file; give the path of a file")
                if st.st_size > limit:
                    raise FileTooLargeError(path, st.st_size, limit)
                return fh.read()
        except FileNotFoundError:
            raise ToolException(f"{path} does not exist; list the directory with ls to find the file") from None
        except IsADirectoryError:
            raise ToolException(f"{path} is a directory; give the path of a file") from None
        except OSError as exc:
            raise ToolException(f"cannot read {path} ({exc.strerror}); check the path") from None
    result = sandbox.execute(f"base64 -w0 -- {shlex.quote(path)}")
    if result.exit_code != 0:
        raise ToolException(f"cannot read {path}: {result.output.strip()[:300]}")
    data = base64.b64decode(result.output.strip() or b"")
    if len(data) > limit:
        raise FileTooLargeError(path, len(data), limit)
    return data
