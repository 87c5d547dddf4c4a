"""API key status of configured models: set, missing (naming the variable), not needed, unknown."""

from __future__ import annotations

from herdsman.config import ModelConfig
from herdsman.models.keys import ApiKeyStatus, api_key_status, model_key_statuses
from tests.support import make_config

OPENAI = "langchain_openai:ChatOpenAI"


def entry(**kw: object) -> ModelConfig:
    return ModelConfig.model_validate({"name": "m", "use": OPENAI, **kw})


def test_a_key_in_config_is_set_and_never_echoed() -> None:
    status = api_key_status(entry(api_key="sk-secret-123"), env={})
    assert status.state == "set"
    assert "sk-secret-123" not in str(status.as_dict())


def test_a_provider_class_reads_its_own_variable() -> None:
    assert api_key_status(entry(), env={"OPENAI_API_KEY": "sk-x"}) == ApiKeyStatus(
        "set", "OPENAI_API_KEY", "read from $OPENAI_API_KEY"
    )
    missing = api_key_status(entry(), env={})
    assert missing.state == "missing" and missing.env_var == "OPENAI_API_KEY"
    assert "export OPENAI_API_KEY=" in missing.hint
    anthropic = api_key_status(entry(use="langchain_anthropic:ChatAnthropic"), env={"OPENAI_API_KEY": "sk-x"})
    assert (anthropic.state, anthropic.env_var) == ("missing", "ANTHROPIC_API_KEY")
    azure = api_key_status(entry(use="langchain_openai:AzureChatOpenAI"), env={"OPENAI_API_KEY": "sk-x"})
    assert (azure.state, azure.env_var) == ("missing", "AZURE_OPENAI_API_KEY")


def test_an_unset_variable_reference_is_missing_and_named() -> None:
    # "$VAR" left in place (a config built in code): its variable decides.
    status = api_key_status(entry(api_key="${MY_GATEWAY_KEY}"), env={})
    assert (status.state, status.env_var) == ("missing", "MY_GATEWAY_KEY")
    assert "export MY_GATEWAY_KEY=" in status.hint
    assert api_key_status(entry(api_key="$MY_GATEWAY_KEY"), env={"MY_GATEWAY_KEY": "k"}).state == "set"


def test_a_variable_set_to_nothing_is_missing() -> None:
    # The loader replaced "$OPENAI_API_KEY" with an empty value.
    status = api_key_status(entry(api_key=""), env={})
    assert (status.state, status.env_var) == ("missing", "OPENAI_API_KEY")
    assert api_key_status(entry(use="acme_llm:Chat", api_key=""), env={}).state == "missing"


def test_pass_through_key_arguments_count() -> None:
    assert (
        api_key_status(entry(use="langchain_google_genai:ChatGoogleGenerativeAI", google_api_key="g"), env={}).state
        == "set"
    )


def test_local_and_scripted_models_need_no_key() -> None:
    assert api_key_status(entry(use="herdsman.models.scripted:ScriptedChatModel"), env={}).state == "not needed"
    assert api_key_status(entry(use="langchain_ollama:ChatOllama"), env={}).state == "not needed"


def test_an_unknown_class_without_a_key_is_unknown() -> None:
    status = api_key_status(entry(use="acme_llm:Chat"), env={})
    assert status.state == "unknown" and "set api_key" in status.hint


def test_statuses_of_a_config(tmp_path) -> None:
    assert {k: s.state for k, s in model_key_statuses(make_config(tmp_path)).items()} == {"embedded": "not needed"}
    config = make_config(
        tmp_path,
        models=[
            {"name": "lead", "use": "herdsman.models.scripted:ScriptedChatModel"},
            {"name": "gpt", "use": OPENAI, "model": "gpt-4o-mini"},
        ],
    )
    assert {k: s.state for k, s in model_key_statuses(config, env={}).items()} == {
        "lead": "not needed",
        "gpt": "missing",
    }
