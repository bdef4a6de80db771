"""JSON documents (API responses): an outline that keeps structure and never invents values.

The document is parsed and re-rendered in its own layout (indent, ASCII escaping),
so every line that survives is the line of the original. What shrinks: arrays show
their first items and say how many there are; objects beyond a depth collapse to
their key names; long strings are clipped with the count of clipped characters; low
value keys (links, nulls, empties) go first, named in an omission line. Identity and
error fields at the top (``id``, ``name``, ``status``, ``error``...) are never dropped
or clipped. Elisions use forms that cannot be mistaken for values (``{…18 keys}``,
``[… 27 more items ...]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_IDENTITY_KEYS = frozenset(
    {
        "id",
        "name",
        "full_name",
        "title",
        "number",
        "state",
        "status",
        "type",
        "kind",
        "total_count",
        "count",
        "incomplete_results",
        "default_branch",
        "login",
        "path",
        "sha",
        "ref",
        "key",
        "version",
        "total",
        "page",
        "per_page",
        "has_more",
        "next",
    }
)
_ERROR_KEYS = frozenset(
    {
        "error",
        "errors",
        "message",
        "detail",
        "details",
        "reason",
        "code",
        "exception",
        "warning",
        "warnings",
    }
)
_URL = re.compile(r"^(?:https?|wss?|ftp)://")


@dataclass(frozen=True, kw_only=True, slots=True)
class Level:
    """How much of a document one outline shows."""

    depth: int | None
    """Containers nested deeper than this collapse to a one-line outline."""
    items: int | None
    """Array items shown before an omission line."""
    keys: int | None
    """Object keys shown before an omission line (identity and error keys always show)."""
    chars: int | None
    """Strings longer than this are clipped."""


LEVELS: tuple[Level, ...] = (
    Level(depth=None, items=10, keys=None, chars=400),
    Level(depth=None, items=5, keys=40, chars=200),
    Level(depth=None, items=3, keys=30, chars=160),
    Level(depth=5, items=3, keys=25, chars=120),
    Level(depth=5, items=2, keys=20, chars=120),
    Level(depth=4, items=2, keys=15, chars=100),
    Level(depth=4, items=1, keys=15, chars=100),
    Level(depth=3, items=1, keys=12, chars=80),
    Level(depth=2, items=1, keys=10, chars=60),
    Level(depth=2, items=1, keys=8, chars=60),
    Level(depth=1, items=1, keys=6, chars=50),
    Level(depth=1, items=1, keys=3, chars=40),
)
"""Outlines from most to least detailed; without a budget the first one is used."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Style:
    indent: str
    ensure_ascii: bool
    protect: bool  # a failed response keeps its error texts whole


def parse_json(text: str) -> Any:
    """The parsed document, or ``None`` when ``text`` is not a JSON object or array."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def reports_error(value: Any) -> bool:
    """True when a response body carries an error (``error``/``errors`` set, or a 4xx/5xx status)."""
    if not isinstance(value, dict):
        return False
    if value.get("error") or value.get("errors"):
        return True
    for key in ("status", "code", "status_code", "statusCode"):
        code = value.get(key)
        if isinstance(code, str) and code.isdigit():
            code = int(code)
        if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
            return True
    return False


def protected_keys(value: Any) -> int:
    """Number of top-level identity and error fields (always shown)."""
    if not isinstance(value, dict):
        return 0
    return sum(1 for key in value if key in _IDENTITY_KEYS or key in _ERROR_KEYS)


def _layout(text: str) -> tuple[str, bool]:
    indent = "  "
    for line in text.splitlines()[1:20]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            indent = line[: len(line) - len(stripped)]
            break
    return indent, re.search(r"\\u[0-9a-fA-F]{4}", text) is not None


def _rank(key: str, value: Any) -> int:
    if key in _IDENTITY_KEYS or key in _ERROR_KEYS:
        return 0
    if value is None or value == "" or value == [] or value == {}:
        return 3
    if isinstance(value, str) and _URL.match(value):
        return 3
    if isinstance(value, (dict, list)):
        return 2
    return 1


def _outline(value: dict[str, Any] | list[Any]) -> str:
    if isinstance(value, dict):
        names = list(value)
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        return f"{{…{len(names)} keys: {shown}}}"
    kinds = sorted({type(item).__name__ for item in value})
    kind = {"dict": "object", "list": "array", "str": "string", "NoneType": "null"}
    kind_names = "/".join(kind.get(k, k) for k in kinds)
    return f"[…{len(value)} items: {kind_names}]"


def _scalar(value: Any, level: Level, style: _Style, *, whole: bool) -> str:
    if isinstance(value, str) and level.chars is not None and len(value) > level.chars and not whole:
        clipped = json.dumps(value[: level.chars], ensure_ascii=style.ensure_ascii)
        return f"{clipped}…(+{len(value) - level.chars:,} chars)"
    return json.dumps(value, ensure_ascii=style.ensure_ascii)


def _emit(
    value: Any,
    level: Level,
    style: _Style,
    *,
    depth: int,
    pad: str,
    prefix: str,
    comma: str,
    out: list[str],
    whole: bool = False,
) -> None:
    if not isinstance(value, (dict, list)) or not value:
        out.append(f"{pad}{prefix}{_scalar(value, level, style, whole=whole)}{comma}")
        return
    if depth > 0 and level.depth is not None and depth > level.depth:
        out.append(f"{pad}{prefix}{_outline(value)}{comma}")
        return
    inner = pad + style.indent
    if isinstance(value, list):
        shown = value if level.items is None else value[: level.items]
        rest = len(value) - len(shown)
        out.append(f"{pad}{prefix}[")
        for position, item in enumerate(shown):
            last = position == len(shown) - 1 and not rest
            _emit(
                item,
                level,
                style,
                depth=depth + 1,
                pad=inner,
                prefix="",
                comma="" if last else ",",
                out=out,
            )
        if rest:
            out.append(f"{inner}[... {rest:,} more items ({len(value):,} in total) ...]")
        out.append(f"{pad}]{comma}")
        return
    keys = list(value)
    chosen = set(keys)
    if level.keys is not None and len(keys) > level.keys:
        order = {k: i for i, k in enumerate(keys)}
        ranked = sorted(keys, key=lambda k: (_rank(k, value[k]), order[k]))
        always = [k for k in ranked if _rank(k, value[k]) == 0] if depth == 0 else []
        others = [k for k in ranked if k not in always]
        chosen = set(always + others[: max(level.keys - len(always), 0)])
    shown_keys = [k for k in keys if k in chosen]
    hidden = [k for k in keys if k not in chosen]
    out.append(f"{pad}{prefix}{{")
    for position, key in enumerate(shown_keys):
        last = position == len(shown_keys) - 1 and not hidden
        name = json.dumps(key, ensure_ascii=style.ensure_ascii)
        protect = style.protect and depth == 0 and key in _ERROR_KEYS
        _emit(
            value[key],
            level,
            style,
            depth=depth + 1,
            pad=inner,
            prefix=f"{name}: ",
            comma="" if last else ",",
            out=out,
            whole=protect or (depth == 0 and key in _IDENTITY_KEYS),
        )
    if hidden:
        listed = ", ".join(hidden[:12]) + (f", +{len(hidden) - 12} more" if len(hidden) > 12 else "")
        out.append(f"{inner}[... {len(hidden):,} more keys: {listed} ...]")
    out.append(f"{pad}}}{comma}")


def render_outline(value: dict[str, Any] | list[Any], text: str, level: Level, *, failed: bool) -> str:
    """Render ``value`` at ``level`` in the layout of the original ``text``."""
    indent, ensure_ascii = _layout(text)
    style = _Style(indent=indent, ensure_ascii=ensure_ascii, protect=failed)
    out: list[str] = []
    _emit(value, level, style, depth=0, pad="", prefix="", comma="", out=out)
    return "\n".join(out)


def compress_json(
    value: dict[str, Any] | list[Any],
    text: str,
    *,
    budget: int | None,
    count_tokens: Callable[[str], int],
    failed: bool,
    pointer: str | None,
) -> str:
    """The most detailed outline that fits ``budget`` (the first level without one)."""
    levels = LEVELS[:1] if budget is None else LEVELS
    chosen = ""
    for level in levels:
        chosen = render_outline(value, text, level, failed=failed)
        footer = f"\n[... JSON outline; full output: {pointer} ...]" if pointer else ""
        chosen += footer
        if budget is None or count_tokens(chosen) <= budget:
            break
    if text.endswith("\n"):
        chosen += "\n"
    return chosen
