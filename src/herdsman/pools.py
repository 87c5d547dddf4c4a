"""Bounded thread pools per kind of blocking work, and per-user slots within each kind.

asyncio runs every ``asyncio.to_thread`` and LangChain every ``run_in_executor(None, ...)`` on
one default pool of ``min(32, cpus + 4)`` threads: six on two cores. One user's turn with eight
parallel ``sleep 60`` commands held all six, and every other user's file listing, download and
plain chat run waited about a minute while ``/api/health`` stayed green. So each kind of slow work
has a pool of its own, and within a kind one user holds at most a few threads at once:

- ``commands``: sandboxed shell commands (the ``bash`` tool);
- ``files``: file I/O for a user (the sandbox file tools, listings, downloads, uploads, archives,
  snapshots of a thread's files);
- ``conversions``: documents converted to Markdown (each in a child process under limits);
- ``captures``: the version of a thread's files kept with each checkpoint;
- ``default``: what is left (LangChain's sync tools and middleware hooks, small blocking calls):
  asyncio's default executor, sized by ``pools.default`` instead of by the number of cores.

:func:`run` awaits the user's slot of a kind *before* it hands the call to a thread, so a call
waiting for its slot holds no thread, and the slot is given back when the thread's work ends (not
when its caller stops waiting), so cancelling and resending cannot take more threads than the cap.

Hand-written because no library does this: anyio's ``CapacityLimiter`` bounds one pool, not a
user's share of it, and ``concurrent.futures`` has no per-key admission. The module imports
nothing from Herdsman (the sandbox layer and the gateway both use it); :func:`configure` takes
``config.pools`` by duck typing.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

COMMANDS = "commands"
FILES = "files"
CONVERSIONS = "conversions"
CAPTURES = "captures"
KINDS = (COMMANDS, FILES, CONVERSIONS, CAPTURES)
LOCAL_USER = "local"  # whom the calls of a gateway without API keys count against


class PoolSettings(Protocol):
    """What :func:`configure` reads (``config.pools``): a pool size and a per-user cap per kind."""

    default: int
    commands: int
    files: int
    conversions: int
    captures: int
    commands_per_user: int
    files_per_user: int
    conversions_per_user: int
    captures_per_user: int


@dataclass(frozen=True)
class Sizes:
    """Threads per pool and slots per user, by kind (``default`` has no per-user cap)."""

    default: int = 8
    threads: tuple[tuple[str, int], ...] = ((COMMANDS, 32), (FILES, 16), (CONVERSIONS, 4), (CAPTURES, 4))
    per_user: tuple[tuple[str, int], ...] = ((COMMANDS, 4), (FILES, 4), (CONVERSIONS, 2), (CAPTURES, 2))

    @classmethod
    def of(cls, settings: PoolSettings) -> Sizes:
        """The sizes in ``settings`` (``config.pools``)."""
        return cls(
            default=settings.default,
            threads=tuple((kind, int(getattr(settings, kind))) for kind in KINDS),
            per_user=tuple((kind, int(getattr(settings, f"{kind}_per_user"))) for kind in KINDS),
        )


class _Pools:
    """The process's pools: one executor per kind, replaced (never resized) when sizes change."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sizes = Sizes()
        self.executors: dict[str, ThreadPoolExecutor] = {}

    def configure(self, sizes: Sizes) -> None:
        with self.lock:
            if sizes == self.sizes:
                return
            old, self.executors, self.sizes = self.executors, {}, sizes
        for executor in old.values():
            executor.shutdown(wait=False)  # work already handed to it still runs

    def executor(self, kind: str) -> ThreadPoolExecutor:
        with self.lock:
            executor = self.executors.get(kind)
            if executor is None:
                size = dict(self.sizes.threads)[kind]
                executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"herdsman-{kind}")
                self.executors[kind] = executor
            return executor


_POOLS = _Pools()


@dataclass
class _Slot:
    """One user's slots of one kind in one event loop; dropped when nobody holds or awaits one."""

    semaphore: asyncio.Semaphore
    users: int = 0  # holders and waiters


# per event loop (asyncio primitives belong to one loop): (kind, user, cap) -> slot
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, int], _Slot]] = (
    weakref.WeakKeyDictionary()
)


def configure(settings: PoolSettings) -> None:
    """Size the pools from ``settings`` (``config.pools``); a pool whose size changed is replaced
    and the work already given to the old one finishes there."""
    _POOLS.configure(Sizes.of(settings))


def install_default(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Give ``loop`` (default: the running one) its own default executor of ``pools.default``
    threads, named ``herdsman-default``: what ``asyncio.to_thread`` and LangChain's
    ``run_in_executor(None, ...)`` use. One per loop, since ``asyncio.run`` shuts its loop's down."""
    loop = loop or asyncio.get_running_loop()
    loop.set_default_executor(
        ThreadPoolExecutor(max_workers=_POOLS.sizes.default, thread_name_prefix="herdsman-default")
    )


def per_user(kind: str) -> int:
    """How many calls of ``kind`` one user may have on threads at once."""
    return dict(_POOLS.sizes.per_user)[kind]


def user_of(config: Mapping[str, Any] | None) -> str:
    """The user a run's config (LangGraph's ``RunnableConfig``) belongs to: ``configurable.user_id``
    (the gateway sets it from the API key), else :data:`LOCAL_USER`."""
    configurable = (config or {}).get("configurable") or {}
    user = configurable.get("user_id") if isinstance(configurable, Mapping) else None
    return str(user) if user else LOCAL_USER


def _slot(kind: str, user: str) -> tuple[tuple[str, str, int], _Slot, dict[tuple[str, str, int], _Slot]]:
    loop = asyncio.get_running_loop()
    table = _SLOTS.setdefault(loop, {})
    key = (kind, user, per_user(kind))
    slot = table.get(key)
    if slot is None:
        slot = table[key] = _Slot(asyncio.Semaphore(key[2]))
    slot.users += 1
    return key, slot, table


def _leave(key: tuple[str, str, int], slot: _Slot, table: dict[tuple[str, str, int], _Slot], release: bool) -> None:
    if release:
        slot.semaphore.release()
    slot.users -= 1
    if slot.users == 0 and table.get(key) is slot:
        del table[key]


async def run(kind: str, user: str | None, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the ``kind`` pool once ``user`` (None: :data:`LOCAL_USER`) has a
    slot of that kind free; the caller's context variables go with it, as with ``asyncio.to_thread``.

    Waiting for the slot holds no thread. The slot is freed when ``fn`` returns on its thread, even
    if the caller was cancelled meanwhile (the thread's work cannot be stopped from here)."""
    if kind not in KINDS:
        raise ValueError(f"unknown pool {kind!r}; one of {KINDS}")
    loop = asyncio.get_running_loop()
    key, slot, table = _slot(kind, user or LOCAL_USER)
    try:
        await slot.semaphore.acquire()
    except BaseException:
        _leave(key, slot, table, release=False)
        raise
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        """On the pool's thread: run ``fn`` (unless its caller stopped waiting before it began),
        then hand back the slot and the outcome in ONE wake-up of the loop (``wrap_future`` and a
        done callback took two)."""
        outcome: tuple[bool, Any] = (True, None)
        if not future.cancelled():
            try:
                outcome = (True, context.run(fn, *args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, whatever it is
                outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(_finish, key, slot, table, future, outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this slot any more
            pass

    try:
        _POOLS.executor(kind).submit(work)
    except BaseException:
        _leave(key, slot, table, release=True)
        raise
    return await future


def _finish(
    key: tuple[str, str, int],
    slot: _Slot,
    table: dict[tuple[str, str, int], _Slot],
    future: asyncio.Future[Any],
    outcome: tuple[bool, Any],
) -> None:
    """On the loop: give the slot back, and the outcome to the caller still waiting for it."""
    _leave(key, slot, table, True)
    if future.done():  # its caller was cancelled
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def busy(kind: str, user: str | None) -> int:
    """How many calls of ``user`` hold or await a ``kind`` slot in the running loop (for tests and metrics)."""
    table = _SLOTS.get(asyncio.get_running_loop(), {})
    return sum(slot.users for (k, u, _), slot in table.items() if k == kind and u == (user or LOCAL_USER))
