"""Give a thread a title after its first exchange.

With ``title.model`` set, that model writes the title; otherwise (or when it fails) a local
fallback takes the first line of the user's first message. Runs once per run, after the agent,
and only while the thread has no title.
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from herdsman.logs import get_logger

log = get_logger(__name__)

TITLE_PROMPT = (
    "Write a short title (at most {max_chars} characters, no quotes, no final period) "
    "for a conversation that starts with this request:\n\n{request}"
)


class TitleState(AgentState):
    """Adds ``title`` to the thread state."""

    title: NotRequired[str]


def fallback_title(text: str, max_chars: int = 60) -> str:
    """The first non-empty line of ``text`` without Markdown marks, cut at a word boundary to
    ``max_chars``; a skill's ``/name`` at the start is kept (it says what the thread is)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "").lstrip("#>*- ")
    if not line:
        return "Untitled"
    if len(line) <= max_chars:
        return line
    cut = line[: max_chars - 1]
    if " " in cut[max_chars // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,.;:") + "…"


def clean_title(raw: str, max_chars: int) -> str:
    """A model's title without quotes, markup or trailing period, within ``max_chars``."""
    title = raw.strip().splitlines()[0] if raw.strip() else ""
    title = title.strip().strip("\"'`*#").removeprefix("Title:").strip().rstrip(".")
    return fallback_title(title, max_chars) if title else ""


def _first_exchange(messages: list[AnyMessage]) -> str | None:
    human = next((m for m in messages if isinstance(m, HumanMessage)), None)
    if human is None or not any(isinstance(m, AIMessage) for m in messages):
        return None
    return human.text


class TitleMiddleware(AgentMiddleware):
    """Set ``state["title"]`` once, after the first exchange."""

    state_schema = TitleState

    def __init__(self, model: BaseChatModel | None = None, max_chars: int = 60) -> None:
        """``model`` writes titles when given; ``max_chars`` bounds their length."""
        super().__init__()
        self.model = model
        self.max_chars = max_chars

    def _request(self, state: Any) -> str | None:
        if state.get("title"):
            return None
        return _first_exchange(state.get("messages", []))

    def _prompt(self, request: str) -> str:
        return TITLE_PROMPT.format(max_chars=self.max_chars, request=request[:2000])

    def _finish(self, request: str, raw: str | None) -> dict[str, Any]:
        """The state update: the model's title when usable, else the local fallback."""
        title = clean_title(raw, self.max_chars) if raw else ""
        return {"title": title or fallback_title(request, self.max_chars)}

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Title the thread when it has none yet."""
        request = self._request(state)
        if request is None:
            return None
        raw = None
        if self.model is not None:
            try:
                raw = self.model.invoke(self._prompt(request)).text
            except Exception as exc:  # noqa: BLE001 - a title is never worth failing a run
                log.warning("title_model_failed", error=str(exc))
        return self._finish(request, raw)

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        request = self._request(state)
        if request is None:
            return None
        raw = None
        if self.model is not None:
            try:
                raw = (await self.model.ainvoke(self._prompt(request))).text
            except Exception as exc:  # noqa: BLE001 - a title is never worth failing a run
                log.warning("title_model_failed", error=str(exc))
        return self._finish(request, raw)
