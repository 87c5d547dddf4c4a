"""Configuration: pydantic models of config.yaml, $ENV substitution, lookup and checks."""

from herdsman.config.loader import ConfigError, ConfigProblem, LoadedConfig, load_config, parse_config
from herdsman.config.schema import EMBEDDED_MODEL_NAME, HerdsmanConfig, ModelConfig

__all__ = [
    "EMBEDDED_MODEL_NAME",
    "ConfigError",
    "ConfigProblem",
    "HerdsmanConfig",
    "LoadedConfig",
    "ModelConfig",
    "load_config",
    "parse_config",
]
