"""What a server process costs: CPU time and resident memory of its whole process tree (psutil).

A server may work in child processes (a reloader's worker, sandboxed commands); the tree's CPU
time is each live process's own user+system time plus what its children that already exited and
were waited for spent (``children_user``/``children_system``), so nothing is counted twice and a
short-lived command is not missed once its parent reaped it.
"""

from __future__ import annotations

import psutil


def _tree(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and its live descendants."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) spent so far by ``pid``'s process tree."""
    total = 0.0
    for proc in _tree(pid):
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:  # exited between the listing and the read
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid``'s process tree, in bytes (pages shared by several processes count in each)."""
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total
