"""The one error the importers raise: a transcript file that cannot be read as claimed.

It sits directly under :class:`~contextwright.errors.ContextwrightError`. Missing files,
undecodable bytes, malformed or unknown records and unknown format names all end up
here, so a caller replaying many files needs a single ``except``.
"""

from __future__ import annotations

from contextwright.errors import ContextwrightError


class TranscriptError(ContextwrightError):
    """A transcript file is missing, malformed, or in an unknown format."""

    def __init__(self, path: str, problem: str, *, line: int | None = None, column: int | None = None) -> None:
        # path:line:column, the form editors and terminals turn into a link.
        where = path if line is None else f"{path}:{line}" + ("" if column is None else f":{column}")
        super().__init__(f"{where}: {problem}", path=path, line=line, column=column, problem=problem)
