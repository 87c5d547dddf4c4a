"""The config ``herdsman setup`` writes, from its answers: each provider, the sandbox picked by
what a machine has, channels, memory; secrets only ever as $VARIABLES."""

from __future__ import annotations

from pathlib import Path

import pytest

from herdsman.config import parse_config
from herdsman.setup.channels import credentials, required_credentials
from herdsman.setup.detect import Found, Machine, choose_sandbox
from herdsman.setup.files import SetupError, dump_document, read_document
from herdsman.setup.flags import Flags, answers_from_flags
from herdsman.setup.plan import Answers, ChannelAnswer, ModelAnswer, apply_answers
from herdsman.setup.providers import infer_provider

YES, NO = Found(True, "found", None), Found(False, "not here")


def machine(bwrap: Found = NO, docker: Found = NO, kubernetes: Found = NO) -> Machine:
    return Machine(bwrap, docker, kubernetes)


def written(answers: Answers, doc=None, env: dict | None = None):
    """Apply ``answers`` to a new (or given) config; the YAML text, the config loaded with the
    secrets written (and ``env``) and the outcome."""
    doc = read_document(Path("/nonexistent/config.yaml")) if doc is None else doc
    outcome = apply_answers(doc, answers)
    text = dump_document(doc)
    return text, parse_config(text, env={**(env or {}), **outcome.secrets}), outcome


@pytest.mark.parametrize(
    ("provider", "use", "model", "base_url", "variable"),
    [
        ("openai", "langchain_openai:ChatOpenAI", "gpt-4o-mini", None, "OPENAI_API_KEY"),
        ("anthropic", "langchain_anthropic:ChatAnthropic", "claude-sonnet-4-5", None, "ANTHROPIC_API_KEY"),
        ("deepseek", "langchain_openai:ChatOpenAI", "deepseek-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    ],
)
def test_each_hosted_provider_gets_a_model_with_its_key_in_a_variable(provider, use, model, base_url, variable) -> None:
    text, config, outcome = written(Answers(model=ModelAnswer(provider, api_key="sk-secret-1")))
    entry = config.model_by_name(provider)
    assert (entry.use, entry.model, entry.base_url) == (use, model, base_url)
    assert entry.api_key == "sk-secret-1"  # through the variable
    assert config.lead_model_name() == provider
    assert outcome.secrets == {variable: "sk-secret-1"}
    assert "sk-secret-1" not in text and f"${variable}" in text


def test_custom_server_with_and_without_a_key() -> None:
    _, config, outcome = written(Answers(model=ModelAnswer("custom", model="qwen3", base_url="http://gpu:8000/v1")))
    entry = config.model_by_name("custom")
    assert (entry.model, entry.base_url, entry.api_key) == ("qwen3", "http://gpu:8000/v1", "EMPTY")
    assert outcome.secrets == {}
    _, config, outcome = written(
        Answers(
            model=ModelAnswer(
                "custom", name="gpu", model="qwen3", base_url="http://gpu:8000/v1", api_key="tok", key_env="GPU_TOKEN"
            )
        )
    )
    assert config.model_by_name("gpu").api_key == "tok" and outcome.secrets == {"GPU_TOKEN": "tok"}


def test_embedded_model_points_the_lead_at_it_and_keeps_other_models() -> None:
    doc = read_document(Path("/nonexistent"))
    apply_answers(doc, Answers(model=ModelAnswer("openai", api_key="k")))
    text, config, _ = written(Answers(model=ModelAnswer("embedded")), doc, {"OPENAI_API_KEY": "k"})
    assert config.lead_model_name() == "embedded"
    assert [m.name for m in config.models] == ["openai"]


def test_a_second_run_with_the_same_answers_changes_nothing() -> None:
    answers = Answers(
        model=ModelAnswer("deepseek", api_key="k"),
        sandbox=choose_sandbox(machine(bwrap=YES)),
        channels={"telegram": ChannelAnswer(True, ["42"], {"TELEGRAM_BOT_TOKEN": "t"})},
        memory=True,
    )
    doc = read_document(Path("/nonexistent"))
    apply_answers(doc, answers)
    again = apply_answers(
        doc,
        Answers(
            model=ModelAnswer("deepseek"),
            sandbox=answers.sandbox,
            channels={"telegram": ChannelAnswer(True, ["42"])},
            memory=True,
        ),
    )
    assert again.changes == [] and again.secrets == {}


def test_a_literal_key_found_in_the_yaml_moves_to_env_and_a_named_variable_is_kept() -> None:
    doc = read_document(Path("/nonexistent"))
    doc["models"] = [
        {"name": "openai", "use": "langchain_openai:ChatOpenAI", "api_key": "sk-literal", "temperature": 0.3},
        {
            "name": "deepseek",
            "use": "langchain_openai:ChatOpenAI",
            "api_key": "$MY_DS_KEY",
            "base_url": "https://api.deepseek.com/v1",
        },
    ]
    text, config, outcome = written(Answers(model=ModelAnswer("openai")), doc, {"MY_DS_KEY": "y"})
    assert "sk-literal" not in text and outcome.secrets == {"OPENAI_API_KEY": "sk-literal"}
    assert config.model_by_name("openai").extra_kwargs() == {"temperature": 0.3}
    _, _, outcome = written(Answers(model=ModelAnswer("deepseek", api_key="new")), doc, {"OPENAI_API_KEY": "x"})
    assert outcome.secrets == {"MY_DS_KEY": "new"}


def test_infer_provider_reads_entries_back() -> None:
    assert infer_provider({"use": "langchain_anthropic:ChatAnthropic"}) == "anthropic"
    assert (
        infer_provider({"use": "langchain_openai:ChatOpenAI", "base_url": "https://api.deepseek.com/v1/"}) == "deepseek"
    )
    assert infer_provider({"use": "langchain_openai:ChatOpenAI", "base_url": "http://localhost:1/v1"}) == "custom"
    assert infer_provider({"use": "langchain_openai:ChatOpenAI"}) == "openai"


@pytest.mark.parametrize(
    ("found", "provider", "settings"),
    [
        (machine(bwrap=YES, docker=YES, kubernetes=YES), "local", {}),
        (
            machine(docker=Found(True, "engine", "unix:///run/podman/podman.sock")),
            "docker",
            {"docker.base_url": "unix:///run/podman/podman.sock"},
        ),
        (machine(docker=Found(True, "engine", "unix:///var/run/docker.sock")), "docker", {}),
        (
            machine(kubernetes=Found(True, "kubeconfig", "/srv/kube.yaml", "prod")),
            "kubernetes",
            {"kubernetes.kubeconfig": "/srv/kube.yaml"},
        ),
        (machine(), "local", {}),
    ],
)
def test_sandbox_is_picked_by_what_the_machine_has(found, provider, settings) -> None:
    choice = choose_sandbox(found)
    assert (choice.provider, choice.settings) == (provider, settings)
    _, config, _ = written(Answers(sandbox=choice))
    assert config.sandbox.provider == provider


def test_without_bubblewrap_the_note_says_bash_stays_off_and_an_asked_provider_wins() -> None:
    assert "bash tool stays off" in choose_sandbox(machine()).notes[0]
    choice = choose_sandbox(machine(bwrap=YES), "docker")
    assert choice.provider == "docker" and "not here" in choice.notes[0]
    assert any("herdsman.sandbox.image" in n for n in choice.notes)


def test_channel_credentials_come_from_the_schema_and_follow_the_mode() -> None:
    assert [c.env for c in credentials("slack")] == ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"]
    assert [c.key for c in required_credentials("slack")] == ["bot_token", "signing_secret"]
    assert [c.key for c in required_credentials("slack", {"mode": "socket"})] == ["bot_token", "app_token"]
    assert [c.key for c in required_credentials("feishu")] == ["app_id", "app_secret"]


def test_channels_and_memory_are_switched_with_their_secrets_in_variables() -> None:
    answers = Answers(
        channels={
            "telegram": ChannelAnswer(True, ["42", "alice"], {"TELEGRAM_BOT_TOKEN": "123:abc"}),
            "discord": ChannelAnswer(True, ["*"], {"DISCORD_BOT_TOKEN": "d-tok"}),
        },
        memory=True,
    )
    text, config, outcome = written(answers)
    assert config.channels.telegram.enabled and config.channels.telegram.bot_token == "123:abc"
    assert config.channels.telegram.allowed_users == ["42", "alice"]
    assert config.channels.discord.allowed_users == ["*"] and config.memory.enabled
    assert "123:abc" not in text and "d-tok" not in text
    doc = read_document(Path("/nonexistent"))
    apply_answers(doc, answers)
    env = {"TELEGRAM_BOT_TOKEN": "t", "DISCORD_BOT_TOKEN": "d"}
    _, config, _ = written(Answers(channels={"telegram": ChannelAnswer(False)}, memory=False), doc, env)
    assert not config.channels.telegram.enabled and config.channels.discord.enabled and not config.memory.enabled
    _, _, outcome = written(Answers(channels={"slack": ChannelAnswer(False)}), doc, env)
    assert outcome.changes == []  # off by default: nothing written for it


def test_non_interactive_flags_name_what_is_missing() -> None:
    doc = read_document(Path("/nonexistent"))
    cases = [
        (Flags(provider="openai"), "pass --api-key, or export OPENAI_API_KEY"),
        (Flags(provider="custom", model="m"), "--provider custom needs --base-url"),
        (Flags(provider="gemini"), "--provider 'gemini' is not one of openai, anthropic"),
        (
            Flags(channels=["telegram"]),
            "channels.telegram needs bot_token (pass --secret TELEGRAM_BOT_TOKEN=... or export",
        ),
        (Flags(channels=["icq"]), "there is no channel 'icq'"),
        (Flags(sandbox="vm"), "--sandbox 'vm' is not one of auto, local"),
    ]
    for flags, message in cases:
        with pytest.raises(SetupError, match=None) as info:
            answers_from_flags(flags, doc, {}, lambda: machine(bwrap=YES))
        assert message in str(info.value)


def test_non_interactive_keeps_what_the_config_says_and_reads_keys_from_the_environment() -> None:
    doc = read_document(Path("/nonexistent"))
    doc["sandbox"] = {"provider": "docker"}

    def no_detection() -> Machine:
        raise AssertionError("the sandbox was not asked about and the config names one")

    answers = answers_from_flags(Flags(provider="openai"), doc, {"OPENAI_API_KEY": "from-env"}, no_detection)
    assert answers.sandbox is None and answers.memory is None and answers.channels == {}
    text, config, outcome = written(answers, doc, {"OPENAI_API_KEY": "from-env"})
    assert outcome.secrets == {}  # the key stays where it is
    assert config.sandbox.provider == "docker"


def test_a_second_run_edits_the_leads_entry_of_the_same_provider() -> None:
    doc = read_document(Path("/nonexistent"))
    doc["models"] = [
        {
            "name": "gpu",
            "use": "langchain_openai:ChatOpenAI",
            "model": "qwen3",
            "base_url": "http://gpu:8000/v1",
            "api_key": "EMPTY",
            "max_tokens": 512,
        }
    ]
    doc["lead"] = {"model": "gpu"}
    answers = answers_from_flags(Flags(provider="custom", model="qwen3-coder"), doc, {}, lambda: machine(bwrap=YES))
    _, config, outcome = written(answers, doc)
    assert [m.name for m in config.models] == ["gpu"]
    gpu = config.model_by_name("gpu")
    assert (gpu.model, gpu.base_url, gpu.api_key, gpu.extra_kwargs()) == (
        "qwen3-coder",
        "http://gpu:8000/v1",
        "EMPTY",
        {"max_tokens": 512},
    )
    assert outcome.changes == ["models.0.model: qwen3-coder", "sandbox.provider: local"]  # the config named no sandbox
    answers = answers_from_flags(Flags(provider="openai", api_key="sk-o"), doc, {}, lambda: machine(bwrap=YES))
    _, config, _ = written(answers, doc)
    assert [m.name for m in config.models] == ["openai", "gpu"] and config.lead_model_name() == "openai"
