"""The one error the importers raise: a transcript file that cannot be read as claimed.

It sits directly under :class:`~contextwright.errors.ContextwrightError`. Missing files,
undecodable bytes, malformed or unknown records and unknown format names all end up
here, so a caller replaying many files needs a single ``except``.
"""

from __future__ import annotations

from contextwright.errors import ContextwrightError


class TranscriptError(ContextwrightError):
    """A transcript file is missing, malformed, or in an unknown format."""

    def __init__(self, path: str, problem: str, *, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}", path=path, line=line, problem=problem)
