"""The heuristic is conservative: below the exact o200k count on at most 1% of payloads.

Three kinds of evidence: the shared corpora (what the coefficients were fitted on),
hypothesis-generated texts of each kind built from sources the fit never saw (stdlib
docstrings and source, random JSON and log lines, the system's translation catalogs),
and adversarial strings that stress one character class each.
"""

from __future__ import annotations

import base64
import functools
import gettext
import importlib
import inspect
import json
import math
import random
import re
import string
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contextwright.budget._content_kinds import CONTENT_KINDS, census, classify
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.testing.corpus import corpus_path, missing_reason

UNDER_RULE = 0.01
SAMPLE = 200
NON_LATIN_SAMPLE = 1000
MODEL = "gpt-4o"

_STDLIB = ("json", "textwrap", "difflib", "argparse", "statistics", "functools", "shutil", "string", "pathlib")


@functools.cache
def _modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(name) for name in _STDLIB)


@functools.cache
def _doc_words() -> tuple[str, ...]:
    # Every occurrence is kept, so sampling follows real word frequencies (drawing from
    # the distinct words would make every sentence a string of rare words).
    words: list[str] = []
    for module in _modules():
        for _name, obj in sorted(vars(module).items()):
            doc = inspect.getdoc(obj) if callable(obj) else None
            if doc:
                words.extend(re.findall(r"[A-Za-z]{2,}", doc))
    return tuple(words)


@functools.cache
def _word() -> st.SearchStrategy[str]:
    return st.sampled_from(_doc_words())


@functools.cache
def _source_lines() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(inspect.getsource(m).splitlines(keepends=True)) for m in _modules())


@functools.cache
def _catalog(lang: str) -> tuple[str, ...]:
    folder = Path("/usr/share/locale") / lang / "LC_MESSAGES"
    texts: set[str] = set()
    for mo in sorted(folder.glob("*.mo")):
        try:
            with mo.open("rb") as handle:
                texts.update(v for v in gettext.GNUTranslations(handle)._catalog.values() if isinstance(v, str) and v.strip())
        except (OSError, UnicodeDecodeError, ValueError):
            continue
    return tuple(sorted(texts))


@st.composite
def prose_texts(draw: st.DrawFn) -> str:
    sentences = []
    for _ in range(draw(st.integers(1, 8))):
        chosen = draw(st.lists(_word(), min_size=3, max_size=25))
        sentence = " ".join(w.lower() for w in chosen)
        sentences.append(sentence[:1].upper() + sentence[1:] + draw(st.sampled_from([".", ".", "?", "!", ":"])))
    return draw(st.sampled_from([" ", "\n", "\n\n"])).join(sentences)


@st.composite
def code_texts(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(_source_lines()))
    start = draw(st.integers(0, max(0, len(lines) - 5)))
    return "".join(lines[start : start + draw(st.integers(3, 60))])


# Keys and strings are made of real words: random letter soup is not JSON anyone sends,
# and no character-class heuristic can price it without a vocabulary.
_KEYS = st.builds("_".join, st.lists(_word(), min_size=1, max_size=3))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.builds(" ".join, st.lists(_word(), max_size=6))
    | st.builds("/".join, st.lists(_word(), max_size=4)),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(_KEYS, children, max_size=6),
    max_leaves=10,
)


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    value = draw(st.dictionaries(_KEYS, _JSON, min_size=2, max_size=8))
    indent = draw(st.sampled_from([None, 2, 4]))
    return json.dumps(value, indent=indent, ensure_ascii=draw(st.booleans()))


@st.composite
def log_texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(3, 6))):
        stamp = "2024-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z".format(
            *(draw(st.integers(1, n)) for n in (12, 28, 23, 59, 59, 999))
        )
        level = draw(st.sampled_from(["DEBUG", "INFO", "WARNING", "ERROR", "INFO"]))
        name = ".".join(draw(st.lists(_word(), min_size=1, max_size=3))).lower()
        message = " ".join(draw(st.lists(_word(), min_size=2, max_size=12)))
        extra = draw(
            st.sampled_from(
                [
                    "",
                    f" id={draw(st.integers(0, 10**9))}",
                    f" path=/var/lib/{name}/{draw(st.integers(0, 999))}.log",
                    f" took {draw(st.integers(0, 9999))}ms",
                ]
            )
        )
        lines.append(f"{stamp} {level:7} [{name}] {message}{extra}")
    return "\n".join(lines) + "\n"


_NON_LATIN = ("zh_CN", "ja", "ko", "ru", "ar", "hi")


@st.composite
def non_latin_texts(draw: st.DrawFn) -> str:
    pool = _catalog(draw(st.sampled_from([lang for lang in _NON_LATIN if _catalog(lang)])))
    # Distinct messages: a text repeating one message is one payload's evidence, not five.
    return draw(st.sampled_from(["\n", " ", "\n\n"])).join(
        draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5, unique=True))
    )


def _under_rate(texts: list[str], o200k: Callable[[str], int], *, body: bool = False) -> float:
    e = HeuristicEstimator(memo_size=0)
    size = e.estimate_body if body else e.estimate
    return sum(size(t, model=MODEL) < o200k(t) for t in texts) / len(texts)


def _collect(strategy: st.SearchStrategy[str], examples: int = SAMPLE) -> list[str]:
    texts: list[str] = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(text: str) -> None:
        if text.strip():
            texts.append(text)

    collect()
    return texts


@pytest.mark.parametrize(
    "strategy",
    [prose_texts(), code_texts(), json_texts(), log_texts()],
    ids=["prose", "code", "json", "logs"],
)
def test_generated_texts_obey_the_under_rule(strategy: st.SearchStrategy[str], o200k: Callable[[str], int]) -> None:
    # Texts from sources the fit never saw hold the rule once the 5% body margin is on
    # (raw estimates of generated prose miss it narrowly; see docs/_sections/estimator.md).
    texts = _collect(strategy)
    assert len(texts) >= SAMPLE // 2
    assert _under_rate(texts, o200k, body=True) <= UNDER_RULE
    assert _under_rate(texts, o200k) <= 3 * UNDER_RULE


def test_generated_non_latin_texts_obey_the_under_rule(o200k: Callable[[str], int]) -> None:
    if not any(_catalog(lang) for lang in _NON_LATIN):
        pytest.skip("no system translation catalogs under /usr/share/locale")
    # Distinct texts, and enough of them: single catalog messages miss at about 0.3%, so
    # in 200 payloads two or three misses (a 1% "rate") are chance, not a trend.
    texts = list(dict.fromkeys(_collect(non_latin_texts(), examples=NON_LATIN_SAMPLE)))
    assert len(texts) >= NON_LATIN_SAMPLE // 2
    assert _under_rate(texts, o200k) <= UNDER_RULE


# Texts the estimator once put below the exact count, found by running the non-latin rule
# under many seeds: Arabic diacritics and all-caps Cyrillic cost tokens the census did not
# count until ``arabic_marks`` and ``cyrillic_upper_pairs``.
FOUND_UNDER = {
    "أُلبِث أُلبِث": 10,
    "صغّر صغّر صغّر صغّر صغّر": 15,
    "ПРЕДУПРЕЖДЕНИЕ": 11,
    "ПУТЬ СЕКЦИЯ ИМЯ": 11,
    "Если вы удалите строку здесь, то УКАЗАННЫЙ КОММИТ БУДЕТ УТЕРЯН.": 28,
}
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670]")


def _plain_letters(text: str) -> str:
    """``text`` without Arabic diacritics and with Cyrillic in lower case."""
    return "".join(c.lower() if "\u0400" <= c <= "\u042f" else c for c in _ARABIC_MARKS.sub("", text))


@settings(max_examples=60, derandomize=True, database=None)
@given(st.sampled_from(("ar", "ru")).flatmap(lambda lang: st.sampled_from(_catalog(lang) or ("",))))
@example(next(iter(FOUND_UNDER)))
@example("ПРЕДУПРЕЖДЕНИЕ")
def test_diacritics_and_capitals_add_to_the_estimate(text: str) -> None:
    # Each diacritic and each pair of Cyrillic capitals adds at least its floor (0.5 tokens).
    census_ = census(text)
    extra = 0.5 * (census_["arabic_marks"] + census_["cyrillic_upper_pairs"])
    plain = HeuristicEstimator(memo_size=0).estimate(_plain_letters(text), model=MODEL)
    assert HeuristicEstimator(memo_size=0).estimate(text, model=MODEL) >= math.floor(plain + extra)


@pytest.mark.parametrize("text", sorted(FOUND_UNDER))
def test_texts_once_under_counted_are_covered(text: str, o200k: Callable[[str], int]) -> None:
    assert o200k(text) == FOUND_UNDER[text]
    assert HeuristicEstimator(memo_size=0).estimate(text, model=MODEL) >= o200k(text)


def _adversarial() -> dict[str, str]:
    rng = random.Random(20240501)
    rows = [
        {
            "id": rng.randint(0, 10**9),
            "name": "".join(rng.choices(string.ascii_lowercase, k=8)),
            "ok": rng.random() < 0.5,
            "v": rng.random(),
        }
        for _ in range(80)
    ]
    return {
        "long digit run": "".join(rng.choices(string.digits, k=4000)),
        "base64": base64.b64encode(rng.randbytes(3000)).decode(),
        "base64 lines": base64.encodebytes(rng.randbytes(3000)).decode(),
        "hex digest run": rng.randbytes(1500).hex(),
        "emoji": "".join(chr(rng.randint(0x1F300, 0x1F64F)) for _ in range(400)),
        "emoji spaced": " ".join(chr(rng.randint(0x1F300, 0x1F64F)) for _ in range(400)),
        "whitespace heavy": "".join(rng.choice([" ", "  ", "\n", "\t", "    ", "word", "\n\n\n"]) for _ in range(2000)),
        "tabs": "\t" * 1000,
        "box drawing": "".join(rng.choices("─│┌┐└┘├┤┬┴┼═║", k=800)),
        "minified json": json.dumps(rows, separators=(",", ":")),
        "chinese": "这是一个用于测试的中文句子，包含一些常见的汉字。我们检查估算是否保守。" * 20,
        "japanese": "これは見積もりが保守的かどうかを確かめるための日本語の文章です。" * 20,
        "korean": "이 문장은 추정치가 보수적인지 확인하기 위한 한국어 문장입니다. " * 20,
    }


@pytest.mark.parametrize("name", list(_adversarial()))
def test_adversarial_texts_are_not_underestimated(name: str, o200k: Callable[[str], int]) -> None:
    text = _adversarial()[name]
    assert HeuristicEstimator().estimate(text, model=MODEL) >= o200k(text)


@pytest.mark.corpus
def test_corpus_payloads_obey_the_under_rule_per_kind(bench: ModuleType, o200k: Callable[[str], int]) -> None:
    traces, tools = corpus_path("traces"), corpus_path("tool-outputs")
    if traces is None or tools is None:
        pytest.skip(missing_reason("traces" if traces is None else "tool-outputs"))
    payloads = bench.trace_payloads(traces) + bench.tool_output_payloads(tools)
    by_kind: dict[str, list[str]] = {kind: [] for kind in CONTENT_KINDS}
    for p in payloads:
        by_kind[classify(census(p.text))].append(p.text)
    assert sum(map(len, by_kind.values())) > 5000
    for kind, texts in by_kind.items():
        if len(texts) >= 100:  # too few payloads make a 1% share meaningless
            assert _under_rate(texts, o200k) <= UNDER_RULE, kind
