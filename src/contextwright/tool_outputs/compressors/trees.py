"""Problem markers on the nodes of dependency trees (``npm ls``, ``pnpm list``, ``yarn list``).

A tree prints every dependency on a line of its own under box-drawing rails; the broken
ones carry a marker word (``invalid``, ``UNMET DEPENDENCY``, ``missing``, ``extraneous``,
``ERR!``). Those nodes are the failures of the listing and are kept whatever rank the
other rules gave them; the healthy nodes around them stay free to fold. An unmet
optional dependency (a platform package for another system) is not a failure: such
nodes are labelled so an omission marker counts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import NORMAL, Marks

# Rails and branches before a node: "│ │ └── ", "├─┬ ", "+-- ", "`-- ".
_NODE = re.compile(r"^[\s│├└┬─┼|`+\\-]*(?:──|─┬|─ |-- |\+-)\s*(?P<node>\S.*)$")
_PROBLEM = re.compile(r"(?:^UNMET DEPENDENCY |\s(?:invalid|missing|extraneous)(?::|\s|$)|\bERR!)")
_OPTIONAL = re.compile(r"^UNMET OPTIONAL DEPENDENCY ")
_OPTIONAL_LABEL = "UNMET OPTIONAL DEPENDENCY"


def protect_tree_problems(lines: Sequence[str], marks: Marks) -> None:
    """Keep every tree node that carries a problem marker; label unmet optional nodes."""
    for index, line in enumerate(lines):
        # Every branch holds "─", "-- " or "+-": substring tests spare most lines the pattern.
        if not ("─" in line or "-- " in line or "+-" in line) or (m := _NODE.match(line)) is None:
            continue
        node = m.group("node")
        if _PROBLEM.search(node) is not None:
            marks.must(index)
            marks.failed = True
        elif _OPTIONAL.match(node) is not None and marks.priority[index] <= NORMAL:
            marks.labels[index] = _OPTIONAL_LABEL
