"""Preview on the gateway: what a thread has to show, links to the preview origin, and a
script-free view of an HTML output.

- ``GET /api/threads/{id}/preview``: the thread's HTML files (outputs first, then workspace), its
  servers and the preview origin's address;
- ``POST /api/threads/{id}/preview/token``: a fresh signed link to the preview origin, for the
  thread's owner only (``preview/origin.py`` serves it, scripts running, sandboxed);
- ``GET /api/threads/{id}/preview/files/{path}``: the file shown here on the gateway's own
  origin, with its relative CSS and images but no script (``policy.GATEWAY_CSP``).

Another user's thread, and a deleted one, answer 404 like every thread route.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from herdsman import pools
from herdsman.sandbox.base import OUTPUTS, WORKSPACE, HostBackedSandbox, SandboxError
from herdsman.sandbox.fs import ThreadFiles, WalkStop
from herdsman_gateway.auth import current_user
from herdsman_gateway.container import Gateway, get_gateway
from herdsman_gateway.preview import policy
from herdsman_gateway.preview.files import file_response
from herdsman_gateway.routes.threads import load_thread

router = APIRouter(prefix="/api/threads/{thread_id}/preview", tags=["preview"])

MAX_PAGES = 200
SKIPPED_DIRS = frozenset({"node_modules", ".git", "__pycache__", ".venv", "venv"})


class PreviewLink(BaseModel):
    """A link to the thread's previews on the preview origin."""

    token: str = Field(description="The signed token (already in the URLs below).")
    expires_at: int = Field(description="Unix time after which the link is refused.")
    origin: str = Field(description="The preview origin (never the gateway's).")
    base_url: str = Field(description="Append files/<path> for a file, <port>/<path> for a server in the sandbox.")
    files_url: str


class PreviewListing(BaseModel):
    """What the thread has to preview."""

    pages: list[str] = Field(description="Virtual paths of HTML files under outputs, then workspace.")
    truncated: bool = False
    servers: list[dict[str, Any]] = Field(default_factory=list, description="Servers started in the sandbox.")
    ports: str = Field(description="The ports a server may be previewed on (sandbox.preview.ports).")
    origin: str | None = Field(description="The preview origin, or null when gateway.preview_origin is off.")


def find_pages(files: ThreadFiles) -> tuple[list[str], bool]:
    """HTML files under outputs then workspace (at most MAX_PAGES; True when cut)."""
    pages: list[str] = []
    for root in (OUTPUTS, WORKSPACE):
        stop = WalkStop()
        try:
            for entry in files.walk(root, limit=20_000, seconds=2.0, skip_dirs=SKIPPED_DIRS, stop=stop):
                if not entry.is_dir and entry.name.lower().endswith((".html", ".htm")):
                    pages.append(entry.vpath)
                    if len(pages) >= MAX_PAGES:
                        return pages, True
        except SandboxError:
            continue
    return pages, False


def preview_origin(request: Request) -> Any:
    """The running preview origin; 503 saying how to turn it on when there is none."""
    origin = getattr(request.app.state, "preview_origin", None)
    if origin is None or origin.url is None:
        raise HTTPException(
            503,
            "The preview origin is off: set gateway.preview_origin.enabled: true in "
            "config.yaml (agent-written pages never run on the gateway's own origin)",
        )
    return origin


@router.get("", response_model=PreviewListing, summary="What a thread has to preview")
async def list_previews(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """The thread's HTML pages and servers, and where the preview origin is."""
    await load_thread(gw, thread_id, user)
    sandbox = await gw.sandbox_of(thread_id, user)
    pages: list[str] = []
    truncated = False
    if isinstance(sandbox, HostBackedSandbox):
        pages, truncated = await pools.run(pools.FILES, user, find_pages, sandbox.files)
    jobs = getattr(sandbox, "background_jobs", None)
    servers = await pools.run(pools.FILES, user, lambda: [job.describe() for job in jobs()]) if jobs else []
    origin = getattr(request.app.state, "preview_origin", None)
    return PreviewListing(
        pages=pages,
        truncated=truncated,
        servers=servers,
        ports=gw.config.sandbox.preview.ports,
        origin=origin.url if origin is not None else None,
    )


@router.post("/token", response_model=PreviewLink, summary="A signed link to the thread's previews")
async def preview_token(
    thread_id: str, request: Request, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Any:
    """A short-lived link to the preview origin for this thread and user (its owner)."""
    await load_thread(gw, thread_id, user)
    return preview_origin(request).link(thread_id, user, request.url.hostname)


@router.get("/files/{path:path}", summary="An HTML output shown without scripts", response_class=Response)
async def preview_file(
    thread_id: str, path: str, gw: Gateway = Depends(get_gateway), user: str | None = Depends(current_user)
) -> Response:
    """The file at ``path`` (outputs or workspace; a folder means its index.html), rendered on the
    gateway's origin with no script; the live page is on the preview origin."""
    await load_thread(gw, thread_id, user)
    return await file_response(await gw.sandbox_of(thread_id, user), path, user, policy.gateway_headers())
