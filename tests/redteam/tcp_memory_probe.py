"""Runs the probes of ``test_tcp_memory.py`` in a fresh process and prints JSON.

``python -m tests.redteam.tcp_memory_probe HOME OUTSIDE_IP`` runs inside a network namespace the
test made (as ``netns_probe`` does). It starts a TCP server on ``OUTSIDE_IP`` that accepts every
connection and never reads (a peer that stops reading, as an attacker's server would), with a
small receive buffer, then runs in a local provider's networked jail (``memory_mb`` 64) a client
that opens :data:`CONNECTIONS` connections to it and writes until no socket takes more, and
prints how many MiB the network took from the jail.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
import threading

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider

CONNECTIONS = 60
MEMORY_MB = 64

# Writes into the non-blocking sockets ``socks`` until none takes more for a second; prints the MiB taken.
WRITE_UNTIL_FULL = r"""
sent, chunk = 0, b"x" * 65536
while True:
    _, ready, _ = select.select([], socks, [], 1.0)
    if not ready:
        break
    for c in ready:
        try:
            sent += c.send(chunk)
        except (BlockingIOError, OSError):
            pass
print("taken_mib", sent >> 20)
"""

# Opens ``count`` connections to ``host:port`` (the arguments), then writes into them.
FLOOD = (
    r"""
import select, socket, sys
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = []
for _ in range(count):
    c = socket.create_connection((host, port), timeout=10)
    c.setblocking(False)
    socks.append(c)
"""
    + WRITE_UNTIL_FULL
)


def _never_reading_server(host: str) -> int:
    """A server that accepts and holds every connection without reading; its port."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # accepted sockets inherit it
    server.bind((host, 0))
    server.listen(1024)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            held.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def main(home: str, outside: str) -> None:
    """Run the flood in a networked jail of a provider homed at ``home``; print the JSON."""
    port = _never_reading_server(outside)
    config = HerdsmanConfig.model_validate({
        "home": home, "skills": {"enabled": False},
        "sandbox": {"isolation": "bwrap", "network": True, "command_timeout_seconds": 120,
                    "limits": {"memory_mb": MEMORY_MB}},
    })  # fmt: skip
    provider = LocalSandboxProvider(config)
    sandbox = provider.acquire("flood")
    command = f"python3 -c {shlex.quote(FLOOD)} {outside} {port} {CONNECTIONS}"
    raw = sandbox._shell.run(sandbox.paths, command, 120)
    taken = [line.split()[1] for line in raw.output.splitlines() if line.startswith("taken_mib ")]
    result = {
        "isolation": provider.isolation, "mechanism": sandbox._shell.limiter.mechanism,
        "taken_mib": int(taken[0]) if taken else None, "output": raw.output[-500:],
    }  # fmt: skip
    provider.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
