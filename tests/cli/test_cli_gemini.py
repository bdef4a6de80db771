"""The command line on a store with a Gemini session: inspect renders the Gemini body, the rest say what they cover."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from contextwright import models
from contextwright.cli import app
from contextwright.cli._demo import DEMO_MODELS, UnsupportedDemoProvider, run_demo
from contextwright.log import open_log
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import sample_agent

runner = CliRunner()
SESSION = "gemini-1"


@pytest.fixture(scope="module")
def gemini_store(tmp_path_factory):
    """A SQLite store with one Gemini session and two requests built; the bodies the engine rendered for them."""
    db = tmp_path_factory.mktemp("gemini") / "store.db"
    engine = Engine(open_log(f"sqlite:///{db}"))
    try:
        session = engine.session(SESSION, agent=sample_agent(), model=models.gemini("gemini-2.5-flash"))
        session.user("Why does logout keep the session key?")
        first = session.next_request().body()
        session.user("Look at src/app/session.py first.")
        second = session.next_request().body()
    finally:
        engine.close()
    return db, [first, second]


def _error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_inspect_prints_the_gemini_body_of_each_request(gemini_store):
    db, bodies = gemini_store
    for index, body in enumerate(bodies):
        assert set(body) == {"model", "contents", "config"}
        printed = runner.invoke(app, ["inspect", str(db), "-s", SESSION, "-r", str(index), "--wire", "gemini"])
        assert printed.exit_code == 0, printed.output
        assert json.loads(printed.stdout) == body


@pytest.mark.parametrize("wire", ["anthropic", "openai_chat", "openai_responses", "litellm"])
def test_inspect_refuses_another_providers_wire_and_names_the_gemini_one(gemini_store, wire):
    db, _ = gemini_store
    error = _error(runner.invoke(app, ["inspect", str(db), "-s", SESSION, "-r", "0", "--wire", wire]))
    assert f"session '{SESSION}' talks to google (gemini-2.5-flash): use --wire gemini" in error


def test_inspect_help_lists_every_registered_wire():
    from contextwright.providers.wires import WIRES

    text = " ".join(runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "200"}).output.split())
    assert all(name in text for name in WIRES)


def test_stats_misses_says_a_gemini_session_has_no_miss_attribution(gemini_store):
    db, _ = gemini_store
    result = runner.invoke(app, ["stats", str(db), "--misses"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"{SESSION}: cache misses not simulated: misses are attributed under the anthropic and openai" in text


def test_the_demo_offers_its_providers_only_and_refuses_google_with_a_typed_error(tmp_path):
    assert list(DEMO_MODELS) == ["anthropic", "openai"]
    help_text = " ".join(runner.invoke(app, ["demo", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "anthropic or openai (the demo simulates these providers' caches only)" in help_text
    refused = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.db"), "--provider", "google"])
    assert refused.exit_code == 2 and "--provider must be anthropic or openai" in refused.output
    with pytest.raises(UnsupportedDemoProvider) as caught:
        run_demo(tmp_path / "d.db", turns=1, window=64_000, provider="google", seed=7, report=None, quiet=True)
    assert caught.value.provider == "google" and caught.value.supported == ["anthropic", "openai"]
    assert not (tmp_path / "d.db").exists()  # refused before anything was written


def test_replay_refuses_google_as_a_provider_it_does_not_simulate(tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    refused = runner.invoke(app, ["replay", str(transcript), "--provider", "google"])
    assert refused.exit_code == 2 and "--provider must be anthropic or openai" in refused.output
