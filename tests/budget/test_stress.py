"""B4 on the text shapes that tokenize worst: not below the exact count on 99% of stress payloads.

The stress set (:mod:`contextwright.testing.stress`) holds ANSI-coloured short words, CJK,
Cyrillic and other scripts, numeric JSON, base64, hashes, minified JavaScript, emoji,
mixed scripts, URLs and UUIDs, plus English prose, code and logs as controls. The raw
estimate (before any correction factor or margin) must reach the exact count on at least
99% of each family's payloads; the corpus calibration, kept for old logs, does not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pytest

from contextwright.budget.estimator import (
    CALIBRATIONS,
    CORPUS_CALIBRATION,
    DEFAULT_CALIBRATION,
    STRESS_CALIBRATION,
    HeuristicEstimator,
    profile_for,
)
from contextwright.errors import UsageError
from contextwright.testing.stress import CONTROLS, FAMILIES, PER_FAMILY, stress_payloads

UNDER_RULE = 0.01


@pytest.fixture(scope="module")
def cl100k() -> Callable[[str], int]:
    """Exact cl100k_base token counter (skips without tiktoken)."""
    pytest.importorskip("tiktoken", reason="exact counts need tiktoken (installed in CI)")
    from contextwright.budget._tokenizers import exact_token_counter

    return exact_token_counter("cl100k_base")


def _under_by_family(calibration: str, model: str, exact: Callable[[str], int]) -> dict[str, float]:
    estimator = HeuristicEstimator(memo_size=0, calibration=calibration)
    under: dict[str, list[bool]] = defaultdict(list)
    for payload in stress_payloads():
        under[payload.family].append(estimator.raw_estimate(payload.text, model=model) < exact(payload.text))
    shares = {family: sum(flags) / len(flags) for family, flags in under.items()}
    shares["all"] = sum(sum(flags) for flags in under.values()) / sum(len(flags) for flags in under.values())
    return shares


def test_the_stress_set_is_seeded_and_covers_every_family() -> None:
    payloads = stress_payloads()
    assert len(payloads) == len(FAMILIES) * PER_FAMILY >= 500
    assert [p.text for p in payloads] == [p.text for p in stress_payloads()]
    assert [p.text for p in payloads] != [p.text for p in stress_payloads(seed=2)]
    lengths = sorted(len(p.text) for p in payloads)
    assert lengths[0] < 100 and lengths[-1] > 5_000, "short messages and whole tool outputs alike"
    # A family's texts do not depend on which other families are drawn.
    assert [p.text for p in stress_payloads(families=("korean",))] == [p.text for p in payloads if p.family == "korean"]
    text = {family: "".join(p.text for p in payloads if p.family == family) for family in FAMILIES}
    assert "\x1b[" in text["ansi"] and "\u200d" in text["emoji"] and "\U0001f1fa" in text["emoji"]
    with pytest.raises(ValueError, match="unknown stress families"):
        stress_payloads(families=("klingon",))


@pytest.mark.parametrize(("model", "counter"), [("gpt-4o", "o200k"), ("gpt-4", "cl100k")])
def test_raw_estimates_reach_the_exact_count_on_99_percent_of_every_family(
    model: str, counter: str, request: pytest.FixtureRequest
) -> None:
    exact = request.getfixturevalue(counter)
    shares = _under_by_family(DEFAULT_CALIBRATION, model, exact)
    assert {family: share for family, share in shares.items() if share > UNDER_RULE} == {}


def test_the_corpus_calibration_misses_the_rule_on_the_stress_set(o200k: Callable[[str], int]) -> None:
    # What the stress calibration fixed: the weights fitted on English corpora alone.
    shares = _under_by_family(CORPUS_CALIBRATION, "gpt-4o", o200k)
    assert shares["all"] > 0.1
    assert {"ansi", "japanese", "korean", "cyrillic", "arabic", "numeric-json"} <= {
        family for family, share in shares.items() if share > UNDER_RULE
    }


def test_plain_english_costs_the_same_under_both_calibrations() -> None:
    # The surcharges count nothing in English prose, code or logs: those cost what they did.
    corpus = HeuristicEstimator(memo_size=0, calibration=CORPUS_CALIBRATION)
    stress = HeuristicEstimator(memo_size=0, calibration=STRESS_CALIBRATION)
    for payload in stress_payloads(families=CONTROLS):
        for model in ("gpt-4o", "gpt-4", "claude-sonnet-4-5", "llama-3"):
            assert stress.raw(payload.text, model=model) == corpus.raw(payload.text, model=model)


GOLDEN_TEXTS = (
    "\x1b[31mFAILED\x1b[0m tests/test_io.py::test_read",
    "Предупреждение: ФАЙЛ не найден, щёлкните здесь",
    '[{"x": 0.5437806907431331, "y": -8.476507904249841e-08}]',
    "aGVsbG8gd29ybGQhIGhlbGxvIHdvcmxkIQ==",
    "これはテストです。サーバーのログを確認してください。",
    "The quick brown fox jumps over the lazy dog.",
)
# The estimator's raw estimates before calibrations existed: the corpus calibration must keep them,
# since requests recorded then are rebuilt with it.
GOLDEN_CORPUS = {
    "gpt-4o": [22, 23, 32, 21, 22, 15],
    "gpt-4": [20, 34, 32, 19, 28, 15],
    "claude-sonnet-4-5": [28, 30, 41, 27, 28, 19],
    "llama-3": [41, 58, 54, 41, 47, 26],
}


@pytest.mark.parametrize("model", sorted(GOLDEN_CORPUS))
def test_the_corpus_calibration_keeps_the_estimates_old_logs_were_sized_with(model: str) -> None:
    corpus = HeuristicEstimator(memo_size=0, calibration=CORPUS_CALIBRATION)
    stress = HeuristicEstimator(memo_size=0)
    assert [corpus.raw_estimate(t, model=model) for t in GOLDEN_TEXTS] == GOLDEN_CORPUS[model]
    # Each stress shape costs more under the default calibration; English the same.
    new = [stress.raw_estimate(t, model=model) for t in GOLDEN_TEXTS]
    assert all(n > o for n, o in zip(new[:-1], GOLDEN_CORPUS[model][:-1], strict=True))
    assert new[-1] == GOLDEN_CORPUS[model][-1]


def test_calibrations_are_named_and_checked() -> None:
    assert CALIBRATIONS == (CORPUS_CALIBRATION, STRESS_CALIBRATION) and DEFAULT_CALIBRATION == STRESS_CALIBRATION
    with pytest.raises(UsageError, match="unknown calibration"):
        HeuristicEstimator(calibration="v0")
    with pytest.raises(UsageError, match="unknown calibration"):
        profile_for("gpt-4o", "v0")
    assert profile_for("gpt-4o").calibration == STRESS_CALIBRATION
    assert profile_for("gpt-4o", CORPUS_CALIBRATION).calibration == CORPUS_CALIBRATION
    estimator = HeuristicEstimator(memo_size=7)
    sibling = estimator.calibrated(CORPUS_CALIBRATION)
    assert sibling.calibration == CORPUS_CALIBRATION and sibling.reconciler is estimator.reconciler
    assert estimator.calibrated(CORPUS_CALIBRATION) is sibling and sibling.calibrated(STRESS_CALIBRATION) is estimator
