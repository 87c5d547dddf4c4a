"""Runs the probes of ``test_networked_jail.py`` in a fresh process and prints JSON.

``python -m tests.redteam.netns_probe HOME OUTSIDE_IP`` runs inside a network namespace the
test made (its loopback, and a veth interface holding ``OUTSIDE_IP`` that stands for the
world). It starts, on this "host": TCP servers on ``127.0.0.1`` and ``[::1]`` that answer with a
secret, a TCP server on ``OUTSIDE_IP``, and a resolver on ``127.0.0.53:53`` (where
systemd-resolved listens; the test's ``/etc/resolv.conf`` names it) that answers
``outside.test`` with ``OUTSIDE_IP``, next to another secret server on that address. Then it builds a local provider with ``sandbox.network: true`` and runs, as
jailed commands, a client that tries each address, two threads at once (one listening, one
probing), and a command that times out, and prints what each saw and how many slirp4netns
processes of this process were alive during and after the commands.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import socketserver
import struct
import sys
import threading
import time
from pathlib import Path

from herdsman.config.schema import HerdsmanConfig
from herdsman.sandbox import LocalSandboxProvider

OUTSIDE_NAME = "outside.test"
THREAD_A_PORT = 40123
RESOLVER = "127.0.0.53"  # the host's resolver, on loopback as systemd-resolved's stub is
SECRET = "SECRET-OF-THE-HOST"
OUTSIDE_BANNER = "HELLO-FROM-OUTSIDE"
THREAD_A_BANNER = "SECRET-OF-THREAD-A"

CLIENT = """
import json, socket, sys
out = {}
for name, host, port in json.loads(sys.argv[1]):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.settimeout(3)
            out[name] = "connected:" + s.recv(100).decode(errors="replace").strip()
    except OSError as exc:
        out[name] = "error:" + (exc.strerror or type(exc).__name__)
print(json.dumps(out))
"""

LISTENER = f"""
import os, socket, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", {THREAD_A_PORT}))
srv.listen(8)
srv.settimeout(0.1)
with socket.create_connection(("127.0.0.1", {THREAD_A_PORT}), timeout=3):
    conn, _ = srv.accept()
    conn.sendall(b"{THREAD_A_BANNER}\\n")
    conn.close()
open("ready", "w").write("self-check ok")
end = time.monotonic() + 60
while not os.path.exists("stop") and time.monotonic() < end:
    try:
        conn, _ = srv.accept()
    except OSError:
        continue
    conn.sendall(b"{THREAD_A_BANNER}\\n")
    conn.close()
print("listener done")
"""


class _Banner(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(self.server.banner.encode() + b"\n")  # type: ignore[attr-defined]


class _Server4(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Server6(_Server4):
    address_family = socket.AF_INET6


def _serve(server_class: type, host: str, banner: str) -> int:
    server = server_class((host, 0), _Banner)
    server.banner = banner
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def _dns_answer(query: bytes, address: str) -> bytes:
    """A DNS reply: ``address`` for an A question about OUTSIDE_NAME, NXDOMAIN otherwise."""
    (ident,) = struct.unpack("!H", query[:2])
    labels, at = [], 12
    while query[at]:
        labels.append(query[at + 1 : at + 1 + query[at]].decode().lower())
        at += 1 + query[at]
    question = query[12 : at + 5]
    qtype = struct.unpack("!H", query[at + 1 : at + 3])[0]
    if ".".join(labels) != OUTSIDE_NAME:
        return struct.pack("!HHHHHH", ident, 0x8183, 1, 0, 0, 0) + question
    if qtype != 1:
        return struct.pack("!HHHHHH", ident, 0x8180, 1, 0, 0, 0) + question
    answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(address)
    return struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0) + question + answer


def _serve_dns(address: str, answer: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))

    def loop() -> None:
        while True:
            data, peer = sock.recvfrom(512)
            try:
                sock.sendto(_dns_answer(data, answer), peer)
            except (IndexError, struct.error, UnicodeDecodeError):
                continue

    threading.Thread(target=loop, daemon=True).start()


def _slirp_children() -> int:
    """slirp4netns processes whose parent is this process."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if comm == "slirp4netns" and ppid == os.getpid():
            count += 1
    return count


def _client(targets: list[tuple[str, str, int]]) -> str:
    return f"python3 -c {shlex.quote(CLIENT)} {shlex.quote(json.dumps(targets))}"


def _last_json(output: str) -> dict:
    lines = [ln for ln in output.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"unparsed": output}


def _host_connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.settimeout(3)
            return "connected:" + s.recv(100).decode(errors="replace").strip()
    except OSError as exc:
        return "error:" + (exc.strerror or type(exc).__name__)


def main(home: str, outside: str) -> None:
    """Start the host's servers, run every probe through a networked provider, print JSON."""
    loop4 = _serve(_Server4, "127.0.0.1", SECRET)
    loop6 = _serve(_Server6, "::1", SECRET)
    world = _serve(_Server4, outside, OUTSIDE_BANNER)
    _serve_dns(RESOLVER, outside)
    beside_resolver = _serve(_Server4, RESOLVER, SECRET)
    config = HerdsmanConfig.model_validate({
        "home": home, "skills": {"enabled": False},
        "sandbox": {"isolation": "bwrap", "network": True, "command_timeout_seconds": 30},
    })  # fmt: skip
    provider = LocalSandboxProvider(config)
    result: dict = {"uid": os.getuid(), "isolation": provider.isolation}
    a, b = provider.acquire("thread-a"), provider.acquire("thread-b")
    hostname = socket.gethostname()
    targets = [
        ("loopback4", "127.0.0.1", loop4), ("loopback6", "::1", loop6), ("localhost", "localhost", loop4),
        ("gateway", "10.0.2.2", loop4), ("hostname", hostname, loop4),
        ("dns_forwarder", "10.0.2.3", beside_resolver),
        ("outside", outside, world), ("outside_by_name", OUTSIDE_NAME, world),
    ]  # fmt: skip
    raw = b._shell.run(b.paths, _client(targets), 30)
    result["host"] = _last_json(raw.output)
    dns = b._shell.run(b.paths, "getent hosts outside.test; timeout 20 getent hosts nosuch.test; echo rc=$?", 30)
    result["dns"] = dns.output

    listener: dict = {}
    thread = threading.Thread(
        target=lambda: listener.update(run=a._shell.run(a.paths, f"python3 -c {shlex.quote(LISTENER)}", 30))
    )
    thread.start()
    ready = a.paths.workspace / "ready"
    end = time.monotonic() + 20
    while not ready.exists() and thread.is_alive() and time.monotonic() < end:
        time.sleep(0.05)
    result["listener_ready"] = ready.read_text() if ready.exists() else None
    result["slirp_during"] = _slirp_children()
    a_targets = [("loopback", "127.0.0.1", THREAD_A_PORT), ("jail_address", "10.0.2.100", THREAD_A_PORT),
                 ("gateway", "10.0.2.2", THREAD_A_PORT)]  # fmt: skip
    result["other_thread"] = _last_json(b._shell.run(b.paths, _client(a_targets), 30).output)
    result["other_thread_from_host"] = {
        name: _host_connect(host, port) for name, host, port in a_targets if name != "gateway"
    }
    (a.paths.workspace / "stop").write_text("")
    thread.join()
    result["listener_output"] = listener["run"].output if "run" in listener else None
    result["slirp_after"] = _slirp_children()

    timed = b._shell.run(b.paths, "sleep 60", 2)
    result["timeout"] = {"timed_out": timed.timed_out, "slirp_after": _slirp_children()}
    result["timeout_output"] = [timed.exit_code, timed.output]
    provider.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
