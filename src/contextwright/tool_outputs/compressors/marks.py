"""What a kind analyser says about each line: how much it matters and what it is.

Every line gets a priority. ``MUST`` lines (failures, errors, summaries, locations)
are never dropped; ``NOISE`` lines (progress, passing tests) are always dropped;
``KEY`` levels between them are kept before ordinary lines when a budget forces a
choice. A label names what a line is ("passed test", "entries in /usr/bin") so that
omission markers can say what they hide, and lines with the same label can be
grouped.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

NOISE = 0
NORMAL = 10
KEY_LOW = 30
KEY = 50
KEY_HIGH = 70
MUST = 100


class Marks:
    """Mutable per-line annotations that one analyser fills in for one output."""

    __slots__ = ("failed", "labels", "owner", "priority")

    def __init__(self, count: int) -> None:
        self.priority = [NORMAL] * count
        self.labels = [""] * count
        # owner[i] == j: line i is a continuation of the block that starts at line j
        # and is grouped (hidden) together with it. An array: a list of ints costs 36 bytes a line.
        self.owner = array("q", range(count))
        self.failed = False

    def must(self, index: int, label: str = "") -> None:
        """Never drop this line."""
        self.priority[index] = MUST
        if label:
            self.labels[index] = label

    def key(self, index: int, level: int = KEY, label: str = "") -> None:
        """Prefer this line over ordinary ones; a higher level is kept first."""
        if self.priority[index] < level or self.priority[index] == NOISE:
            self.priority[index] = min(level, MUST - 1)
        if label:
            self.labels[index] = label

    def noise(self, index: int, label: str) -> None:
        """Always drop this line (counted under ``label`` in the marker), unless it is protected."""
        if self.priority[index] <= NORMAL:
            self.priority[index] = NOISE
            self.labels[index] = label

    def label(self, index: int, label: str) -> None:
        """Name what an ordinary line is, for grouping and for markers."""
        self.labels[index] = label

    def block(self, start: int, end: int) -> None:
        """Lines ``start+1..end`` belong to the block headed by ``start``."""
        for index in range(start + 1, end + 1):
            self.owner[index] = start


@dataclass(frozen=True, kw_only=True, slots=True)
class Policy:
    """How one kind wants its lines grouped and truncated."""

    head_share: float = 0.3
    """Share of the fill budget given to the head; the rest goes to the tail."""
    key_share: float = 1.0
    """Share of the budget left after protected lines that ranked (key) lines may take."""
    label_cap: int | None = None
    """Show at most this many ordinary blocks per label, even without a budget."""
    run_min: int | None = 8
    """Collapse runs of at least this many consecutive ordinary lines with one label."""
    run_labels: frozenset[str] | None = None
    """Only these labels collapse in runs (``None``: every label)."""
    shape_labels: bool = False
    """Label unlabelled lines by their shape (first words, digits folded) for grouping."""
    far_dedup: bool = True
    """Fold a long line that repeats an earlier one anywhere (off for diffs and data)."""
