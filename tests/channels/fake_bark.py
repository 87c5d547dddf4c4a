"""A fake Bark server: ``POST /push`` as the Bark app's server answers it.

A push needs a known ``device_key`` and a ``body`` (Bark answers 400 otherwise, with the code
and message in JSON); every push received is recorded.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse

from tests.channels.fake_server import Call, FakeServer

DEVICE_KEY = "bark-device-key"


class FakeBark(FakeServer):
    """The Bark API at ``url``."""

    def __init__(self) -> None:
        super().__init__()
        self.app.add_api_route("/push", self.push, methods=["POST"])

    async def push(self, request: Request) -> JSONResponse:
        """One push."""
        body = await request.json()
        self.record(Call("push", body))
        if body.get("device_key") != DEVICE_KEY:
            return JSONResponse(
                {"code": 400, "message": "failed to get device token: device key not found"}, status_code=400
            )
        if not body.get("body"):
            return JSONResponse({"code": 400, "message": "request bind failed: body is empty"}, status_code=400)
        return JSONResponse({"code": 200, "message": "success", "timestamp": 1700000000})
