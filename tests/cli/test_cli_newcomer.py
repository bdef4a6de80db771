"""What a new user meets first, with the README and --help only: each stumble, and that it is gone."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

import contextwright as cw
from contextwright.cli import app
from contextwright.errors import PrefixOverBudget
from contextwright.log import open_log
from contextwright.telemetry.records import summarize
from tests.cli.test_cli_replay import claude_code_session, write_jsonl

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


# -- run: the command's real exit status, whatever the shell does with pipes --------------------


def test_run_compresses_the_output_and_exits_with_the_commands_own_status():
    script = "import sys; print('collected 2 items'); print('FAILED tests/test_x.py::test_y - assert 1 == 2'); sys.exit(3)"
    result = runner.invoke(app, ["run", "--", sys.executable, "-c", script])
    # Check the failure line came through the compressor and the status is the command's, not 0.
    assert result.exit_code == 3, result.output
    assert "FAILED tests/test_x.py::test_y" in result.output


def test_run_passes_options_after_the_command_to_the_command():
    result = runner.invoke(app, ["run", sys.executable, "-c", "import sys; print('to stderr', file=sys.stderr)"])
    assert result.exit_code == 0, result.output
    assert "to stderr" in result.output  # stderr is captured with stdout


def test_run_of_a_command_that_does_not_exist_is_127_with_its_name():
    result = runner.invoke(app, ["run", "--", "contextwright-no-such-command", "-x"])
    assert result.exit_code == 127
    assert "command not found: contextwright-no-such-command" in result.output


def test_run_of_a_command_killed_by_a_signal_exits_as_a_shell_would():
    script = "import os, signal; print('halfway'); os.kill(os.getpid(), signal.SIGTERM)"
    result = runner.invoke(app, ["run", "--", sys.executable, "-c", script])
    assert result.exit_code == 128 + 15, result.output
    assert "was stopped by SIGTERM" in " ".join(result.output.split()) and "halfway" in result.output


def test_the_readme_pipes_no_exit_status_into_compress():
    text = README.read_text()
    # `cmd | contextwright compress --exit-code $?` hands compress the status of the command before the pipe.
    assert not re.search(r"\\?\|\s*contextwright compress[^`|]*--exit-code \$\?", text)
    assert "contextwright run -- pytest" in text


# -- budgets: the error says which setting raises the cap, the README lists them all --------------


def _tools(count: int, description: str) -> list[cw.Tool]:
    return [cw.Tool(f"tool_{i}", description, {"type": "object", "properties": {}}) for i in range(count)]


@pytest.mark.parametrize(
    ("count", "description", "setting"),
    [
        (25, "Runs one of the project's ordinary tasks and reports what it printed. " * 8, "tools_tokens"),
        (62, "A tool.", "tools_count"),
    ],
)
def test_a_prefix_over_its_cap_names_the_setting_that_raises_it(count, description, setting):
    engine = cw.Engine.open("memory://")
    agent = cw.AgentSpec(policy="Be careful.", tools=_tools(count, description))
    model = cw.models.anthropic("claude-sonnet-4-6")
    with pytest.raises(PrefixOverBudget) as info:
        engine.session("s", agent=agent, model=model)
    assert f"budgets=contextwright.BudgetConfig({setting}=...)" in str(info.value)
    assert "Engine.open" in str(info.value) and info.value.fields["setting"] == setting
    # Check the way the message names works: the same agent opens once the cap is raised.
    raised = cw.Engine.open("memory://", budgets=cw.BudgetConfig(**{setting: 100_000}))
    raised.session("s", agent=agent, model=model)


def test_the_readme_documents_every_budget_setting_with_its_default():
    section = README.read_text().split("## Budget settings", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `(\w+)` \| ([\d.,]+) \|", section, re.M))
    defaults = cw.BudgetConfig()
    assert set(documented) == {f.name for f in fields(cw.BudgetConfig)}
    for name, shown in documented.items():
        assert float(shown.replace(",", "")) == getattr(defaults, name), name


# -- replay into a store: idempotent per transcript, refused (naming --replace) when partly stored ---


def _session_file(path: Path, session: str) -> Path:
    records = claude_code_session()
    for record in records:
        record["sessionId"] = session
    return write_jsonl(path, records)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "replays.db")
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    return f"{dsn}?schema={schema}"


def _requests_per_session(store: str) -> dict[str, int]:
    with open_log(store) as log:
        return {sid: summarize(log.read(sid)).requests for sid in log.sessions()}


def _assert_time_never_runs_backwards(store: str) -> None:
    with open_log(store) as log:
        for sid in log.sessions():
            times = [event.at for event in log.read(sid)]
            assert times == sorted(times), f"{sid}: time runs backwards"


def test_replaying_into_the_same_store_again_adds_nothing(store, tmp_path):
    path = _session_file(tmp_path / "a.jsonl", "s-1")
    first = runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare"], env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    before = _requests_per_session(store)
    assert before == {"claude-code-jsonl:s-1": 2}
    # Check the same command again: skipped and said so, the table shows what is stored, nothing doubles.
    again = runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare"], env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.output
    assert "a.jsonl: already stored as session claude-code-jsonl:s-1, skipped" in again.output
    assert re.search(r"a\.jsonl\s+claude-code-jsonl\s+4\s+2\s", again.output)
    as_json = runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare", "--json"])
    assert json.loads(as_json.stdout)["transcripts"][0]["stored_before"] is True
    assert _requests_per_session(store) == before
    _assert_time_never_runs_backwards(store)


def test_other_settings_on_a_stored_transcript_are_refused_naming_replace(tmp_path):
    path, store = _session_file(tmp_path / "a.jsonl", "s-1"), str(tmp_path / "r.db")
    assert runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare"]).exit_code == 0
    refused = runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare", "--window", "32000"])
    assert refused.exit_code == 1
    assert "--window 200000 (not 32000)" in refused.output and "--replace" in refused.output
    assert _requests_per_session(store) == {"claude-code-jsonl:s-1": 2}


def test_two_transcripts_with_one_id_are_two_sessions(tmp_path):
    store = str(tmp_path / "r.db")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = _session_file(tmp_path / "one" / "run.jsonl", "s-1")
    second = tmp_path / "two" / "run.jsonl"
    second.write_text(first.read_text().replace("There are two files.", "There are three files."))
    result = runner.invoke(app, ["replay", str(first), str(second), "--store", store, "--no-compare"])
    assert result.exit_code == 0, result.output
    sessions = _requests_per_session(store)
    # Check each transcript has its own session, neither appended to the other.
    assert len(sessions) == 2 and set(sessions.values()) == {2} and "claude-code-jsonl:s-1" in sessions
    assert "holds another transcript with the same id" in result.output
    _assert_time_never_runs_backwards(store)


def _interrupting(second_source: str):
    """The real replay, with Ctrl-C arriving once the named transcript's first request is built."""
    import contextwright.cli._replay as command

    real = command.replay_transcript

    def replay(transcript, **options):
        if transcript.source == second_source:

            def ctrl_c(_built):
                raise KeyboardInterrupt

            options["on_request"] = ctrl_c
        return real(transcript, **options)

    return replay


def test_ctrl_c_says_what_was_stored_and_the_rerun_refuses_then_replaces(store, tmp_path, monkeypatch):
    a = _session_file(tmp_path / "a.jsonl", "s-1")
    b = _session_file(tmp_path / "b.jsonl", "s-2")
    args = ["replay", str(a), str(b), "--store", store, "--no-compare"]
    with monkeypatch.context() as patch:
        patch.setattr("contextwright.cli._replay.replay_transcript", _interrupting(str(b)))
        interrupted = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert interrupted.exit_code == 130, interrupted.output
    assert "Stored completely in" in interrupted.output and "a.jsonl (claude-code-jsonl:s-1)" in interrupted.output
    assert "b.jsonl was interrupted: partly stored as session claude-code-jsonl:s-2" in interrupted.output
    assert "--replace" in interrupted.output
    with open_log(store) as log:
        partial = log.last_seq("claude-code-jsonl:s-2")
    assert partial > 0
    # Check the same command refuses to append to the partial session, and changes nothing.
    refused = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert refused.exit_code == 1
    assert "b.jsonl is partly stored as session claude-code-jsonl:s-2 (an interrupted replay)" in refused.output
    assert "--replace" in refused.output
    with open_log(store) as log:
        assert log.last_seq("claude-code-jsonl:s-2") == partial
    # Check --replace replays the interrupted one whole as a new session and skips the complete one.
    replaced = runner.invoke(app, [*args, "--replace"], env={"COLUMNS": "300"})
    assert replaced.exit_code == 0, replaced.output
    assert "replayed again as session claude-code-jsonl:s-2~2" in replaced.output
    sessions = _requests_per_session(store)
    assert sessions["claude-code-jsonl:s-1"] == 2 and sessions["claude-code-jsonl:s-2~2"] == 2
    _assert_time_never_runs_backwards(store)


def test_ctrl_c_on_a_memory_store_says_nothing_was_kept(tmp_path, monkeypatch):
    a = _session_file(tmp_path / "a.jsonl", "s-1")
    monkeypatch.setattr("contextwright.cli._replay.replay_transcript", _interrupting(str(a)))
    result = runner.invoke(app, ["replay", str(a), "--no-compare"])
    assert result.exit_code == 130
    assert "nothing was kept (the store is memory://)" in result.output


# -- replay's labels say what the figures are -------------------------------------------------------


def test_simulated_usage_is_labelled_simulated(tmp_path):
    path = _session_file(tmp_path / "a.jsonl", "s-1")
    result = runner.invoke(app, ["replay", str(path), "--usage", "simulated", "--no-compare"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "simulated offline" in result.output and "recorded" not in result.output.split("file")[0]


def test_openai_wire_says_the_recorded_cost_is_repriced_and_why_there_is_no_comparison(tmp_path):
    path = _session_file(tmp_path / "a.jsonl", "s-1")
    result = runner.invoke(app, ["replay", str(path), "--provider", "openai"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "list prices of gpt-4.1" in text and "the transcripts recorded claude-sonnet-4-6" in text
    assert "No comparison with common strategies" in text and "--provider openai" in text


# -- where a store is: reads never create one, a new one is named by its absolute path -----------


def test_keys_list_and_revoke_never_create_a_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["keys", "list"], ["keys", "revoke", "0123456789abcdef"]):
        result = runner.invoke(app, args, env={"COLUMNS": "250", "CONTEXTWRIGHT_STORE": ""})
        assert result.exit_code == 1, result.output
        assert f"no store at {tmp_path / 'contextwright.db'}" in " ".join(result.output.split())
        assert "--store" in result.output
    assert list(tmp_path.iterdir()) == []


def test_keys_create_says_where_the_new_store_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    created = runner.invoke(app, ["keys", "create", "acme"], env={"COLUMNS": "250"})
    assert created.exit_code == 0, created.output
    assert f"Created a new store: {tmp_path / 'contextwright.db'}" in created.output
    listed = runner.invoke(app, ["keys", "list"], env={"COLUMNS": "250"})
    assert listed.exit_code == 0 and "acme" in listed.output and "Created" not in listed.output


def test_serve_names_its_store(tmp_path, monkeypatch):
    import uvicorn

    monkeypatch.chdir(tmp_path)
    started = []
    # The server itself is not what this checks: it would block the test.
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: started.append(kwargs["port"]))
    result = runner.invoke(app, ["serve", "--port", "8799"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert f"Created a new store: {tmp_path / 'contextwright.db'}" in result.output
    assert f"Store: {tmp_path / 'contextwright.db'}" in result.output and started == [8799]


@pytest.mark.parametrize("form", ["four-slash", "plain", "relative"])
def test_every_sqlite_form_puts_the_store_where_it_says(form, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _session_file(tmp_path / "a.jsonl", "s-1")
    target = tmp_path / "stores" / "r.db"
    url = {"four-slash": f"sqlite:///{target}", "plain": str(target), "relative": "sqlite:///stores/r.db"}[form]
    result = runner.invoke(app, ["replay", str(path), "--store", url, "--no-compare"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert target.exists()
    assert f"Created a new store: {target} (the folder {target.parent} was created for it)" in result.output


def test_three_slashes_before_an_absolute_looking_path_say_how_to_write_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _session_file(tmp_path / "a.jsonl", "s-1")
    meant = tmp_path / "r.db"  # what sqlite:///<tmp_path>/r.db looks like, and is not
    url = f"sqlite://{meant}"
    result = runner.invoke(app, ["replay", str(path), "--store", url, "--no-compare"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    went = tmp_path / str(meant).lstrip("/")
    text = " ".join(result.output.split())
    assert f"Created a new store: {went}" in text
    assert f"for {meant} write sqlite:///{meant}" in text


@pytest.mark.parametrize("command", [["replay"], ["keys", "list"], ["serve"], ["stats"]])
def test_help_shows_every_store_url_form(command):
    text = " ".join(runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"}).output.split())
    assert "sqlite:////absolute/path.db" in text and "sqlite:///relative/path.db" in text


def test_the_readmes_keys_commands_find_the_key_its_create_command_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = README.read_text()
    [create] = re.findall(r"^contextwright keys create .*$", text, re.M)
    made = runner.invoke(app, create.split()[1:], env={"COLUMNS": "250"})
    assert made.exit_code == 0, made.output
    listing = re.findall(r"`(contextwright keys list[^`]*)`", text)
    assert listing
    for command in listing:
        shown = runner.invoke(app, command.split()[1:], env={"COLUMNS": "250"})
        assert shown.exit_code == 0 and "acme" in shown.output, (command, shown.output)


def test_a_skipped_transcript_writes_no_request_bodies_and_says_so(tmp_path):
    path, store, dump = _session_file(tmp_path / "a.jsonl", "s-1"), str(tmp_path / "r.db"), tmp_path / "bodies"
    args = ["replay", str(path), "--store", store, "--no-compare", "--dump-requests", str(dump)]
    assert runner.invoke(app, args).exit_code == 0
    written = sorted(p.name for p in dump.iterdir())
    again = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output
    assert "No request bodies written" in again.output and "contextwright inspect" in again.output
    assert sorted(p.name for p in dump.iterdir()) == written


def test_ctrl_c_while_pricing_the_comparison_says_every_transcript_is_stored(tmp_path, monkeypatch):
    import contextwright.compare

    path, store = _session_file(tmp_path / "a.jsonl", "s-1"), str(tmp_path / "r.db")

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(contextwright.compare, "compare", ctrl_c)
    result = runner.invoke(app, ["replay", str(path), "--store", store], env={"COLUMNS": "300"})
    assert result.exit_code == 130, result.output
    said = " ".join(result.output.split())
    assert f"Interrupted while pricing the comparison; every transcript is stored in {store}" in said
    # Check the store agrees: the next run skips it.
    monkeypatch.undo()
    again = runner.invoke(app, ["replay", str(path), "--store", store, "--no-compare"], env={"COLUMNS": "300"})
    assert "already stored" in again.output
