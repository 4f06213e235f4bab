"""Where the coordinator is and how to prove who we are: the same rules as
the CLI (src/cli/client.cc ResolveConfig), so one client.yaml serves both."""
import os
from dataclasses import dataclass

import yaml

from .errors import ConfigError

DEFAULT_CONFIG = "~/.config/idlegrid/config.yaml"


@dataclass(frozen=True)
class ClientConfig:
    address: str  # host:port of the coordinator's gRPC API
    ca_file: str  # PEM of the coordinator's CA: the only CA trusted
    token: str    # API token, sent as "authorization: Bearer TOKEN"


def resolve_config(address=None, ca_file=None, token=None, config_file=None, environ=None):
    """Explicit values first, then IDLEGRID_ADDR / IDLEGRID_CA_FILE /
    IDLEGRID_TOKEN, then the YAML file `config_file` (or $IDLEGRID_CONFIG, or
    ~/.config/idlegrid/config.yaml) with keys address, ca_file, token. Raises
    ConfigError naming what is missing and where it was looked for."""
    env = os.environ if environ is None else environ
    values = {
        "address": address or env.get("IDLEGRID_ADDR", ""),
        "ca_file": ca_file or env.get("IDLEGRID_CA_FILE", ""),
        "token": token or env.get("IDLEGRID_TOKEN", ""),
    }
    path = config_file or env.get("IDLEGRID_CONFIG", "")
    if not path and env.get("HOME"):
        path = os.path.join(env["HOME"], ".config/idlegrid/config.yaml")
    if not all(values.values()) and path and os.path.exists(path):
        for key, value in _read_yaml(path).items():
            if key in values and not values[key]:
                values[key] = str(value)
    missing = [what for key, what in (("address", "address (address=, IDLEGRID_ADDR)"),
                                      ("ca_file", "CA file (ca_file=, IDLEGRID_CA_FILE)"),
                                      ("token", "token (token=, IDLEGRID_TOKEN)")) if not values[key]]
    if missing:
        raise ConfigError("no coordinator configured; missing " + ", ".join(missing) +
                          " and no config file at " + (path or DEFAULT_CONFIG) +
                          " (the coordinator writes one to DATA_DIR/client.yaml)")
    return ClientConfig(**values)


def _read_yaml(path):
    try:
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {e}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a map of address, ca_file, token")
    return loaded
