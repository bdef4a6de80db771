"""Model limits and list prices from LiteLLM's model map, when LiteLLM is installed.

LiteLLM keeps a map of thousands of models (windows, output limits, per-token prices) that
is updated with every release. The engine's own dated tables stay the default; this map
answers for the models they do not know. It is read as the JSON file LiteLLM ships, never
by importing LiteLLM (whose import fetches a newer map over the network), unless the
process has already imported LiteLLM, whose live ``litellm.model_cost`` then wins.

Ids are looked up as given, then without a router prefix (``anthropic/claude-...`` is
``claude-...``), then under the provider's own prefix. An id that names a host
(``groq/openai/gpt-oss-120b``) is found as written; a bare id that only hosts sell
(``gpt-oss-120b``) takes its limits from the first host in sorted order, and no price,
since each host sets its own.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

_SHIPPED_MAP = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True, kw_only=True, slots=True)
class MapEntry:
    """One model in LiteLLM's map, as far as the engine reads it."""

    key: str
    """The map's key the id was found under."""
    provider: str
    """LiteLLM's provider name (``anthropic``, ``openai``, ``groq``...)."""
    max_input_tokens: int | None
    max_output_tokens: int | None
    input_per_token: float | None
    output_per_token: float | None
    cache_read_per_token: float | None
    cache_write_per_token: float | None
    exact: bool
    """False when a bare id was matched to one host's entry: its limits hold, its price does not."""
    source: str
    """Which map answered, with LiteLLM's version."""


def available() -> bool:
    """True when a LiteLLM model map can be read here."""
    return _model_map() is not None


def lookup(model_id: str, provider: str | None = None) -> MapEntry | None:
    """The map's entry for ``model_id``, or None (also when LiteLLM is not installed)."""
    found = _model_map()
    if found is None:
        return None
    table, source = found
    name = model_id.strip()
    bare = name.rsplit("/", 1)[-1].split("@", 1)[0]
    candidates = [name, name.lower(), bare, bare.lower()]
    if provider:
        candidates += [f"{provider}/{bare}", f"{provider}/{bare.lower()}"]
    for key in candidates:
        entry = table.get(key)
        if isinstance(entry, Mapping) and _is_chat(entry):
            return _entry(key, entry, exact=True, source=source)
    hosted = sorted(key for key in table if key.lower().endswith("/" + bare.lower()) and _is_chat(table[key]))
    if hosted:
        return _entry(hosted[0], table[hosted[0]], exact=False, source=source)
    return None


def _is_chat(entry: Any) -> bool:
    return isinstance(entry, Mapping) and entry.get("mode", "chat") in ("chat", "responses", "completion")


def _entry(key: str, entry: Mapping[str, Any], *, exact: bool, source: str) -> MapEntry:
    return MapEntry(
        key=key,
        provider=str(entry.get("litellm_provider", "")),
        max_input_tokens=_int(entry.get("max_input_tokens")),
        max_output_tokens=_int(entry.get("max_output_tokens") or entry.get("max_tokens")),
        input_per_token=_float(entry.get("input_cost_per_token")),
        output_per_token=_float(entry.get("output_cost_per_token")),
        cache_read_per_token=_float(entry.get("cache_read_input_token_cost")),
        cache_write_per_token=_float(entry.get("cache_creation_input_token_cost")),
        exact=exact,
        source=source,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _model_map() -> tuple[Mapping[str, Any], str] | None:
    live = sys.modules.get("litellm")
    model_cost = getattr(live, "model_cost", None)
    if isinstance(model_cost, Mapping) and model_cost:
        return model_cost, f"LiteLLM model map (litellm {_version()}, as loaded)"
    return _shipped_map()


@cache
def _shipped_map() -> tuple[Mapping[str, Any], str] | None:
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / _SHIPPED_MAP
        if path.is_file():
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            return (table, f"LiteLLM model map (litellm {_version()})") if isinstance(table, dict) else None
    return None


def _version() -> str:
    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return "unknown version"
