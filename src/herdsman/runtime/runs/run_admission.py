"""Admission of a new run to the durable run queue: the limits it must fit in, counted over the
whole queue table (every gateway and worker on the database), and the decision.

A run is admitted in the same transaction that inserts its row (``RunQueue.admit``): the queue
counts the thread's unfinished runs, the runs waiting for a worker, and the user's runs held by a
process and waiting, and :func:`decide` says what happens to the new one:

- ``behind``: a process with workers asked to execute the run, but the thread has an unfinished
  run no process of its own holds (another gateway's or worker's, or one waiting for a worker):
  the run manager applies the multitask strategy to those runs and queues the new one behind them;
- ``busy``: the thread has an unfinished run and the run asked ``multitask_strategy: reject``;
- ``queue_full``: ``runs.max_queued`` runs wait for a worker already (backpressure, 503);
- ``user_full``: the user has ``runs.max_running_per_user`` runs held and
  ``runs.max_queued_per_user`` waiting (429);
- ``wait``: the user is at ``runs.max_running_per_user``: the row waits unheld, and workers claim
  it once one of the user's runs ended (``run_queue.claimable_from`` skips users at their limit);
- ``hold``: the run is inserted held by the process that asked (it executes it now).

Written here (a count and a comparison, not a library) because the counts are rows of the queue
table itself, read in the transaction that inserts the row, so two gateways admitting at the same
moment never both take the last place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["hold", "wait", "behind", "busy", "queue_full", "user_full"]
NO_LIMIT = 2**31 - 1  # what an unset limit compares against in SQL


@dataclass(frozen=True)
class Admission:
    """What a new run must fit in (None: no limit), and what its process asks for it."""

    max_queued: int | None = None
    max_running_per_user: int | None = None
    max_queued_per_user: int | None = None
    worker: str = ""  # the asking process's worker id ("": it executes nothing, it only queues runs)
    hold: bool = True  # the asking process would execute the run now (it has a free slot)
    reject_if_busy: bool = False  # multitask_strategy reject: refuse when the thread has an unfinished run

    @property
    def limited(self) -> bool:
        """Whether any limit is set (without one, admission needs no counting)."""
        return any(v is not None for v in (self.max_queued, self.max_running_per_user, self.max_queued_per_user))


@dataclass(frozen=True)
class QueueCounts:
    """The queue as a new run finds it (all processes together)."""

    thread_run: str | None  # the newest unfinished run of the thread that the asking worker does not hold
    waiting: int  # runs no live process holds (waiting for a worker), all users
    user_held: int  # the user's runs held by a live process (executing, or about to)
    user_waiting: int  # the user's runs waiting for a worker


@dataclass(frozen=True)
class Decision:
    """What happens to the new run, with the counts it was decided on."""

    verdict: Verdict
    counts: QueueCounts


def decide(counts: QueueCounts, admission: Admission) -> Decision:
    """The fate of a new run given the queue's ``counts`` (see the module docstring).

    A user may have ``max_running_per_user`` runs held by processes plus ``max_queued_per_user``
    waiting; without ``max_running_per_user``, ``max_queued_per_user`` bounds the user's runs
    waiting for a worker. A run waits when its process only queues it (``hold`` false) or when
    the user is at ``max_running_per_user``.
    """
    if counts.thread_run is not None and admission.reject_if_busy:
        return Decision("busy", counts)
    if counts.thread_run is not None and admission.worker:
        return Decision("behind", counts)
    running_cap, queued_cap = admission.max_running_per_user, admission.max_queued_per_user
    at_running_cap = running_cap is not None and counts.user_held >= running_cap
    if admission.worker and admission.hold and not at_running_cap:
        return Decision("hold", counts)
    if admission.max_queued is not None and counts.waiting >= admission.max_queued:
        return Decision("queue_full", counts)
    if queued_cap is not None:
        if running_cap is not None:
            over = counts.user_held + counts.user_waiting >= running_cap + queued_cap
        else:
            over = counts.user_waiting >= queued_cap
        if over:
            return Decision("user_full", counts)
    return Decision("wait", counts)


def count_sql(table: str, admission: Admission) -> str:
    """One SELECT giving :class:`QueueCounts` in order (a count no limit needs is 0, not counted:
    the overall one reads the whole table); parameters (``?``): see :func:`count_params`."""
    waiting = "(worker_id IS NULL OR lease_until < ?)"
    thread = (
        f"SELECT (SELECT run_id FROM {table} WHERE thread_id = ? AND (worker_id IS NULL OR worker_id <> ?) "
        "ORDER BY created_at DESC, run_id DESC LIMIT 1), "
    )
    if not admission.limited:
        return thread + "0, 0, 0"
    return (
        thread
        + f"(SELECT count(*) FROM {table} WHERE {waiting}), "
        + f"(SELECT count(*) FROM {table} WHERE user_id = ? AND NOT {waiting}), "
        + f"(SELECT count(*) FROM {table} WHERE user_id = ? AND {waiting})"
    )


def count_params(thread_id: str, worker: str, user: str, now: float, admission: Admission) -> tuple[object, ...]:
    """The parameters of :func:`count_sql`: the thread and the asking worker, then now and the user."""
    if not admission.limited:
        return (thread_id, worker)
    return (thread_id, worker, now, user, now, user, now)
