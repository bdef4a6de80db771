"""HeuristicEstimator and ExactEstimator behaviour: profiles, memo, corrections, margins."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.budget import estimator as est_mod
from contextwright.budget._content_kinds import CONTENT_KINDS
from contextwright.budget._reconcile import Reconciler
from contextwright.budget.estimator import (
    ANTHROPIC,
    ANTHROPIC_FACTOR,
    BODY_MARGIN,
    CL100K,
    O200K,
    UNKNOWN,
    ExactEstimator,
    HeuristicEstimator,
    TokenEstimator,
    apply_margin,
    encoding_for,
    prefix_estimator,
    profile_for,
)
from contextwright.errors import CanonicalJsonError, MissingDependencyError, UsageError

TEXT = "Run the tests again after fixing the import in src/app/main.py (line 42)."


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gpt-4o", O200K),
        ("gpt-4o-mini-2024-07-18", O200K),
        ("gpt-4.1", O200K),
        ("gpt-5", O200K),
        ("gpt-5-mini", O200K),
        ("o3-mini", O200K),
        ("o1", O200K),
        ("openai/gpt-4o", O200K),
        ("gpt-4", CL100K),
        ("gpt-4-turbo", CL100K),
        ("gpt-3.5-turbo", CL100K),
        ("claude-sonnet-4-5", ANTHROPIC),
        ("anthropic/claude-3-5-haiku-latest", ANTHROPIC),
        ("llama-3-70b", UNKNOWN),
        ("omni-model", UNKNOWN),
    ],
)
def test_models_map_to_profiles(model: str, profile: object) -> None:
    assert profile_for(model) is profile


def test_only_openai_families_have_an_encoding() -> None:
    assert encoding_for("gpt-4o") == "o200k_base"
    assert encoding_for("gpt-4") == "cl100k_base"
    assert encoding_for("claude-opus-4") is None
    assert encoding_for("mystery") is None


def test_anthropic_is_o200k_times_the_documented_factor() -> None:
    e = HeuristicEstimator()
    raw_o200k = e.raw(TEXT, model="gpt-4o")
    assert e.raw(TEXT, model="claude-sonnet-4-5") == pytest.approx(raw_o200k * ANTHROPIC_FACTOR)


def test_unknown_models_get_the_most_conservative_profile() -> None:
    e = HeuristicEstimator()
    for kind in CONTENT_KINDS:
        unknown = e.raw(TEXT, model="mystery-model", kind=kind)
        for model in ("gpt-4o", "gpt-4", "claude-sonnet-4-5", "claude-opus-4-7"):
            assert unknown >= e.raw(TEXT, model=model, kind=kind)


def test_heuristic_satisfies_the_protocol() -> None:
    assert isinstance(HeuristicEstimator(), TokenEstimator)
    assert HeuristicEstimator().exact is False


def test_empty_text_is_zero_and_any_text_is_positive() -> None:
    e = HeuristicEstimator()
    assert e.estimate("", model="gpt-4o") == 0
    assert e.estimate("a", model="gpt-4o") >= 1


def test_bad_arguments_raise_usage_errors() -> None:
    e = HeuristicEstimator()
    with pytest.raises(UsageError):
        e.estimate(TEXT, model="gpt-4o", kind="poetry")
    with pytest.raises(UsageError):
        e.estimate(TEXT, model="")
    with pytest.raises(UsageError):
        e.estimate(b"bytes", model="gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        HeuristicEstimator(memo_size=-1)
    with pytest.raises(CanonicalJsonError):
        e.estimate_json({"x": float("nan")}, model="gpt-4o")


def test_explicit_kind_changes_the_calibration() -> None:
    e = HeuristicEstimator()
    values = {kind: e.estimate(TEXT, model="gpt-4o", kind=kind) for kind in CONTENT_KINDS}
    assert len(set(values.values())) > 1


def test_estimate_json_uses_canonical_json() -> None:
    # Check that key order and whitespace do not change the estimate.
    e = HeuristicEstimator()
    a = {"b": [1, 2, {"z": "x", "a": None}], "a": "text"}
    b = {"a": "text", "b": [1, 2, {"a": None, "z": "x"}]}
    assert e.estimate_json(a, model="gpt-4o") == e.estimate_json(b, model="gpt-4o")
    assert e.estimate_json(a, model="gpt-4o") == e.estimate('{"a":"text","b":[1,2,{"a":null,"z":"x"}]}', model="gpt-4o")


def test_memo_is_keyed_by_model_kind_and_payload() -> None:
    e = HeuristicEstimator()
    e.estimate(TEXT, model="gpt-4o")
    e.estimate(TEXT, model="gpt-4o")
    assert (e.memo_misses, e.memo_hits) == (1, 1)
    e.estimate(TEXT, model="gpt-4o", kind="code")
    e.estimate(TEXT, model="gpt-4.1")
    e.estimate(TEXT + " ", model="gpt-4o")
    assert (e.memo_misses, e.memo_hits) == (4, 1)


def test_memo_keys_long_payloads_by_digest_and_short_ones_by_text() -> None:
    e = HeuristicEstimator()
    short, long = "x" * est_mod.MEMO_TEXT_KEY_CHARS, "x" * (est_mod.MEMO_TEXT_KEY_CHARS + 1)
    # Equal texts built separately (distinct objects) still hit, short or long.
    for text in (short, long):
        first = e.estimate(text, model="gpt-4o")
        assert e.estimate("".join(list(text)), model="gpt-4o") == first
    assert (e.memo_misses, e.memo_hits) == (2, 2)
    keys = [key[2] for key in e._memo]
    assert keys[0] == short
    assert isinstance(keys[1], bytes) and len(keys[1]) == 32  # the long text itself is not kept
    assert e.estimate(long + "x", model="gpt-4o") != e.estimate(short, model="gpt-4o")


def test_a_memo_hit_skips_the_model_lookup_and_bad_models_are_still_refused(monkeypatch) -> None:
    e = HeuristicEstimator()
    first = e.estimate(TEXT, model="gpt-4o")
    looked_up: list[str] = []
    real = est_mod.profile_for
    monkeypatch.setattr(est_mod, "profile_for", lambda model, *rest: looked_up.append(model) or real(model, *rest))
    assert e.estimate(TEXT, model="gpt-4o") == first and looked_up == []
    for bad in ("", "   "):
        with pytest.raises(UsageError):
            e.estimate(TEXT, model=bad)
    assert looked_up == ["", "   "]


def test_memo_is_a_bounded_lru() -> None:
    e = HeuristicEstimator(memo_size=3)
    for i in range(3):
        e.estimate(f"payload {i}", model="gpt-4o")
    e.estimate("payload 0", model="gpt-4o")  # refresh 0; 1 is now the oldest
    e.estimate("payload 3", model="gpt-4o")
    assert len(e) == 3
    misses = e.memo_misses
    e.estimate("payload 0", model="gpt-4o")
    assert e.memo_misses == misses
    e.estimate("payload 1", model="gpt-4o")
    assert e.memo_misses == misses + 1


def test_memo_disabled_still_estimates_the_same() -> None:
    assert HeuristicEstimator(memo_size=0).estimate(TEXT, model="gpt-4o") == HeuristicEstimator().estimate(TEXT, model="gpt-4o")


def test_correction_factor_applies_to_memoized_payloads() -> None:
    reconciler = Reconciler(warmup=0)
    e = HeuristicEstimator(reconciler=reconciler)
    before = e.estimate(TEXT, model="claude-sonnet-4-5")
    raw = e.raw_estimate(TEXT, model="claude-sonnet-4-5")
    for _ in range(20):
        reconciler.observe("claude-sonnet-4-5", 1000, 1400)
    after = e.estimate(TEXT, model="claude-sonnet-4-5")
    assert e.memo_misses == 1  # the second estimate came from the memo ...
    factor = reconciler.factor("claude-sonnet-4-5")
    assert factor > 1.3
    assert after == math.ceil(e.raw(TEXT, model="claude-sonnet-4-5") * factor - 1e-9)  # ... corrected
    assert after > before
    assert e.raw_estimate(TEXT, model="claude-sonnet-4-5") == raw
    assert e.estimate(TEXT, model="gpt-4o") == HeuristicEstimator().estimate(TEXT, model="gpt-4o")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.sampled_from([None, *CONTENT_KINDS]))
def test_same_state_same_estimate(text: str, kind: str | None) -> None:
    a, b = HeuristicEstimator(), HeuristicEstimator(memo_size=0)
    first = a.estimate(text, model="gpt-4o", kind=kind)
    assert a.estimate(text, model="gpt-4o", kind=kind) == first
    assert b.estimate(text, model="gpt-4o", kind=kind) == first


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=2000))
def test_digit_strings_are_covered_by_construction(digits: str) -> None:
    # o200k splits digits into groups of at most three; the digit weights are bounded below.
    assert HeuristicEstimator().estimate(digits, model="gpt-4o") >= math.ceil(len(digits) / 3)


def test_body_margin() -> None:
    e = HeuristicEstimator()
    plain = e.estimate(TEXT, model="gpt-4o")
    assert e.estimate_body(TEXT, model="gpt-4o") == math.ceil(plain * (1 + BODY_MARGIN) - 1e-9)
    assert apply_margin(100) == 105
    assert apply_margin(100, 0.0) == 100
    assert apply_margin(0) == 0
    with pytest.raises(UsageError):
        apply_margin(10, -0.1)


def test_exact_estimator_matches_tiktoken(o200k) -> None:  # type: ignore[no-untyped-def]
    from contextwright.budget._tokenizers import exact_token_counter

    exact = ExactEstimator()
    assert exact.exact is True
    assert isinstance(exact, TokenEstimator)
    assert exact.estimate(TEXT, model="gpt-4o") == o200k(TEXT)
    assert exact.estimate(TEXT, model="gpt-4") == exact_token_counter("cl100k_base")(TEXT)
    assert exact.estimate_json({"a": 1}, model="gpt-4o") == o200k('{"a":1}')
    assert exact.estimate_body(TEXT, model="gpt-4o") == apply_margin(o200k(TEXT))
    with pytest.raises(UsageError):
        exact.estimate(TEXT, model="claude-sonnet-4-5")


def test_exact_estimator_without_tiktoken_raises_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(module: str, *, extra: str, feature: str) -> None:
        raise MissingDependencyError(feature, extra, module)

    monkeypatch.setattr(est_mod, "require", missing)
    with pytest.raises(ImportError, match=r'pip install "contextwright\[tiktoken\]"'):
        ExactEstimator()
    # Check that the prefix falls back to the heuristic when no tokenizer is usable.
    fallback = HeuristicEstimator()
    assert prefix_estimator("gpt-4o", fallback=fallback) is fallback


def test_prefix_is_exact_where_a_tokenizer_exists(o200k) -> None:  # type: ignore[no-untyped-def]
    fallback = HeuristicEstimator()
    assert isinstance(prefix_estimator("gpt-4o", fallback=fallback), ExactEstimator)
    assert prefix_estimator("claude-sonnet-4-5", fallback=fallback) is fallback
    assert prefix_estimator("mystery", fallback=fallback) is fallback


def test_a_text_wrapped_in_a_first_and_last_line_reuses_the_census_of_its_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    inside = "\n  indented line with code();\n" + "error: 42 failed at x.py:7\n" * 100
    wrapped = '<cw-data id="0123" trust="untrusted" ref=":7">\n' + inside + '\n</cw-data id="0123">'
    expected = HeuristicEstimator(memo_size=0).estimate(wrapped, model="gpt-4o")
    e = HeuristicEstimator()
    e.estimate(inside, model="gpt-4o")
    scanned: list[str] = []
    real = est_mod.census
    monkeypatch.setattr(est_mod, "census", lambda text: scanned.append(text) or real(text))
    assert e.estimate(wrapped, model="gpt-4o") == expected
    assert inside not in scanned and wrapped not in scanned  # only the first and last lines were scanned
