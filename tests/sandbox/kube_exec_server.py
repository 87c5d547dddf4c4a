"""A Kubernetes exec endpoint for tests: the websocket an API server serves at
``/api/v1/namespaces/<ns>/pods/<pod>/exec``, on a loopback port.

It speaks the channel protocol (``v4.channel.k8s.io``) the official client's ``stream()`` uses:
frames from the client on channel 0 go to the command's standard input; its stdout and stderr go
back on channels 1 and 2, and its exit status on channel 3 as a ``Status`` object. The command
(the ``command`` query parameters) runs on this machine in ``cwd``. Every request's path and
query and every frame received are recorded, so a test can check what crossed the wire.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.sync.server import ServerConnection, serve


class ExecServer:
    """Serves exec websockets on ``url`` until :meth:`stop`."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.requests: list[str] = []  # path and query of each exec request
        self.received: list[bytes] = []  # every frame the client sent
        self._server = serve(self._handle, "127.0.0.1", 0, subprotocols=["v4.channel.k8s.io"])  # type: ignore[list-item]
        self.url = f"http://127.0.0.1:{self._server.socket.getsockname()[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _handle(self, conn: ServerConnection) -> None:
        assert conn.request is not None
        self.requests.append(conn.request.path)
        query = parse_qs(urlsplit(conn.request.path).query)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(self.cwd)}
        proc = subprocess.Popen(query["command"], cwd=self.cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        def forward(channel: int, pipe: Any) -> None:
            for chunk in iter(lambda: pipe.read1(65536), b""):
                conn.send(bytes([channel]) + chunk)

        pumps = [
            threading.Thread(target=forward, args=(c, p), daemon=True) for c, p in ((1, proc.stdout), (2, proc.stderr))
        ]
        for pump in pumps:
            pump.start()

        def feed() -> None:
            try:
                for frame in conn:
                    data = frame if isinstance(frame, bytes) else frame.encode()
                    self.received.append(data)
                    if data[:1] == b"\x00":
                        proc.stdin.write(data[1:])
                        proc.stdin.flush()
            except Exception:  # noqa: BLE001 - the client closed the stream
                pass

        threading.Thread(target=feed, daemon=True).start()
        code = proc.wait()
        for pump in pumps:
            pump.join()
        status: dict[str, Any] = {"metadata": {}, "status": "Success"}
        if code != 0:
            status = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}  # fmt: skip
        conn.send(b"\x03" + json.dumps(status).encode())
        conn.close()

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._thread.join(10)
