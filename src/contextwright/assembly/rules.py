"""Build rule sets, every one shipped: a recorded request rebuilds under the set it was built with.

When a release changes how :func:`~contextwright.assembly.assemble.build` renders a request
(when an item is bounded, which tool a marker names, how echoes are found), requests recorded
before must still rebuild byte for byte. So the rules are versioned like the store's
migrations and the engine's prefix texts (:mod:`contextwright.runtime.engine_texts`): an
append-only list, numbered from 1. A new request records the number of :data:`CURRENT`
(``inputs["rules"]``); a rebuild looks the number up with :func:`rule_set_for`, which also
reads the marker strings that requests recorded before numbers were (rule sets 1 to 6).

Adding a rule set (a rendering change for new requests):

1. give the new behaviour a ``bool`` field on :class:`RuleSet` whose default, ``False``, is
   the behaviour before it, so every shipped set keeps its meaning and its hash;
2. read the field in ``build()``;
3. append one entry to :data:`RULE_SETS`: the current set's fields, the new one set to
   ``True``, the next number and a one-line description;
4. pin its hash in ``tests/assembly/test_rules.py``.

A shipped rule set is never edited or removed: the test pins each one's hash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from contextwright.canonical import content_hash
from contextwright.errors import BuildError


class UnknownRuleSet(BuildError):
    """A recorded request names build rules this release does not have (a newer tree wrote it, or it was altered)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleSet:
    """One version of the build rules: a number, what it changed, and the behaviours it selects.

    Each behaviour defaults to ``False``, the rule before it, so a field added later leaves
    every earlier set as it was."""

    number: int
    description: str
    """One line: what this set changed from the one before."""
    uncorrected_views: bool = False
    """Bounded views are sized by the uncorrected counter (``build(view_estimate=...)``); before, by
    ``estimate``, so a view's bytes moved with the reconciled factor."""
    pinned_last: bool = False
    """Pinned items (the task, steering notes) are bounded only under their own yield, the last resort;
    before, with the other items under ``oversized_items``."""
    items_on_arrival: bool = False
    """Oversized items are shown bounded from the first request they appear in; before, whole until the
    body did not fit (the ``oversized_items`` yield)."""
    read_refs_when_pinned: bool = False
    """Markers and pointer stubs name the read tool only where the prefix pins it; before, always."""
    normalised_echoes: bool = False
    """What the assistant repeated of untrusted text is found by the normalised rule; before, verbatim only."""
    tool_trust_implied: bool = False
    """A tool's output at trust ``tool`` names neither trust nor source in its envelope where the prefix's
    framing says a tool result's block implies them (:data:`~contextwright.assembly.envelope.TOOL_TRUST_FRAMINGS`);
    before, every envelope named both."""
    short_nonces: bool = False
    """Envelope ids in the history are 12 hex digits
    (:data:`~contextwright.assembly.envelope.SHORT_NONCE_HEX_DIGITS`); before, 16, as in the prefix."""

    def behaviours(self) -> dict[str, bool]:
        """The behaviours this set selects (those that differ from the oldest rules), by field name."""
        return {name: True for name in _BEHAVIOURS if getattr(self, name)}

    def sha256(self) -> str:
        """Hash of the number and the behaviours (pinned per set by the tests: a shipped set never changes)."""
        return content_hash({"number": self.number, "behaviours": self.behaviours()})


_BEHAVIOURS: Final[tuple[str, ...]] = tuple(f.name for f in dataclasses.fields(RuleSet) if f.type in ("bool", bool))

RULE_SETS: tuple[RuleSet, ...] = (
    # Requests recorded from the first tree to 2026-12-01 14:40 (inputs held no marker).
    RuleSet(number=1, description="Items whole until the body does not fit; views sized by the corrected estimate"),
    # 2026-12-01 14:40 to 17:31; recorded as views: uncorrected, only with the oversized_items yield.
    RuleSet(number=2, description="Bounded views sized by the uncorrected counter", uncorrected_views=True),
    # 2026-12-01 17:31 to 19:52; recorded as pinned: last too, only with the oversized_items yield.
    RuleSet(number=3, description="Pinned items yield last", uncorrected_views=True, pinned_last=True),
    # 2026-12-01 19:52 to 20:09; from here every request recorded its markers.
    RuleSet(
        number=4,
        description="Oversized items bounded on arrival",
        uncorrected_views=True,
        pinned_last=True,
        items_on_arrival=True,
    ),
    # 2026-12-01 20:09 to 2026-12-07 09:21.
    RuleSet(
        number=5,
        description="Markers name the read tool only where the prefix pins it",
        uncorrected_views=True,
        pinned_last=True,
        items_on_arrival=True,
        read_refs_when_pinned=True,
    ),
    # 2026-12-07 09:21 on; requests recorded the markers, then the number alone.
    RuleSet(
        number=6,
        description="Echoes of untrusted text found by the normalised rule",
        uncorrected_views=True,
        pinned_last=True,
        items_on_arrival=True,
        read_refs_when_pinned=True,
        normalised_echoes=True,
    ),
    # 2026-12-07 to 2026-12-07 21:40.
    RuleSet(
        number=7,
        description="Tool outputs at trust tool leave trust and source to their tool-result block",
        uncorrected_views=True,
        pinned_last=True,
        items_on_arrival=True,
        read_refs_when_pinned=True,
        normalised_echoes=True,
        tool_trust_implied=True,
    ),
    # 2026-12-07 21:40 on.
    RuleSet(
        number=8,
        description="Envelope ids in the history are 12 hex digits instead of 16",
        uncorrected_views=True,
        pinned_last=True,
        items_on_arrival=True,
        read_refs_when_pinned=True,
        normalised_echoes=True,
        tool_trust_implied=True,
        short_nonces=True,
    ),
)

CURRENT: RuleSet = RULE_SETS[-1]
"""The rules new requests are built under."""

RULES_INPUT: Final[str] = "rules"
"""The key of a recorded request's ``inputs`` that holds its rule set's number."""

_LAST_MARKED: Final[int] = 6
"""The newest rule set requests named by markers; every later one is recorded by its number only."""

_MARKERS: Final[Mapping[str, tuple[str, str]]] = {
    # Behaviour: (inputs key, value), as requests recorded them before they recorded a number.
    "uncorrected_views": ("views", "uncorrected"),
    "pinned_last": ("pinned", "last"),
    "items_on_arrival": ("bounded", "on_arrival"),
    "read_refs_when_pinned": ("read_refs", "when_pinned"),
    "normalised_echoes": ("echoes", "normalised"),
}


def rule_set(number: int) -> RuleSet:
    """The rule set numbered ``number``; :class:`UnknownRuleSet` when there is none."""
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(RULE_SETS):
        raise UnknownRuleSet(f"build rule set {number!r} is not one of 1 to {len(RULE_SETS)} this release knows", rules=number)
    return RULE_SETS[number - 1]


def rule_set_for(inputs: Mapping[str, Any]) -> RuleSet:
    """The rule set a recorded request (its ``inputs``) was built under.

    A request records the number (``inputs["rules"]``); one recorded before numbers were
    records a marker string per behaviour, and the markers map to exactly one set. A
    combination no release wrote raises :class:`UnknownRuleSet` naming the markers.
    """
    if RULES_INPUT in inputs:
        return rule_set(inputs[RULES_INPUT])
    selected = {name: inputs.get(key) == value for name, (key, value) in _MARKERS.items()}
    for rules in RULE_SETS[:_LAST_MARKED]:
        if all(getattr(rules, name) == on for name, on in selected.items()):
            return rules
    markers = {key: inputs[key] for key, _ in _MARKERS.values() if key in inputs}
    raise UnknownRuleSet(f"no build rule set was recorded with the markers {markers!r}", markers=markers)


def rule_inputs(rules: RuleSet = CURRENT) -> dict[str, Any]:
    """What a recorded request's ``inputs`` holds to name ``rules``."""
    return {RULES_INPUT: rules.number}
