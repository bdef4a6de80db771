"""Error objects a schema validator prints, one per failed check, kept by their place and message.

ajv prints each failed check as an object literal across lines::

    {
      instancePath: '/version',
      schemaPath: '#/properties/version/pattern',
      keyword: 'pattern',
      params: { ... },
      message: 'must match pattern "..."'
    }

The ``instancePath`` (``dataPath`` in older releases) says where the document is wrong and
``message`` what is wrong: both are kept. The schema path, keyword and params repeat what
the message says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import NOISE, Marks

# The key that makes an object literal a validator's error rather than any data.
_SCHEMA_PATH = re.compile(r"^(?P<indent>\s*)schemaPath: ['\"]")
_KEPT_KEY = re.compile(r"^\s*(?:instancePath|dataPath|message): ['\"]")
_OBJECT_REACH = 12
"""An error object's keys lie within this many lines of its ``schemaPath``."""


def protect_error_objects(lines: Sequence[str], marks: Marks) -> None:
    """Keep the place and the message of each validator error object."""
    for index, line in enumerate(lines):
        if "schemaPath" not in line or (found := _SCHEMA_PATH.match(line)) is None:
            continue
        indent = found.group("indent")
        for near in _object_keys(lines, index, indent):
            if _KEPT_KEY.match(lines[near]) and marks.priority[near] != NOISE:
                marks.must(near, "validation error")


def _object_keys(lines: Sequence[str], index: int, indent: str) -> list[int]:
    """Lines of the object around ``index`` whose keys sit at ``indent``."""
    keys = []
    for step in (-1, 1):
        near = index + step
        while 0 <= near < len(lines) and abs(near - index) <= _OBJECT_REACH:
            text = lines[near]
            body = text[len(indent) :]
            if not text.startswith(indent) or not body.strip():
                break
            # A nested object's lines sit deeper, its closing brace at the key's indent.
            if not body[0].isspace() and body[0] not in "{}":
                keys.append(near)
            near += step
    return keys
