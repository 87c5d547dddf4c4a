"""config.yaml loading: lookup order, $VAR substitution, errors with YAML paths and fixes."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from herdsman.config import ConfigError, HerdsmanConfig, load_config, parse_config
from herdsman.config.loader import find_config_file


def problems(text: str, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "config.yaml", env or {})
    return [str(p) for p in info.value.problems]


def test_empty_file_gives_defaults() -> None:
    config = parse_config("", env={})
    assert config == HerdsmanConfig()
    assert config.checkpointer.type == "sqlite"
    assert config.lead_model_name() == "embedded"


def test_models_and_roles() -> None:
    config = parse_config(
        """
models:
  - name: fast
    use: langchain_openai:ChatOpenAI
    model: gpt-4o-mini
    api_key: $KEY
    temperature: 0.2
  - name: coder
    use: langchain_openai:ChatOpenAI
    model: qwen-coder
    base_url: ${BASE}/v1
lead: {model: coder}
title: {model: fast}
""",
        env={"KEY": "sk-1", "BASE": "http://localhost:9"},
    )
    assert config.lead_model_name() == "coder"
    assert config.models[0].api_key == "sk-1"
    assert config.models[1].base_url == "http://localhost:9/v1"
    assert config.models[0].extra_kwargs() == {"temperature": 0.2}


def test_unset_variable_is_named_with_its_path() -> None:
    found = problems("models:\n  - name: a\n    use: m:C\n    api_key: $OPENAI_API_KEY\n")
    assert found == [
        "models.0.api_key: environment variable $OPENAI_API_KEY is not set; export OPENAI_API_KEY=... or remove it"
    ]


def test_double_dollar_is_a_literal_dollar() -> None:
    config = parse_config("lead: {extra_instructions: 'costs $$5'}", env={})
    assert config.lead.extra_instructions == "costs $5"


def test_every_problem_reported_at_once() -> None:
    found = problems(
        """
sandbox: {provider: vm, comand_timeout_seconds: 3}
checkpointer: {type: postgres}
models:
  - name: x
    use: not-a-class-path
"""
    )
    joined = "\n".join(found)
    assert "sandbox.provider" in joined and "vm" in joined
    assert "sandbox.comand_timeout_seconds: unknown key" in joined
    assert "checkpointer.url is empty" in joined
    assert 'models.0.use: "not-a-class-path" is not of the form "module:Class"' in joined


def test_role_naming_unknown_model() -> None:
    found = problems("lead: {model: gpt-9}\n")
    assert any("lead.model: model 'gpt-9' is not defined" in p for p in found)


def test_malformed_yaml_names_line() -> None:
    found = problems("models:\n  - name: a\n   use: [\n")
    assert len(found) == 1 and "malformed YAML at line" in found[0]


def test_top_level_must_be_mapping() -> None:
    assert "top level must be a mapping" in problems("- a\n- b\n")[0]


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert find_config_file(None, {}) is None
    user = tmp_path / "home" / ".herdsman" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("lead: {max_steps: 7}\n")
    assert find_config_file(None, {}) == user
    local = tmp_path / "config.yaml"
    local.write_text("lead: {max_steps: 8}\n")
    assert find_config_file(None, {}) == local
    env_file = tmp_path / "env.yaml"
    env_file.write_text("lead: {max_steps: 9}\n")
    assert find_config_file(None, {"HERDSMAN_CONFIG": str(env_file)}) == env_file
    assert find_config_file(local, {"HERDSMAN_CONFIG": str(env_file)}) == local
    loaded = load_config(None, {"HERDSMAN_CONFIG": str(env_file)})
    assert loaded.config.lead.max_steps == 9
    # home is taken relative to the config file, not the cwd
    assert loaded.config.home == tmp_path / ".herdsman"


def test_env_file_beside_the_config_supplies_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``herdsman setup`` keeps secrets in .env beside config.yaml; the environment wins over it."""
    config = tmp_path / "config.yaml"
    config.write_text("models:\n  - {name: a, use: 'm:C', api_key: $KEY, base_url: $URL}\n")
    (tmp_path / ".env").write_text("# secrets\nKEY='sk-$HOME-1'\nURL=http://from-file\n")
    loaded = load_config(config, {"URL": "http://from-env"})
    assert loaded.config.models[0].api_key == "sk-$HOME-1"  # taken literally
    assert loaded.config.models[0].base_url == "http://from-env"
    (tmp_path / ".env").unlink()
    with pytest.raises(ConfigError) as info:
        load_config(config, {"URL": "u"})
    assert "$KEY is not set" in str(info.value)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / ".env").write_text("KEY=k\n")  # only the .env beside the file counts, not the cwd's
    monkeypatch.chdir(elsewhere)
    with pytest.raises(ConfigError):
        load_config(config, {"URL": "u"})


def test_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.yaml", {})
    assert "--config names" in str(info.value) and "not a file" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(None, {"HERDSMAN_CONFIG": str(tmp_path / "gone.yaml")})
    assert "HERDSMAN_CONFIG names" in str(info.value)


def test_example_config_is_valid_and_documents_every_section() -> None:
    example = Path(__file__).parents[2] / "config.example.yaml"
    text = example.read_text()
    env = {"OPENAI_API_KEY": "sk-test", "DEEPSEEK_API_KEY": "x", "DATABASE_URL": "postgresql://x@localhost/db"}
    config = parse_config(text, str(example), env)
    assert config.models, "the example shows at least one model"
    missing = [
        path
        for path, block, key in _example_keys(HerdsmanConfig, text)
        if not re.search(rf"(^|[\s{{,#-]){re.escape(key)}:", block, re.M)
    ]
    assert not missing, f"config.example.yaml does not show these keys of the schema: {missing}"


def _example_keys(model: type[BaseModel], text: str, path: str = "", block: str | None = None):
    """Every key of the schema, nested models and list items included, with the part of the example
    that must show it (the block of its top-level section, commented out or not)."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        here = f"{path}.{key}" if path else key
        section = block if block is not None else _section_block(text, key)
        yield here, section, key
        for inner in _models_in(field.annotation):
            if inner is not model:
                yield from _example_keys(inner, text, here, section)


def _section_block(text: str, section: str) -> str:
    """The lines of top-level ``section`` in the example (from its line to the next top-level key)."""
    found = re.search(rf"^(# )?{re.escape(section)}:.*?(?=^[a-z_]+:|\Z)", text, re.M | re.S)
    return found.group(0) if found else ""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's type (``list[X]``, ``X | None``, ``dict[str, X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
