"""compress_text gives compress's text and kind, and skips the line analysis for an output left whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.tool_outputs.compressors import compress, pipeline
from contextwright.tool_outputs.compressors.pipeline import compress_text

_FAILING_RUN = "\n".join(
    [
        "============================= test session starts ==============================",
        "collected 40 items",
        "",
        *(f"tests/test_m{n}.py ........                                          [{n * 2:3d}%]" for n in range(40)),
        "FAILED tests/test_m3.py::test_parse - ValueError: bad header",
        "========================= 1 failed, 39 passed in 2.31s =========================",
        "",
    ]
)


def _both(text: str, **arguments: object) -> tuple[tuple[str, str], tuple[str, str]]:
    full = compress(text, **arguments)
    return compress_text(text, **arguments), (full.text, full.kind)


@pytest.mark.parametrize("budget", [None, "auto", 60, 5_000])
@pytest.mark.parametrize("kind", ["auto", "pytest", "generic", "json", "vitest"])
@pytest.mark.parametrize("exit_code", [None, 0, 1])
def test_text_and_kind_are_compress_s(budget: object, kind: str, exit_code: int | None) -> None:
    fast, full = _both(_FAILING_RUN, kind=kind, budget_tokens=budget, exit_code=exit_code, pointer="sha256:ab")
    assert fast == full


def test_an_output_left_whole_is_not_analysed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_analysis(*arguments: object, **keywords: object) -> None:
        raise AssertionError("the lines of an output left whole were analysed")

    monkeypatch.setattr(pipeline, "analyse", no_analysis)
    assert compress_text("short output\n", kind="pytest", budget_tokens=100) == ("short output\n", "pytest")
    assert compress_text(_FAILING_RUN, kind="auto", budget_tokens=5_000) == (_FAILING_RUN, "pytest")
    with pytest.raises(AssertionError):
        compress_text(_FAILING_RUN, kind="auto", budget_tokens=60)


def test_bad_arguments_fail_as_in_compress() -> None:
    for arguments in ({"budget_tokens": 0}, {"pointer": "has space"}, {"kind": "no-such-kind"}):
        with pytest.raises(Exception) as fast:
            compress_text("short\n", **arguments)
        with pytest.raises(Exception) as full:
            compress("short\n", **arguments)
        assert type(fast.value) is type(full.value)
        assert str(fast.value) == str(full.value)


_LINES = st.sampled_from(
    [
        "ok",
        "",
        "\x1b[31mERROR\x1b[0m: boom",
        "src/app.py:12: error: bad type",
        '  File "x.py", line 3, in f',
        "ValueError: nope",
        "PASSED tests/test_a.py::test_b",
        "x" * 120,
        "warning: unused variable",
        "\x1b[0m",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_LINES, max_size=60),
    budget=st.one_of(st.none(), st.just("auto"), st.integers(1, 400)),
    exit_code=st.sampled_from([None, 0, 2]),
)
def test_text_and_kind_match_compress_on_any_output(lines: list[str], budget: object, exit_code: int | None) -> None:
    fast, full = _both("\n".join(lines), budget_tokens=budget, exit_code=exit_code)
    assert fast == full


def test_corpus_samples_come_out_as_from_compress(tool_outputs_dir) -> None:
    samples = sorted(p for p in tool_outputs_dir.rglob("*") if p.is_file() and p.suffix != ".json" and p.name != "README.md")
    assert samples
    for path in samples:
        text = path.read_text(encoding="utf-8", errors="replace")
        for budget in (None, "auto", 200):
            fast, full = _both(text, budget_tokens=budget, exit_code=1, pointer="sha256:ab")
            assert fast == full, path
