"""The ``view_image`` tool: show the model an image file from the sandbox.

Given to the lead only when its model has ``supports_vision: true``. The tool reads the file at a
virtual path (``/mnt/user-data/...``) through the thread's sandbox, checks by its first bytes
that it is PNG, JPEG, GIF or WebP and not too large, and returns it as an image content block
(base64) next to a short text line, so the next model call sees the picture.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from herdsman.sandbox.base import SandboxError, SandboxProvider
from herdsman.sandbox.tools import thread_id_of
from herdsman.tools.sandbox_files import FileTooLargeError, read_sandbox_bytes

MAX_IMAGE_BYTES = 8 * 1024 * 1024
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(data: bytes) -> str | None:
    """The MIME type of an image from its first bytes (PNG, JPEG, GIF, WebP), else None."""
    for signature, mime in SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def make_view_image_tool(provider: SandboxProvider) -> BaseTool:
    """The ``view_image`` tool over the threads' sandboxes of ``provider``."""

    def view_image(
        path: Annotated[str, "Virtual path of a PNG, JPEG, GIF or WebP file, e.g. /mnt/user-data/uploads/chart.png."],
        runtime: ToolRuntime[Any, dict[str, Any]],
    ) -> list[dict[str, Any]]:
        sandbox = provider.acquire(thread_id_of(runtime))
        try:
            data = read_sandbox_bytes(sandbox, path, MAX_IMAGE_BYTES)
        except FileTooLargeError as exc:
            raise ToolException(
                f"{exc}; make a smaller copy first (e.g. with Python's PIL: Image.thumbnail((1600, 1600))) "
                "and view that"
            ) from None
        except SandboxError as exc:
            raise ToolException(str(exc)) from None
        mime = image_mime_type(data)
        if mime is None:
            raise ToolException(f"{path} is not a PNG, JPEG, GIF or WebP image; convert it first or read it as text")
        return [
            {"type": "text", "text": f"Image {path} ({mime}, {len(data) // 1024} KB):"},
            {"type": "image", "base64": base64.b64encode(data).decode("ascii"), "mime_type": mime},
        ]

    return StructuredTool.from_function(
        func=view_image,
        name="view_image",
        description=(
            "Look at an image file (PNG, JPEG, GIF or WebP) from the sandbox, e.g. an uploaded "
            "screenshot or a chart you made; the image is shown to you with the result."
        ),
        handle_tool_error=True,
    )
