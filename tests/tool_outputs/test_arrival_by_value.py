"""Tool outputs on arrival: what carries content is kept whole unless it exceeds the room's allowance.

A listing, a search, a file view is the evidence the model asked for: at 200k it reaches
the model whole. Reductions that lose nothing apply to everything; a noisy kind (a test
run) still loses its noise; a lossy cut comes only over the allowance the window sets.
"""

from __future__ import annotations

import pressure_samples as samples

from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session
from contextwright.tool_outputs.arrival import ToolOutputPolicy, prepare_output
from contextwright.tool_outputs.compressors.normalize import lossless

POINTER = "sha256:" + "c" * 64


def _count(text: str) -> int:
    return len(text) // 4


def _ls_la() -> str:
    rows = [
        "total 96",
        "drwxr-xr-x  9 dev staff  288 Mar  1 10:02 .",
        "drwxr-xr-x 24 dev staff  768 Feb 27 18:40 ..",
        "-rw-r--r--  1 dev staff 1204 Mar  1 09:58 .gitignore",
        "drwxr-xr-x  6 dev staff  192 Mar  1 10:01 billing_core",
        "-rw-r--r--  1 dev staff 3310 Feb 28 12:15 pyproject.toml",
        "-rw-r--r--  1 dev staff 5120 Feb 28 12:15 README.md",
        "drwxr-xr-x  5 dev staff  160 Mar  1 09:30 tests",
        "-rw-r--r--  1 dev staff  842 Feb 20 08:01 ledger_rounding_notes.txt",
        "-rwxr-xr-x  1 dev staff  211 Feb 20 08:01 run_invoice_batch.sh",
        "-rw-r--r--  1 dev staff 9981 Mar  1 10:02 uv.lock",
    ]
    return "\n".join(rows) + "\n"


def _grep() -> str:
    text, _ = samples.grep_matches(files=6, per_file=12)
    return text


def _file_view(*, padded: bool = True) -> str:
    width = 6 if padded else 0
    body = "".join(
        f"{n:>{width}}\tdef rounding_step_{n}(total, currency):\n"
        f"{n + 1:>{width}}\t    return round_half_even(total * RATE_{n}, currency)\n"
        for n in range(1, 160, 2)
    )
    return "Here's the result of running `cat -n` on /repo/billing/ledger.py:\n" + body


def _shown_in_session(output: str, *, window: int) -> str:
    _, session, _ = open_session("arrival", window=window)
    session.user("Find where invoice totals are rounded.")
    session.next_request()
    call = ToolCall(id="c1", name="bash", arguments={"command": "look"})
    session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
    event = session.tool_result(call.id, output, exit_code=0)
    assert event.payload.artifact is not None and event.payload.artifact.size_chars == len(output)
    return event.payload.output


def test_a_listing_a_search_and_a_file_view_reach_the_model_whole_at_200k():
    for output in (_ls_la(), _grep(), _file_view(padded=False)):
        assert len(output) > 500  # long enough that the compressors used to cut them on arrival
        assert _shown_in_session(output, window=200_000) == output
    # A numbered view loses only the padding before its numbers: every number and every line stay.
    assert _shown_in_session(_file_view(), window=200_000) == _file_view(padded=False)


def test_a_noisy_passing_test_run_is_still_reduced():
    tally = "========================= 120 passed in 3.07s ========================="
    lines = ["============================= test session starts ==============================", "collected 120 items"]
    lines += [f"tests/test_ledger.py::test_rounding_case_{n} PASSED                 [{n * 100 // 120:3d}%]" for n in range(120)]
    text, must = "\n".join([*lines, tally]) + "\n", [tally]
    shown = _shown_in_session(text, window=200_000)
    assert len(shown) < len(text) / 2
    assert all(line in shown.split("\n") for line in must)


def test_an_output_over_its_allowance_is_cut_and_one_within_it_is_not():
    view = _file_view(padded=False)
    whole = prepare_output(
        view, ref=POINTER, trust="tool", exit_code=0, policy=ToolOutputPolicy(budget_tokens=10_000), count_tokens=_count
    )
    assert whole.text == view and not whole.changed
    cut = prepare_output(
        view,
        ref=POINTER,
        trust="tool",
        exit_code=0,
        policy=ToolOutputPolicy(budget_tokens=300, max_chars=900),
        count_tokens=_count,
    )
    assert len(cut.text) <= 900 and POINTER in cut.text


def test_a_small_window_still_shows_a_short_listing_whole():
    # The allowance follows the room the window gives, not what older outputs already hold.
    assert _shown_in_session(_ls_la(), window=32_000) == _ls_la()


def test_the_padding_of_a_numbered_view_goes_and_everything_it_numbers_stays():
    arrows = "".join(f"{n:>6}\u2192        step_{n}()\n" for n in range(98, 103))
    assert lossless(arrows) == "".join(f"{n}\u2192        step_{n}()\n" for n in range(98, 103))
    # Counts, tables and a lone numbered line are not a numbered view: they keep their columns.
    for text in (
        "      3 retry\n     12 timeout\n      1 refused\n",
        "   42\tbilling.py\n    7\tledger.py\n  310\trounding.py\n",
        "     1\tonly line\n",
    ):
        assert lossless(text) == text


def test_reductions_that_lose_nothing():
    raw = (
        "\x1b[32mok\x1b[0m   \n"
        + "Downloading wheel 10%\rDownloading wheel 100%\n"
        + "retrying connection to db-7.internal\n" * 40
    )
    reduced = lossless(raw, pointer=POINTER)
    assert reduced.split("\n")[:3] == ["ok", "Downloading wheel 100%", "retrying connection to db-7.internal"]
    assert f"[... previous line repeated 39 more times (lines 4-42); full output: {POINTER} ...]" in reduced
    assert lossless("plain text\n") == "plain text\n"
    # A fold that would cost more than the repeats it replaces is not made.
    assert lossless("}\n}\n}\n") == "}\n}\n}\n"
