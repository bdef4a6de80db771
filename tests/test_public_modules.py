"""The "Public modules" table of docs/architecture.md names exactly the importable modules without an underscore.

A module whose dotted path has no part starting with ``_`` is an import path users may rely
on; adding, moving or making one private must change the table, so the list cannot rot.
"""

import re
from pathlib import Path

import contextwright

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(contextwright(?:\.\w+)*)` \| (.*) \|$")


def documented() -> set[str]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Public modules\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        row = ROW.match(line)
        if row:
            package, modules = row.groups()
            names.add(package)
            names.update(f"{package}.{module}" for module in re.findall(r"`(\w+)`", modules))
    return names


def public_in_tree() -> set[str]:
    root = Path(contextwright.__file__).parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            names.add(".".join(parts))
    return names


def test_the_documented_public_modules_are_the_ones_without_an_underscore():
    listed, present = documented(), public_in_tree()
    assert sorted(present - listed) == [], "public modules missing from docs/architecture.md (or make them private)"
    assert sorted(listed - present) == [], "docs/architecture.md lists modules that are gone or private"


def test_the_table_is_read():
    # A heading or row format change must not make the check above pass on an empty list.
    listed = documented()
    assert {"contextwright", "contextwright.errors", "contextwright.log.sqlite"} <= listed
