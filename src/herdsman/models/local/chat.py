"""``ChatLocalLlama``: a LangChain chat model over an in-process ``llama_cpp.Llama``.

Why hand-written: llama-cpp-python's own chat layer cannot drive an agent. Its
``chatml-function-calling`` format drops the tools unless ``tool_choice`` is set and drops tool
messages from the history, and LangChain has no maintained llama.cpp chat model with tool calls.
So this module renders the prompt itself with the model's OWN chat template (the Jinja text in the
GGUF metadata, given ``messages`` and ``tools`` as Hugging Face templates expect; Qwen2.5's has a
tools section), runs a plain completion, and turns the ``<tool_call>`` text the model writes into
LangChain tool calls (see :mod:`herdsman.models.local.toolcalls`).

A reply that falls into a loop (the same line or paragraph again and again) is cut where its first
copy ends, while it streams, and continued once with llama.cpp's repeat and frequency penalties
(see :mod:`herdsman.models.local.repetition`); the copies are never streamed.

Process-wide rules: one loaded ``Llama`` per (path, n_ctx), because loading takes seconds and
~2 GB; and one generation at a time, because llama.cpp contexts are not thread-safe (and, across
processes on one machine, because concurrent generations thrash the CPU: see GenerationLock).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import AliasChoices, Field

from herdsman.logs import get_logger
from herdsman.models.call_drafts import DEFAULT_INTERVAL, CallDrafts
from herdsman.models.local.grammar import ToolGrammar, grammar_accepted, sampler_factory, tool_grammar
from herdsman.models.local.grammar import tool_name as _tool_name  # one definition for both modules
from herdsman.models.local.prompt_cache import PromptCache, default_cache_dir
from herdsman.models.local.repetition import LoopDetector
from herdsman.models.local.toolcalls import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    ParsedReply,
    parse_tool_calls,
    repeated_call_start,
    streamable_prefix,
)

log = get_logger(__name__)

TOOL_USE_HINT = (
    "Call a tool only when you need information or an action you do not have yet. "
    "Once a tool result holds the answer, reply to the user in plain text using that result; "
    "do not call the same tool again with the same arguments."
)
"""Added to the system prompt whenever tools are bound: it stops a small model from looping."""

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
STOP_STRINGS = ("<|im_end|>", "<|endoftext|>")

# Qwen2.5's own chat template, used only when a GGUF file carries none.
FALLBACK_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""


class ContextWindowError(ValueError):
    """The prompt does not fit the model's context window."""


# --------------------------------------------------------------------------------------------
# Loading: one Llama per (path, n_ctx) per process


@dataclass
class LoadedModel:
    """A loaded ``Llama`` with its compiled chat template and special-token texts."""

    llama: Any
    template: Any
    bos_token: str
    eos_token: str
    load_seconds: float


_LOAD_LOCK = threading.Lock()
_LOADED: dict[tuple[str, int], LoadedModel] = {}


class GenerationLock:
    """One generation at a time: a thread lock in this process, a file lock across processes.

    llama.cpp contexts are not thread-safe, hence the thread lock. Each generation also spreads
    over every core with spinning threads, so two processes generating at once (a gateway and a
    CLI, two test runs) do not share the CPU but thrash it, tens of times slower; the file lock
    (``flock``, released by the OS if a process dies) makes them take turns instead.
    """

    def __init__(self, path: str | None = None) -> None:
        self._thread = threading.Lock()
        self._path = path or os.path.join(tempfile.gettempdir(), "herdsman-llama-generation.lock")
        self._file: Any = None

    def __enter__(self) -> GenerationLock:
        self._thread.acquire()
        try:
            import fcntl

            self._file = open(self._path, "a")  # noqa: SIM115 - held until __exit__
            fcntl.flock(self._file, fcntl.LOCK_EX)
        except (ImportError, OSError):  # no flock here, or another user's lock file: thread lock only
            if self._file is not None:
                self._file.close()
            self._file = None
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._file is not None:
                self._file.close()  # closing releases the flock
                self._file = None
        finally:
            self._thread.release()


_prompt_caches: dict[tuple[str, str], PromptCache] = {}

GENERATION_LOCK = GenerationLock()
"""Held for the whole of each generation (see :class:`GenerationLock`)."""


def default_threads() -> int:
    """Threads for llama.cpp: every core this process may use (llama-cpp's default is half)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _compile_template(source: str) -> Any:
    """Compile a Hugging Face style chat template in a sandboxed Jinja environment."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise ValueError(f"chat template error: {message}")

    def tojson(value: Any, indent: int | None = None, **_: Any) -> str:
        return json.dumps(value, ensure_ascii=False, indent=indent)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)


def _token_text(llama: Any, token: int) -> str:
    try:
        return llama.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""
    except Exception:  # noqa: BLE001 - a missing special token is just empty
        return ""


def load_model(path: str, n_ctx: int, n_threads: int | None = None) -> LoadedModel:
    """The process-wide ``Llama`` for (``path``, ``n_ctx``), loading it on first use."""
    key = (str(path), int(n_ctx))
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]

        from llama_cpp import Llama

        threads = n_threads or default_threads()
        started = time.monotonic()
        llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        source = llama.metadata.get("tokenizer.chat_template") or FALLBACK_CHAT_TEMPLATE
        loaded = LoadedModel(
            llama=llama,
            template=_compile_template(source),
            bos_token=_token_text(llama, llama.token_bos()),
            eos_token=_token_text(llama, llama.token_eos()),
            load_seconds=time.monotonic() - started,
        )
        log.info("local_model_loaded", path=str(path), seconds=round(loaded.load_seconds, 1))
        if not _LOADED:
            atexit.register(unload_models)
        _LOADED[key] = loaded
        return loaded


def unload_models() -> None:
    """Free every loaded model; registered at exit, where llama.cpp's own finalizer would fail."""
    with _LOAD_LOCK:
        for loaded in _LOADED.values():
            try:
                loaded.llama.close()
            except Exception:  # noqa: BLE001 - best effort while the process ends
                pass
        _LOADED.clear()


# --------------------------------------------------------------------------------------------
# Messages -> template input


def _text(content: str | list[Any]) -> str:
    """Message content as text: text blocks joined, other blocks named, never None."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type', 'content')} omitted: this model reads text only]")
    return "\n".join(parts)


def to_template_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the ``messages`` list Hugging Face chat templates expect."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": _text(message.content)})
        elif isinstance(message, HumanMessage):
            out.append({"role": "user", "content": _text(message.content)})
        elif isinstance(message, AIMessage):
            item: dict[str, Any] = {"role": "assistant", "content": _text(message.content)}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.get("id"),
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call.get("args") or {}},
                    }
                    for call in message.tool_calls
                ]
            out.append(item)
        elif isinstance(message, ToolMessage):
            out.append({"role": "tool", "content": _text(message.content), "tool_call_id": message.tool_call_id})
        elif isinstance(message, ChatMessage):
            out.append({"role": message.role, "content": _text(message.content)})
        else:
            out.append({"role": "user", "content": _text(message.content)})
    return out


def _with_hint(messages: list[dict[str, Any]], hint: str) -> list[dict[str, Any]]:
    """``messages`` with ``hint`` appended to the leading system message (added if missing)."""
    if not hint:
        return messages
    if messages and messages[0]["role"] == "system":
        first = dict(messages[0], content=f"{messages[0]['content'].rstrip()}\n\n{hint}")
        return [first, *messages[1:]]
    return [{"role": "system", "content": f"{DEFAULT_SYSTEM_PROMPT}\n\n{hint}"}, *messages]


def _argument_names(tool: dict[str, Any]) -> list[str]:
    """The names of the tool's arguments, as its schema lists them."""
    return list(((tool.get("function", tool).get("parameters") or {}).get("properties") or {}).keys())


def _single_argument(tool: dict[str, Any]) -> str | None:
    """The tool's only required argument, or None."""
    required = (tool.get("function", tool).get("parameters") or {}).get("required") or []
    return required[0] if len(required) == 1 else None


def _prefill(tool_choice: Any, tool_names: list[str]) -> str:
    """Text that starts the reply so the model must call a tool (``any``, or one named tool).

    The prefill runs into the JSON (``{"name": "``): measured on Qwen2.5-Coder-1.5B, a bare
    ``<tool_call>`` prefill is often followed by an immediate end of turn. For a named tool it
    runs into the arguments' first key (``"arguments": {"``): after ``"arguments": `` the same
    model ended its turn every time when forced to call ``task`` (three benchmark tasks, and a
    rerun), and wrote the call with ``{"`` in place.
    """
    if isinstance(tool_choice, dict):
        tool_choice = tool_choice.get("function", {}).get("name") or tool_choice.get("name")
    if tool_choice in ("any", "required", True) and len(tool_names) == 1:
        tool_choice = tool_names[0]
    if tool_choice in ("any", "required", True):
        return f'{TOOL_CALL_OPEN}\n{{"name": "'
    if isinstance(tool_choice, str) and tool_choice in tool_names:
        return f'{TOOL_CALL_OPEN}\n{{"name": "{tool_choice}", "arguments": {{"'
    return ""


# --------------------------------------------------------------------------------------------
# The chat model


class _Pace:
    """The pace of one generation: output tokens per second from its first generated piece to its
    last (the prompt's processing before the first piece is not counted)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None

    def piece(self) -> None:
        """A piece was generated now."""
        self.last = time.monotonic()
        if self.first is None:
            self.first = self.last

    def tokens_per_second(self, output_tokens: int) -> float | None:
        """``output_tokens`` over the time between the first piece and the last (the first token
        is not counted: its time is the prompt's); None with under two tokens."""
        if self.first is None or self.last is None or output_tokens < 2 or self.last <= self.first:
            return None
        return round((output_tokens - 1) / (self.last - self.first), 2)


@dataclass
class _Request:
    """One generation, ready to run: prompt tokens, prefill and limits."""

    tokens: list[int]
    head: int
    """How many leading tokens are the system message (the part a new thread shares)."""
    prefill: str
    tool_names: dict[str, str | None]
    """Offered tools, each with its only required argument (None when it has several or none)."""
    tool_params: dict[str, list[str]]
    """Offered tools, each with the names of its arguments."""
    max_tokens: int
    stop: list[str]
    grammar: ToolGrammar | None = None
    """Constrains the calls the reply writes (see :mod:`herdsman.models.local.grammar`)."""


def _loop_cut(text: str, cut: int, floor: int) -> int:
    """Where to cut ``text`` at a loop whose first copy ends at ``cut``: there, or where a tool
    call still open there began (a call is written whole or not at all), never before ``floor``
    (the prefill)."""
    opened = text.rfind(TOOL_CALL_OPEN, 0, cut)
    if opened >= 0 and text.rfind(TOOL_CALL_CLOSE, 0, cut) < opened:
        cut = opened
    return max(cut, floor)


def _forced_name(tool_choice: Any) -> str | None:
    """The tool a ``tool_choice`` forces by name, or None."""
    if isinstance(tool_choice, dict):
        return tool_choice.get("function", {}).get("name") or tool_choice.get("name")
    return (
        tool_choice if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "any", "required") else None
    )


class ChatLocalLlama(BaseChatModel):
    """A chat model running a GGUF model in-process with llama.cpp, with tool calling.

    The prompt is the model's own chat template; tools bound with :meth:`bind_tools` are
    rendered into it, and the ``<tool_call>`` blocks the model writes come back as
    ``AIMessage.tool_calls``. Streaming passes plain text on as it is generated and holds back
    only what may be a tool call, which arrives in the last chunk.
    """

    model_path: str = Field(validation_alias=AliasChoices("model_path", "model"))
    model_name: str = "local-gguf"
    n_ctx: int = 8192
    n_threads: int | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.0
    seed: int | None = None
    """Sampling seed when temperature > 0 (temperature 0 is greedy and deterministic)."""
    tool_hint: str = TOOL_USE_HINT
    """Appended to the system prompt when tools are bound; empty to turn it off."""
    prompt_cache: bool = True
    """Keep the processed system message on disk so a new thread or process starts from it."""
    prompt_cache_dir: str | None = None
    """Where (default ``~/.cache/herdsman/prompt-cache``, or ``$HERDSMAN_PROMPT_CACHE``)."""
    repair_tool_calls: bool = True
    """Mend tool calls written as almost-JSON (json-repair); off only to measure what it buys."""
    stop_repetition: bool = True
    """Cut a reply that loops (the same line or paragraph again and again) while it streams, and
    continue it once with the retry penalties below (see :mod:`herdsman.models.local.repetition`)."""
    retry_repeat_penalty: float = 1.15
    """llama.cpp's ``repeat_penalty`` (over the last 64 tokens) for the continuation after a loop was cut."""
    retry_frequency_penalty: float = 0.3
    """llama.cpp's ``frequency_penalty`` for the continuation after a loop was cut."""
    constrained_tool_calls: bool = True
    """Grammar-constrained decoding: a call the model starts is always a well-formed call of a
    bound tool with valid arguments, and only calls it chose to write are calls (no calls
    parsed out of prose); off to measure what it buys against repair alone."""
    draft_interval: float = DEFAULT_INTERVAL
    """Seconds between two drafts of a tool call being written, sent on the run's custom stream
    (see :mod:`herdsman.models.call_drafts`): the call comes whole only at the end of the reply."""

    @property
    def _llm_type(self) -> str:
        return "herdsman-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "model_name": self.model_name,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "llama-cpp"
        params["ls_model_name"] = self.model_name
        return params

    def load(self) -> LoadedModel:
        """Load the model now (it is otherwise loaded on the first call); shared per process."""
        return load_model(self.model_path, self.n_ctx, self.n_threads)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (LangChain tools, functions, pydantic classes or OpenAI dicts).

        ``tool_choice``: ``None``/``"auto"`` lets the model decide, ``"none"`` hides the tools,
        ``"any"``/``"required"`` forces a call, a tool name forces that tool.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    # -- preparing a request ---------------------------------------------------------------

    def render_prompt(
        self,
        messages: Sequence[BaseMessage],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> tuple[str, str, list[str]]:
        """The prompt text, the reply prefill, and the names of the tools offered."""
        loaded = self.load()
        offered = [] if tool_choice == "none" else list(tools or [])
        names = [_tool_name(tool) for tool in offered]
        items = to_template_messages(messages)
        if offered:
            items = _with_hint(items, self.tool_hint)
        prompt = loaded.template.render(
            messages=items,
            tools=offered or None,
            add_generation_prompt=True,
            bos_token=loaded.bos_token,
            eos_token=loaded.eos_token,
        )
        prefill = "" if self.constrained_tool_calls else _prefill(tool_choice, names)
        return prompt, prefill, names

    def _request(self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> _Request:
        loaded = self.load()
        prompt, prefill, names = self.render_prompt(messages, kwargs.get("tools"), kwargs.get("tool_choice"))
        text = prompt + prefill
        add_bos = not (loaded.bos_token and text.startswith(loaded.bos_token))
        head_tokens = self._head_tokens(loaded, prompt, add_bos)
        tokens = loaded.llama.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        room = self.n_ctx - len(tokens)
        if room < 16:
            raise ContextWindowError(
                f"the prompt has {len(tokens)} tokens but the local model's context window is "
                f"{self.n_ctx}; raise local_model.n_ctx in config.yaml or shorten the conversation "
                "(enable summarization)"
            )
        max_tokens = min(int(kwargs.get("max_tokens") or self.max_tokens), room)
        head = len(head_tokens) if head_tokens and tokens[: len(head_tokens)] == head_tokens else 0
        bound = [t for t in kwargs.get("tools") or [] if _tool_name(t) in names]
        offered = {_tool_name(t): _single_argument(t) for t in bound}
        params = {_tool_name(t): _argument_names(t) for t in bound}
        grammar = self._grammar(bound, kwargs.get("tool_choice")) if self.constrained_tool_calls else None
        if grammar is not None and not grammar_accepted(loaded.llama, grammar):
            log.warning("tool_grammar_refused", tools=[_tool_name(t) for t in bound])
            grammar = None  # llama.cpp cannot parse it: decode unconstrained (and parse leniently)
        return _Request(tokens, head, prefill, offered, params, max_tokens, [*STOP_STRINGS, *(stop or [])], grammar)

    @staticmethod
    def _grammar(bound: list[dict[str, Any]], tool_choice: Any) -> ToolGrammar | None:
        """The grammar of this reply's calls: lazy (the model may answer instead) unless
        ``tool_choice`` forces a call, of the named tool when it names one."""
        name = _forced_name(tool_choice)
        chosen = [t for t in bound if _tool_name(t) == name] or bound if name is not None else bound
        try:
            return tool_grammar(chosen, forced=name is not None or tool_choice in ("any", "required", True))
        except Exception as exc:  # noqa: BLE001 - a schema the converter cannot express: decode unconstrained
            log.warning("tool_grammar_failed", tools=[_tool_name(t) for t in chosen], error=str(exc))
            return None

    @staticmethod
    def _head_tokens(loaded: LoadedModel, prompt: str, add_bos: bool) -> list[int]:
        """The tokens of the prompt's leading system message (what a new thread shares with
        the last one), or none when it does not start with one."""
        start = prompt[len(loaded.bos_token) :] if loaded.bos_token and prompt.startswith(loaded.bos_token) else prompt
        end = prompt.find(STOP_STRINGS[0])
        if not start.startswith("<|im_start|>system") or end < 0:
            return []
        head_text = prompt[: end + len(STOP_STRINGS[0])] + "\n"
        tokens: list[int] = loaded.llama.tokenize(head_text.encode("utf-8"), add_bos=add_bos, special=True)
        return tokens

    def _prompt_cache(self) -> PromptCache | None:
        if not self.prompt_cache:
            return None
        path = Path(self.model_path)
        try:
            size = path.stat().st_size
        except OSError:
            return None
        import llama_cpp

        model_id = f"{path.name}:{size}:{self.n_ctx}:{llama_cpp.__version__}"
        directory = Path(self.prompt_cache_dir).expanduser() if self.prompt_cache_dir else default_cache_dir()
        return _prompt_caches.setdefault((str(directory), model_id), PromptCache(directory, model_id))

    def _warm(self, request: _Request) -> None:
        """Bring the system message's processed state in (memory, disk, or computed and saved);
        called with the generation lock held."""
        cache = self._prompt_cache() if request.head else None
        if cache is None:
            return
        started = time.monotonic()
        outcome = cache.prepare(self.load().llama, request.tokens[: request.head])
        level = logging.DEBUG if outcome.how == "skipped" else logging.INFO
        log.log(
            level,
            "prompt_cache",
            outcome=outcome.how,
            tokens=outcome.tokens,
            computed=outcome.computed,
            seconds=round(time.monotonic() - started, 2),
        )

    @contextmanager
    def _sampling(self, request: _Request) -> Iterator[None]:
        """Generation with the request's grammar in llama.cpp's sampler chain (called with the
        generation lock held: the loaded ``Llama`` is shared)."""
        llama = self.load().llama
        if request.grammar is None:
            yield
            return
        llama._init_sampler = sampler_factory(llama, request.grammar)
        try:
            yield
        finally:
            del llama._init_sampler

    def _completion(self, request: _Request, stream: bool, penalized: bool = False) -> Any:
        """Run llama.cpp on ``request``; ``penalized``: with the retry penalties (after a loop was cut)."""
        return self.load().llama.create_completion(
            prompt=request.tokens,
            max_tokens=request.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            repeat_penalty=max(self.repeat_penalty, self.retry_repeat_penalty) if penalized else self.repeat_penalty,
            frequency_penalty=self.retry_frequency_penalty if penalized else 0.0,
            seed=self.seed,
            stop=request.stop,
            stream=stream,
        )

    def _usage(self, request: _Request, generated: str) -> UsageMetadata:
        llama = self.load().llama
        output = len(llama.tokenize(generated.encode("utf-8"), add_bos=False, special=True)) if generated else 0
        return UsageMetadata(
            input_tokens=len(request.tokens),
            output_tokens=output,
            total_tokens=len(request.tokens) + output,
        )

    def _metadata(
        self, parsed: ParsedReply, finish_reason: str | None, tokens_per_second: float | None
    ) -> dict[str, Any]:
        """The reply's ``response_metadata``: finish reason, model, and the output tokens per
        second of its generation (None when too few tokens to say)."""
        return {
            "finish_reason": "tool_calls" if parsed.tool_calls else finish_reason,
            "model_name": self.model_name,
            "model_provider": "llama-cpp",
            "output_tokens_per_second": tokens_per_second,
        }

    def _parse(self, text: str, request: _Request) -> ParsedReply:
        if request.tool_names:
            return parse_tool_calls(
                text,
                request.tool_names,
                repair=self.repair_tool_calls,
                params=request.tool_params,
                strict=request.grammar is not None,
            )
        return ParsedReply(content=text.strip())

    # -- generation ---------------------------------------------------------------------------

    def _replies(self, request: _Request) -> Iterator[tuple[str, str | None, int]]:
        """The reply so far (prefill included) after each piece llama.cpp generates, with that
        piece's finish reason and how much of it may be streamed (the rest may be the start of a
        loop, see :class:`~herdsman.models.local.repetition.LoopDetector`).

        While the reply holds back a tool call being written, its text so far goes out as a draft
        (at most every ``draft_interval`` seconds, see :class:`CallDrafts`).
        Called with the generation lock held. Generation stops early when a tool call closes
        that repeats one the reply already holds (see :func:`repeated_call_start`): the last
        reply yielded ends before the repeat, with the finish reason ``stop``. When the reply
        falls into a loop, it is cut where the loop's first copy ends (or where an unfinished
        tool call began) and continued once with the retry penalties; a second loop ends it there."""
        text = request.prefill
        detector = LoopDetector(ignore=(TOOL_CALL_OPEN,)) if self.stop_repetition else None
        drafts = CallDrafts(interval=self.draft_interval) if request.tool_names else None
        current: _Request | None = request
        penalized = False
        while current is not None:
            loop = None
            closed = text.count(TOOL_CALL_CLOSE)
            stream = self._completion(current, stream=True, penalized=penalized)
            try:
                for piece in stream:
                    choice = piece["choices"][0]
                    text += choice.get("text") or ""
                    if drafts is not None and drafts.due():
                        drafts.see(text[streamable_prefix(text, request.tool_names) :])
                    if request.tool_names and text.count(TOOL_CALL_CLOSE) > closed:
                        closed = text.count(TOOL_CALL_CLOSE)
                        cut = repeated_call_start(text)
                        if cut is not None:
                            log.info("local_model_repeated_call_stopped", calls=closed - 1)
                            yield text[:cut], "stop", cut
                            return
                    loop = detector.update(text) if detector is not None else None
                    if loop is not None:
                        break
                    yield text, choice.get("finish_reason"), detector.held if detector is not None else len(text)
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            if loop is None and detector is not None:
                loop = detector.finish()  # the last paragraph, a near-copy of an earlier one?
            if loop is None or detector is None:
                return
            text = text[: _loop_cut(text, loop.cut_in(text), len(request.prefill))]
            detector.update(text)
            current = None if penalized else self._continued(request, text)
            log.info(
                "local_model_loop_cut",
                unit_chars=loop.unit,
                copies=round(loop.copies, 1),
                action="continuing with repeat penalties" if current is not None else "stopped there",
            )
            if current is None:
                yield text, "stop", len(text)
                return
            yield text, None, detector.held
            penalized = True

    def _continued(self, request: _Request, text: str) -> _Request | None:
        """``request`` continued after ``text`` (the reply so far, prefill included), with the
        tokens it has left; None when too few are left."""
        llama = self.load().llama
        generated = text[len(request.prefill) :]
        tokens = llama.tokenize(generated.encode("utf-8"), add_bos=False, special=True) if generated else []
        left = min(request.max_tokens - len(tokens), self.n_ctx - len(request.tokens) - len(tokens))
        if left < 16:
            return None
        return replace(request, tokens=[*request.tokens, *tokens], max_tokens=left)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = self._request(messages, stop, kwargs)
        text, finish_reason = request.prefill, None
        pace = _Pace()
        with GENERATION_LOCK, self._sampling(request):
            self._warm(request)
            for text, finish, _ in self._replies(request):  # noqa: B007  # text's last value is the reply, read after the loop
                finish_reason = finish or finish_reason
                pace.piece()
        generated = text[len(request.prefill) :]
        parsed = self._parse(text, request)
        usage = self._usage(request, generated)
        message = AIMessage(
            content=parsed.content,
            tool_calls=parsed.tool_calls,
            usage_metadata=usage,
            response_metadata=self._metadata(parsed, finish_reason, pace.tokens_per_second(usage["output_tokens"])),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request = self._request(messages, stop, kwargs)
        text = request.prefill
        sent: int | None = None  # index in text up to which content was yielded
        finish_reason = None
        pace = _Pace()
        with GENERATION_LOCK, self._sampling(request):
            self._warm(request)
            for text, finish, held in self._replies(request):
                finish_reason = finish or finish_reason
                pace.piece()
                safe = min(streamable_prefix(text, request.tool_names), held)
                if safe <= 0:
                    continue
                if sent is None:
                    sent = len(text) - len(text.lstrip())
                if safe > sent:
                    yield ChatGenerationChunk(message=AIMessageChunk(content=text[sent:safe]))
                    sent = safe
        parsed = self._parse(text, request)
        lead = len(text) - len(text.lstrip())
        streamed = text[lead:sent] if sent is not None else ""
        if parsed.content.startswith(streamed):
            rest = parsed.content[len(streamed) :]
        else:  # cannot happen by streamable_prefix's contract; never repeat text already sent
            log.warning("streamed_text_not_a_prefix", action="dropping the remainder of the parsed reply")
            rest = ""
        chunks = [
            tool_call_chunk(
                name=call["name"], args=json.dumps(call["args"], ensure_ascii=False), id=call["id"], index=i
            )
            for i, call in enumerate(parsed.tool_calls)
        ]
        usage = self._usage(request, text[len(request.prefill) :])
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=rest,
                tool_call_chunks=chunks,
                usage_metadata=usage,
                response_metadata=self._metadata(parsed, finish_reason, pace.tokens_per_second(usage["output_tokens"])),
                chunk_position="last",
            )
        )
