"""A Kubernetes API for tests: kmock's KubernetesEmulator on a loopback port, plus a fake kubelet.

The emulator stores objects and serves create, read, list and delete like an API server; it runs
in its own thread and event loop so the synchronous ``kubernetes`` client can talk to it over
HTTP. A tiny "kubelet" coroutine marks new pods ``Running`` (or ``Failed`` when their image name
contains ``broken``). Exec is faked at the websocket-stream boundary by :class:`HostExecStream`,
which offers ``WSClient``'s interface over a local process, so the provider's exec path (the
wrapper script, deadlines, sweeps, the error channel) runs for real. Port-forward is served at
the wire level by :class:`PortForwardServer`, for the official client's ``portforward``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import kmock
from kubernetes import client
from kubernetes.client.rest import ApiException
from websockets.typing import Subprotocol

PODS = "v1/pods"


class EmulatedCluster:
    """The emulator, its URL and an ``ApiClient`` for it; ``stop()`` ends it."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self.emulator: Any = None
        self.url = ""
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the kmock emulator did not start")

    async def _main(self) -> None:
        async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
            emulator.resources[PODS] = kmock.ResourceInfo(namespaced=True, kind="Pod")
            emulator.resources["networking.k8s.io/v1/networkpolicies"] = kmock.ResourceInfo(
                namespaced=True, kind="NetworkPolicy"
            )
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            self._stop = asyncio.Event()
            kubelet = asyncio.ensure_future(self._kubelet())
            self._ready.set()
            await self._stop.wait()
            kubelet.cancel()

    async def _kubelet(self) -> None:
        while True:
            for key in list(self.emulator.objects.keys()):
                if key[0].plural != "pods":
                    continue
                obj = self.emulator.objects[key]
                if obj.deleted or (obj.get("status") or {}).get("phase"):
                    continue
                image = obj["spec"]["containers"][0]["image"]
                obj.patch({"status": {"phase": "Failed" if "broken" in image else "Running"}})
            await asyncio.sleep(0.01)

    def api_client(self) -> client.ApiClient:
        """A fresh client of the emulator."""
        return client.ApiClient(client.Configuration(host=self.url))

    def live_pods(self, namespace: str) -> list[dict[str, Any]]:
        """The pods stored in ``namespace`` that are not deleted."""
        found = []
        for key in list(self.emulator.objects.keys()):
            if key[0].plural == "pods" and key[1] == namespace and not self.emulator.objects[key].deleted:
                found.append(dict(self.emulator.objects[key]))
        return found

    def stop(self) -> None:
        """Stop the server and its loop."""
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


class HostExecStream:
    """``WSClient``'s interface over a local process: stdout channel 1, stderr 2, status 3."""

    def __init__(self, argv: list[str], cwd: Path, stdin: bytes | None = None) -> None:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(cwd)}
        self._proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if stdin is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.write(stdin)
            self._proc.stdin.close()
        self._channels: dict[int, bytes] = {}
        self._open = True
        for pipe in (self._proc.stdout, self._proc.stderr):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)

    def is_open(self) -> bool:
        return self._open

    def update(self, timeout: float = 0) -> None:
        import select

        pipes = [p for p in (self._proc.stdout, self._proc.stderr) if p is not None and not p.closed]
        ready, _, _ = select.select(pipes, [], [], timeout) if pipes else ([], [], [])
        for channel, pipe in ((1, self._proc.stdout), (2, self._proc.stderr)):
            if pipe in ready:
                data = pipe.read(65536) or b""
                self._channels[channel] = self._channels.get(channel, b"") + data
                if not data:
                    pipe.close()
        if all(p is None or p.closed for p in (self._proc.stdout, self._proc.stderr)):
            code = self._proc.wait()
            status: dict[str, Any] = {"metadata": {}, "status": "Success"}
            if code != 0:
                status = {
                    "metadata": {},
                    "status": "Failure",
                    "reason": "NonZeroExitCode",
                    "details": {"causes": [{"reason": "ExitCode", "message": str(code if code > 0 else 128 - code)}]},
                }
            self._channels[3] = json.dumps(status).encode()
            self._open = False

    def read_channel(self, channel: int, timeout: float = 0) -> bytes:
        return self._channels.pop(channel, b"")

    def read_stdout(self, timeout: float | None = None) -> bytes:
        return self.read_channel(1)

    def read_stderr(self, timeout: float | None = None) -> bytes:
        return self.read_channel(2)

    def close(self, **kwargs: Any) -> None:
        self._open = False
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()


class HostExecOpener:
    """Opens :class:`HostExecStream` s for pods that exist in the emulator, in their workspace."""

    def __init__(self, cluster: EmulatedCluster, workspace_of: Callable[[dict[str, Any]], Path]) -> None:
        self._cluster = cluster
        self._workspace_of = workspace_of
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, pod: str, namespace: str, argv: list[str], stdin: bytes | None = None) -> HostExecStream:
        self.calls.append((pod, argv))
        for manifest in self._cluster.live_pods(namespace):
            if manifest["metadata"]["name"] == pod:
                return HostExecStream(argv, self._workspace_of(manifest), stdin)
        raise ApiException(status=404, reason=f"pods {pod!r} not found")


class PortForwardServer:
    """The API server's ``pods/portforward`` at the wire level: a websocket server speaking
    ``v4.channel.k8s.io`` (per port a data channel 0 and an error channel 1, each opened by a frame
    holding the port, little-endian), forwarding to the port on this machine's loopback, where
    :class:`HostExecStream` runs the pod's commands. ``calls`` records (pod, namespace, port)."""

    PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/portforward\?(.*)$")

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.calls: list[tuple[str, str, int]] = []
        self._server = serve(self._handle, "127.0.0.1", 0, subprotocols=[Subprotocol("v4.channel.k8s.io")])
        self.url = f"http://127.0.0.1:{self._server.socket.getsockname()[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _handle(self, ws: Any) -> None:
        match = self.PATH.match(ws.request.path)
        if match is None:
            ws.close(1008, "not a portforward path")
            return
        namespace, pod, query = match.groups()
        port = int(dict(parse_qsl(query))["ports"])
        self.calls.append((pod, namespace, port))
        head = bytes([port & 255, port >> 8])
        ws.send(b"\x00" + head)
        ws.send(b"\x01" + head)
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError as exc:
            ws.send(b"\x01" + f"error forwarding port {port} to pod {pod}: {exc.strerror}".encode())
            ws.close()
            return

        def pump() -> None:
            while data := upstream.recv(65536):
                ws.send(b"\x00" + data)
            ws.close()

        threading.Thread(target=pump, daemon=True).start()
        try:
            for message in ws:
                if isinstance(message, bytes) and message[:1] == b"\x00":
                    upstream.sendall(message[1:])
        finally:
            upstream.close()

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
