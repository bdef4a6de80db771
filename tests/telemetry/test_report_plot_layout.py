"""The tokens plot is readable: axis scaled to the data, prefix classes visible, change labels apart."""

from __future__ import annotations

import itertools

import pytest
from typer.testing import CliRunner

pytest.importorskip("matplotlib", reason='plots need matplotlib: pip install "contextwright[report]"')

from matplotlib.backends.backend_agg import FigureCanvasAgg

from contextwright.cli import app
from contextwright.log import open_log
from contextwright.report.plots import PREFIX_CLASSES, label_rows, token_axis_top, tokens_figure
from contextwright.telemetry.records import request_records


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plot")
    db = folder / "d.db"
    # Results are bounded at entry to the room their share has left: a small window and more turns make relief run.
    args = ["demo", "--db", str(db), "--turns", "60", "--window", "16000", "--report", str(folder / "r.html"), "--json"]
    assert CliRunner().invoke(app, args).exit_code == 0
    with open_log(db, create=False, read_only=True) as log:
        return request_records(log.read("demo-ticket-4711"))


@pytest.fixture(scope="module")
def drawn(records):
    fig, _ = tokens_figure(records)
    FigureCanvasAgg(fig).draw()
    return fig


def test_the_token_axis_follows_the_data_not_a_distant_window(records):
    from dataclasses import replace

    peak = max(r.total_tokens for r in records)
    # The case of the issue: a window far above the data (the demo relieves pressure near its window).
    far = [replace(r, context_window=200_000) for r in records]
    assert peak * 1.5 < 200_000
    top, window_shown = token_axis_top(far)
    assert peak < top <= peak * 1.25 and not window_shown
    fig, _ = tokens_figure(far)
    FigureCanvasAgg(fig).draw()
    assert fig.axes[0].get_ylim()[1] == top
    labels = fig.axes[0].get_legend().get_texts()
    assert any("200,000" in t.get_text() and "above the scale" in t.get_text() for t in labels)


def test_the_window_is_drawn_when_the_data_comes_near_it(records):
    from dataclasses import replace

    near = [replace(r, context_window=int(max(x.total_tokens for x in records) * 1.2)) for r in records]
    top, window_shown = token_axis_top(near)
    assert window_shown and top >= near[0].context_window


def test_every_prefix_class_is_a_visible_bar_in_its_own_panel(records, drawn):
    panel = drawn.axes[1]
    present = [c for c in PREFIX_CLASSES if any(r.tokens_by_class.get(c) for r in records)]
    assert len(present) >= 4
    bars = panel.patches
    assert len(bars) == len(present)
    renderer = drawn.canvas.get_renderer()
    for bar in bars:
        assert bar.get_window_extent(renderer).width > 40  # pixels: a bar, not a sliver
    ticks = [t.get_text() for t in panel.get_yticklabels()]
    assert set(ticks) == {c.replace("_", " ") for c in present}


def test_change_labels_never_overlap(drawn):
    renderer = drawn.canvas.get_renderer()
    labels = [
        t for t in drawn.axes[0].texts if t.get_text() in ("prune", "compact") or "+" in t.get_text() or "compact" in t.get_text()
    ]
    assert len(labels) >= 3
    boxes = [t.get_window_extent(renderer) for t in labels]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    title = drawn.axes[0].title.get_window_extent(renderer)
    assert not any(title.overlaps(b) for b in boxes)


def test_label_rows_keep_labels_apart():
    assert label_rows([(0.0, 0.1), (0.05, 0.15), (0.12, 0.2), (0.13, 0.3)]) == [0, 1, 0, 2]
    assert label_rows([(0.0, 0.5)] * 4) == [0, 1, 2, None]
