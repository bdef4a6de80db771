"""Model limits and prices: the dated tables first, LiteLLM's maintained map for the rest, and which one answered."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contextwright import _model_map, models
from contextwright.errors import UsageError
from contextwright.pricing.prices import UnknownModel, price_for
from contextwright.telemetry.records import summarize
from contextwright.testing.fakes import open_session


def _needs_litellms_map() -> None:
    # Found on disk, not imported: importing LiteLLM tries to fetch a newer map over the network.
    if not _model_map.available():
        pytest.skip("LiteLLM's model map ships with the litellm extra, which is not installed")


@pytest.mark.parametrize(
    ("call", "model_id", "window"),
    [
        (models.openai, "o4-mini", 200_000),
        (models.openai, "o3-mini-2025-01-31", 200_000),
        (models.openai, "gpt-oss-120b", 131_072),
        (models.openai, "gpt-oss-20b", 131_072),
        (models.openai, "openai/gpt-5", 400_000),
        (models.anthropic, "anthropic/claude-sonnet-4-6", 1_000_000),
        (models.anthropic, "litellm_proxy/claude-haiku-4-5-20251001", 200_000),
    ],
)
def test_o_series_open_weight_and_routed_ids_resolve_from_the_table(call, model_id, window, monkeypatch):
    monkeypatch.setattr(_model_map, "_model_map", lambda: None)  # the table alone answers these
    model = call(model_id)
    assert model.id == model_id and model.context_window == window


def test_a_model_only_litellms_map_knows_takes_its_limits_from_there():
    _needs_litellms_map()
    model = models.openai("gpt-5.6-sol")
    entry = _model_map.lookup("gpt-5.6-sol", "openai")
    assert entry is not None and entry.exact
    assert model.context_window == entry.max_input_tokens and model.max_output_tokens == entry.max_output_tokens


def test_an_unknown_model_still_asks_for_its_window(monkeypatch):
    with pytest.raises(UsageError, match="pass context_window"):
        models.openai("no-such-model-anywhere")
    monkeypatch.setattr(_model_map, "_model_map", lambda: None)
    with pytest.raises(UsageError, match="pass context_window"):
        models.openai("gpt-5.6-sol")
    assert models.openai("gpt-5.6-sol", context_window=900_000).context_window == 900_000


def test_the_dated_table_prices_first_and_says_so():
    price = price_for("anthropic/claude-sonnet-4-6")
    assert price.model == "claude-sonnet-4-6" and price.source.startswith("Anthropic pricing page")


def test_a_price_only_litellms_map_knows_comes_from_there_and_says_so(monkeypatch):
    _needs_litellms_map()
    price = price_for("o1")
    assert price.source.startswith("LiteLLM model map (litellm ") and "'o1'" in price.source
    assert price.input == Decimal(15) and price.cache_read == Decimal("7.5") and price.output == Decimal(60)
    monkeypatch.setattr(_model_map, "_model_map", lambda: None)
    with pytest.raises(UnknownModel):
        price_for("o1")


def test_a_hosts_price_is_not_given_to_a_bare_id():
    _needs_litellms_map()
    entry = _model_map.lookup("gpt-oss-120b")
    assert entry is not None and not entry.exact  # limits from one host's entry, no price
    with pytest.raises(UnknownModel):
        price_for("gpt-oss-120b")


def _answer_once(session) -> None:  # type: ignore[no-untyped-def]
    session.user("Hello.")
    session.next_request()
    session.record(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "Hi."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1200, "output_tokens": 5},
        }
    )


def test_session_stats_name_the_price_source():
    _, session, _ = open_session()
    _answer_once(session)
    summary = summarize(session.history.events)
    assert summary.total_cost_usd is not None and summary.total_cost_usd > 0
    assert len(summary.priced_by) == 1 and summary.priced_by[0].startswith("Anthropic pricing page")


def test_the_stats_command_names_the_price_source(tmp_path):
    from typer.testing import CliRunner

    from contextwright.cli import app

    store = f"sqlite:///{tmp_path}/s.db"
    engine, session, _ = open_session(url=store)
    _answer_once(session)
    engine.close()
    result = CliRunner().invoke(app, ["stats", store])
    assert result.exit_code == 0, result.output
    assert "Costs priced with: Anthropic pricing page" in " ".join(result.output.split())
