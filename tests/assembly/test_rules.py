"""Build rule sets are numbered and append-only: a shipped set never changes, and every recorded request names one."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from contextwright.assembly.rules import (
    CURRENT,
    RULE_SETS,
    RuleSet,
    UnknownRuleSet,
    rule_inputs,
    rule_set,
    rule_set_for,
)
from contextwright.errors import BuildError

SHIPPED = {
    1: "sha256:9aaf29321cbe0cee7ed9811b06a29d7d6c757fb9bda18694433c0602b668722e",
    2: "sha256:f4ddb67caf497e52f8c7a00ad7361a3ab3bcc3053dfa5649148e510d297b8d37",
    3: "sha256:c85dbc206da7a25d001ea916438c57182adc4368567bde2661ec32f2b39bbf35",
    4: "sha256:94f0ab5742891046d2ca825996b069dbd637cf41557bd122a3dc697bd5cb3c20",
    5: "sha256:0c00045e25ed910c9ee024461a72a35e60219526104f198a84673745286a1fa7",
    6: "sha256:256adad35cf2511ba250b589072cd320f9066467ba677085ae73fcf79f12b011",
    7: "sha256:039b2c4943b6a58778ae186baef3d7bfa84b86132c7011a799b5b874f67f3c2a",
    8: "sha256:bb34e296a3452d682079f0f4a17d016cb2895ff561c407d8fe53c05b5b20382e",
}
"""Each rule set's hash as shipped. A set changed in place would rebuild every request recorded under it
with other bytes: change the rules by appending a set (and an upgrade fixture written by the tree before)."""

FIXTURES = Path(__file__).parents[1] / "upgrade" / "fixtures"

MARKERS = {
    # What each tree's _rebuild_inputs recorded besides the cut point, the tail and the yields.
    1: {},
    2: {"views": "uncorrected"},
    3: {"views": "uncorrected", "pinned": "last"},
    4: {"bounded": "on_arrival", "views": "uncorrected", "pinned": "last"},
    5: {"bounded": "on_arrival", "views": "uncorrected", "pinned": "last", "read_refs": "when_pinned"},
    6: {
        "bounded": "on_arrival",
        "views": "uncorrected",
        "pinned": "last",
        "read_refs": "when_pinned",
        "echoes": "normalised",
    },
}


def test_every_shipped_rule_set_keeps_its_behaviours_and_the_newest_is_what_new_requests_use():
    assert {rules.number: rules.sha256() for rules in RULE_SETS} == SHIPPED
    assert [rules.number for rules in RULE_SETS] == list(range(1, len(RULE_SETS) + 1))
    assert CURRENT is RULE_SETS[-1]
    assert rule_inputs() == {"rules": CURRENT.number}


def test_each_rule_set_selects_behaviours_no_other_does_and_describes_itself_in_one_line():
    assert len({tuple(sorted(rules.behaviours())) for rules in RULE_SETS}) == len(RULE_SETS)
    assert all(rules.description and "\n" not in rules.description for rules in RULE_SETS)


def test_a_behaviour_added_later_defaults_to_the_rule_before_it_and_leaves_the_hashes_alone():
    # Each behaviour's default is False: the oldest rules. So a field added with a new set keeps
    # every earlier set's behaviours, and so its hash.
    behaviours = [f for f in dataclasses.fields(RuleSet) if f.name not in ("number", "description")]
    assert behaviours and all(f.default is False for f in behaviours)
    assert RULE_SETS[0].behaviours() == {}


@pytest.mark.parametrize(("number", "markers"), sorted(MARKERS.items()))
def test_markers_recorded_before_numbers_map_to_their_rule_set(number, markers):
    inputs = {"upto_seq": 3, "tail": {}, "yields": [], "estimator": "stress", **markers}
    assert rule_set_for(inputs) is rule_set(number)
    assert rule_set_for({**inputs, **rule_inputs(rule_set(number))}) is rule_set(number)


def test_a_number_or_marker_combination_no_release_wrote_is_a_typed_error_naming_it():
    for number in (0, len(RULE_SETS) + 1, "6", True, None):
        with pytest.raises(UnknownRuleSet, match="build rule set") as caught:
            rule_set_for({"rules": number})
        assert caught.value.rules == number
    # Echoes found by the normalised rule were never recorded without the read-tool marker.
    with pytest.raises(UnknownRuleSet, match="markers") as caught:
        rule_set_for({"bounded": "on_arrival", "echoes": "normalised"})
    assert caught.value.markers == {"bounded": "on_arrival", "echoes": "normalised"}
    assert isinstance(caught.value, BuildError)


def _recorded_inputs() -> list[tuple[str, dict]]:
    found = []
    for store in sorted(FIXTURES.glob("*/store.sqlite")):
        with sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True) as conn:
            rows = conn.execute("SELECT payload FROM cw_events WHERE type = 'context.request.built'").fetchall()
        found += [(store.parent.name, json.loads(payload).get("inputs") or {}) for (payload,) in rows]
    return found


def test_every_request_in_the_upgrade_fixtures_maps_to_a_rule_set():
    recorded = _recorded_inputs()
    assert recorded, "the upgrade fixtures hold recorded requests"
    named = {(tree, rule_set_for(inputs).number) for tree, inputs in recorded}
    # Check the fixtures cover the oldest rules, the marker era and its newest set, and the set before the current one.
    assert {number for _, number in named} >= {1, 5, 6, CURRENT.number - 1}


def test_a_new_request_records_its_rule_set_by_number_alone_and_rebuilds_under_it():
    from contextwright.testing.fakes import open_session

    _, session, _ = open_session()
    session.user("Summarise the failing test.")
    built = session.next_request()
    inputs = built.event.payload.inputs
    assert inputs["rules"] == CURRENT.number
    assert not {"bounded", "views", "pinned", "read_refs", "echoes"} & set(inputs)
    assert session.inspect(built.index).sha256() == built.neutral.sha256()
