"""Whether each configured model has the API key it needs, without ever revealing the key.

A model's key comes from its ``api_key`` (often ``$VAR`` in config.yaml, replaced on load), from
another ``*api_key`` pass-through key, or from the environment variable its LangChain class reads
by itself (``OPENAI_API_KEY`` for ``langchain_openai``...). LangChain classes do not declare that
variable in a form that can be read without building the model, so the known providers are
listed here (:data:`PROVIDER_KEY_ENV`); classes that run on this machine need no key
(:data:`KEYLESS`). For any other class Herdsman cannot tell, and says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from herdsman.config.schema import EMBEDDED_MODEL_NAME, HerdsmanConfig, ModelConfig

KeyState = Literal["set", "missing", "not needed", "unknown"]

#: The environment variable a provider's LangChain class reads when no ``api_key`` is given,
#: by ``use`` ("module:Class") first, then by the module's top-level package.
PROVIDER_KEY_ENV: dict[str, str] = {
    "langchain_openai:AzureChatOpenAI": "AZURE_OPENAI_API_KEY",
    "langchain_openai": "OPENAI_API_KEY",
    "langchain_anthropic": "ANTHROPIC_API_KEY",
    "langchain_google_genai": "GOOGLE_API_KEY",
    "langchain_mistralai": "MISTRAL_API_KEY",
    "langchain_groq": "GROQ_API_KEY",
    "langchain_deepseek": "DEEPSEEK_API_KEY",
    "langchain_fireworks": "FIREWORKS_API_KEY",
    "langchain_together": "TOGETHER_API_KEY",
    "langchain_xai": "XAI_API_KEY",
    "langchain_cohere": "COHERE_API_KEY",
    "langchain_perplexity": "PPLX_API_KEY",
}

#: Modules (or ``module:Class``) whose models run locally and need no key.
KEYLESS: tuple[str, ...] = (
    "herdsman.models.scripted",
    "herdsman.models.local",
    "langchain_ollama",
    "langchain_core.language_models.fake_chat_models",
    "langchain_community.chat_models.fake",
    "langchain_community.chat_models.llamacpp",
)

_REFERENCE = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")


@dataclass(frozen=True)
class ApiKeyStatus:
    """The key situation of one model: ``state``, the variable involved, and what to do.

    ``env_var`` names the environment variable that holds (or should hold) the key, when known.
    ``hint`` is one sentence for a person; neither field ever contains the key itself.
    """

    state: KeyState
    env_var: str | None = None
    hint: str = ""

    def as_dict(self) -> dict[str, str | None]:
        """The status as JSON-ready data."""
        return asdict(self)


def provider_key_env(use: str) -> str | None:
    """The environment variable the class ``use`` reads its key from, if it is a known provider."""
    module = use.partition(":")[0]
    return PROVIDER_KEY_ENV.get(use) or PROVIDER_KEY_ENV.get(module.split(".")[0])


def is_keyless(use: str) -> bool:
    """Whether the class ``use`` runs locally and needs no API key."""
    module = use.partition(":")[0]
    return any(use == k or module == k or module.startswith(k + ".") for k in KEYLESS)


def api_key_status(entry: ModelConfig, env: Mapping[str, str] | None = None) -> ApiKeyStatus:
    """Whether the model ``entry`` has an API key (from config or ``env``, default the process's)."""
    env = os.environ if env is None else env
    configured = {"api_key": entry.api_key}
    configured |= {k: v for k, v in entry.extra_kwargs().items() if k.endswith("api_key") and isinstance(v, str)}
    for key, value in configured.items():
        if not value:
            continue
        ref = _REFERENCE.match(value.strip())
        if not ref:
            return ApiKeyStatus("set", None, f"{key} is set in config.yaml")
        # A "$VAR" left as is: a config built in code, not read through the loader.
        var = ref.group(1) or ref.group(2)
        if env.get(var):
            return ApiKeyStatus("set", var, f"{key} comes from ${var}")
        return ApiKeyStatus(
            "missing", var, f"{key} refers to ${var}, which is not set; export {var}=... and restart the gateway"
        )
    if is_keyless(entry.use):
        return ApiKeyStatus("not needed", None, "this model runs locally")
    var = provider_key_env(entry.use)
    emptied = entry.api_key is not None  # "api_key: $VAR" with VAR set to an empty value
    if var is None:
        if emptied:
            return ApiKeyStatus(
                "missing", None, "api_key is empty in config.yaml; give it a value (e.g. api_key: $MY_KEY)"
            )
        return ApiKeyStatus(
            "unknown",
            None,
            f"Herdsman does not know whether {entry.use} needs a key; set api_key if its provider asks for one",
        )
    if env.get(var):
        return ApiKeyStatus("set", var, f"read from ${var}")
    hint = f"export {var}=... (or set api_key: ${var} for this model) and restart the gateway"
    if entry.base_url:
        hint += "; a local server that ignores keys still needs some value, e.g. api_key: none"
    return ApiKeyStatus("missing", var, ("api_key is empty and " if emptied else "") + f"${var} is not set; {hint}")


def model_key_statuses(config: HerdsmanConfig, env: Mapping[str, str] | None = None) -> dict[str, ApiKeyStatus]:
    """Model name -> key status, for every configured model (the embedded one when none are)."""
    if not config.models:
        return {EMBEDDED_MODEL_NAME: ApiKeyStatus("not needed", None, "the embedded model runs on this machine")}
    return {m.name: api_key_status(m, env) for m in config.models}
