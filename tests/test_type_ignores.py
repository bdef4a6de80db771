"""Every ``# type: ignore`` in the package names its error code and says why (docs/architecture.md, Gates)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import contextwright

PACKAGE_DIR = Path(contextwright.__file__).parent
IGNORE = re.compile(r"type:\s*ignore")
# The code in brackets, then a second comment with at least a few words of reason.
EXPLAINED = re.compile(r"^#\s*type:\s*ignore\[[-a-z, ]+\]\s+#\s*\S.{8,}$")


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each type-ignore comment in ``source`` without a code and a reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and IGNORE.search(token.string) and not EXPLAINED.match(token.string.strip()):
            found.append((token.start[0], token.string))
    return found


def test_every_type_ignore_in_the_package_has_a_code_and_a_reason():
    offenders = [
        f"{path.relative_to(PACKAGE_DIR)}:{line}: {comment}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        for line, comment in unexplained(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "\n".join(offenders)


def test_the_check_tells_explained_ignores_from_bare_ones():
    source = (
        "a = f()  # type: ignore\n"
        "b = f()  # type: ignore[arg-type]\n"
        "c = f()  # type: ignore[arg-type]  # the SDK's stubs lag its runtime\n"
        "d = '# type: ignore in a string is not a comment'\n"
    )
    assert [line for line, _ in unexplained(source)] == [1, 2]
