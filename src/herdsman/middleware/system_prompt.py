"""Put the lead's system prompt, with today's date, on every model request.

The prompt is built once; only the date line is refreshed, so a long-lived gateway never
tells the model a stale date. Cheap: one string join per day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage


class SystemPromptMiddleware(AgentMiddleware):
    """Set the request's system message to ``template`` with ``{date}`` filled in."""

    def __init__(self, template: str, today: Callable[[], dt.date] = dt.date.today) -> None:
        """``template`` holds one ``{date}`` placeholder; ``today`` is injectable for tests."""
        super().__init__()
        self._template = template
        self._today = today
        self._cache: tuple[dt.date, SystemMessage] | None = None

    def render(self) -> SystemMessage:
        """The system message for today."""
        today = self._today()
        if self._cache is None or self._cache[0] != today:
            text = self._template.replace("{date}", today.strftime("%A, %Y-%m-%d"))
            self._cache = (today, SystemMessage(content=text))
        return self._cache[1]

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Send the request with the system prompt set."""
        return handler(request.override(system_message=self.render()))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(request.override(system_message=self.render()))
