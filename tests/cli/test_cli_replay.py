"""``replay`` on transcripts of today, errors as one line, and what the other commands show."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

runner = CliRunner()


def _record(kind: str, uuid: str, parent: str | None, at: str, message: dict) -> dict:
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-1", "timestamp": at, "message": message}


def _usage(read: int) -> dict:
    return {"input_tokens": 12, "cache_read_input_tokens": read, "cache_creation_input_tokens": 40, "output_tokens": 5}


def claude_code_session(*, result_content: object = None) -> list[dict]:
    """A Claude Code session of today: a ToolSearch call answered by a tool_reference block."""
    result_content = result_content if result_content is not None else [{"type": "tool_reference", "tool_name": "Bash"}]
    return [
        _record("user", "u1", None, "2025-11-03T09:00:00Z", {"role": "user", "content": "List the files, please."}),
        _record(
            "assistant",
            "a1",
            "u1",
            "2025-11-03T09:00:04Z",
            {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "shell"}}],
                "usage": _usage(3_000),
            },
        ),
        _record(
            "user",
            "u2",
            "a1",
            "2025-11-03T09:00:05Z",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result_content}]},
        ),
        _record(
            "assistant",
            "a2",
            "u2",
            "2025-11-03T09:00:09Z",
            {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "There are two files."}],
                "usage": _usage(3_100),
            },
        ),
    ]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def today(tmp_path) -> Path:
    return write_jsonl(tmp_path / "today.jsonl", claude_code_session())


def _one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_unknown_block_type_replays_with_a_warning_and_strict_fails(today, tmp_path):
    store = tmp_path / "r.db"
    result = runner.invoke(app, ["replay", str(today), "--store", str(store), "--no-compare"])
    assert result.exit_code == 0, result.output
    assert "unknown type 'tool_reference'" in result.output
    shown = runner.invoke(app, ["events", str(store), "--session", "claude-code-jsonl:s-1"], env={"COLUMNS": "200"}).output
    assert "[unsupported block: tool_reference" in shown
    error = _one_line_error(runner.invoke(app, ["replay", str(today), "--strict", "--no-compare"]))
    assert "today.jsonl:3: unknown tool_result content block type 'tool_reference' (strict mode)" in error


def test_replay_keeps_the_transcripts_usage_and_times(today, tmp_path):
    store = tmp_path / "r.db"
    assert runner.invoke(app, ["replay", str(today), "--store", str(store), "--no-compare"]).exit_code == 0
    stats = runner.invoke(app, ["stats", str(store)], env={"COLUMNS": "200"}).output
    row = next(line for line in stats.splitlines() if "claude-code-jsonl:s-1" in line)
    share = (3_000 + 3_100) / (3_000 + 3_100 + 2 * (12 + 40))
    assert f"{share:.1%}" in row and "$0.00" in row and "n/a" not in row.split("e1:1")[1].split()[0]
    events = runner.invoke(app, ["events", str(store), "--session", "claude-code-jsonl:s-1"], env={"COLUMNS": "200"}).output
    assert "2025-11-03 09:00:00" in events and "2025-11-03 09:00:09" in events


def test_replay_is_byte_reproducible_and_the_seed_changes_the_nonces(today, tmp_path):
    def bodies(folder: str, *extra: str) -> list[bytes]:
        out = tmp_path / folder
        result = runner.invoke(app, ["replay", str(today), "--dump-requests", str(out), "--no-compare", *extra])
        assert result.exit_code == 0, result.output
        return [p.read_bytes() for p in sorted(out.iterdir())]

    first, second, seeded = bodies("a"), bodies("b"), bodies("c", "--seed", "1")
    assert first == second and len(first) == 2
    assert seeded != first
    nonces = {re.findall(rb'cw-data id=\\"([0-9a-f]+)', body)[0] for body in first + seeded}
    assert len(nonces) == 2


def test_empty_transcripts_are_reported(tmp_path, today):
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"type": "summary", "summary": "Old chat", "leafUuid": "x1"}])
    result = runner.invoke(app, ["replay", str(today), str(empty), "--no-compare"])
    assert result.exit_code == 0 and "empty.jsonl: no conversation" in result.output and "(empty)" in result.output
    data = json.loads(runner.invoke(app, ["replay", str(today), str(empty), "--no-compare", "--json"]).stdout)
    assert [row["empty"] for row in data["transcripts"]] == [False, True]
    error = _one_line_error(runner.invoke(app, ["replay", str(empty)]))
    assert "nothing to replay" in error


def test_lenient_shows_the_skipped_count_in_the_table(tmp_path):
    records = claude_code_session()
    path = write_jsonl(tmp_path / "g.jsonl", [records[0], '{"type": "user", garbage', *records[1:]])
    result = runner.invoke(app, ["replay", str(path), "--lenient", "--no-compare"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.rstrip().endswith("skipped"))
    row = next(line for line in result.output.splitlines() if line.startswith("g.jsonl"))
    assert "cost" in header and row.rstrip().endswith(" 1")
    narrow = runner.invoke(app, ["replay", str(path), "--lenient", "--no-compare"], env={"COLUMNS": "60"})
    assert re.search(r"^ skipped +1 *$", narrow.output, re.M)


def test_lenient_replay_keeps_the_opening_prompt_when_a_line_is_garbage(tmp_path):
    from contextwright.importers import load_transcript

    records = claude_code_session()
    path = write_jsonl(tmp_path / "g.jsonl", [records[0], records[1], "{not json at all", records[3]])
    # Line 3 (the tool result, parent of the last answer) is garbage: the chain must bridge it.
    transcript = load_transcript(path, lenient=True)
    assert transcript.skipped == 1
    assert transcript.messages[0].text == "List the files, please."
    assert [m.role for m in transcript.messages] == ["user", "assistant", "assistant"]
    assert not transcript.messages[1].tool_calls  # its result was on the garbage line: the call is dropped
    assert transcript.messages[-1].text == "There are two files."


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type": "user", "message": {"content": "a\\ud800b"}}', "lone UTF-16 surrogate"),
        ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
        ('{"type": "user", "uuid": "u9", "message": {"content": "hi"}', "invalid JSON: Expecting ',' delimiter"),
    ],
    ids=["surrogate", "deep", "broken"],
)
def test_bad_lines_give_a_typed_one_line_error(tmp_path, line, expected):
    records = claude_code_session()
    path = write_jsonl(tmp_path / "bad.jsonl", [records[0], line, *records[1:]])
    error = _one_line_error(runner.invoke(app, ["replay", str(path), "--no-compare"]))
    assert "bad.jsonl:2" in error and expected in error
    if expected.startswith("invalid JSON"):
        assert re.search(r"bad\.jsonl:2:\d+: invalid JSON: .+ delimiter$", error), error  # file, line, column, whole
    lenient = runner.invoke(app, ["replay", str(path), "--no-compare", "--lenient"])
    assert lenient.exit_code == 0, lenient.output


def test_dump_requests_to_an_unwritable_place_is_one_line(today, tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    error = _one_line_error(runner.invoke(app, ["replay", str(today), "--dump-requests", str(blocker / "sub")]))
    assert "cannot write request bodies to" in error


def test_compress_on_a_directory_is_one_line(tmp_path):
    error = _one_line_error(runner.invoke(app, ["compress", str(tmp_path)]))
    assert "is a directory" in error


def test_events_with_an_unknown_session_fails_and_limits_say_more_exist(today, tmp_path):
    store = tmp_path / "r.db"
    runner.invoke(app, ["replay", str(today), "--store", str(store), "--no-compare"])
    error = _one_line_error(runner.invoke(app, ["events", str(store), "--session", "nope"]))
    assert "no session 'nope'" in error and "claude-code-jsonl:s-1" in error
    limited = runner.invoke(app, ["events", str(store), "--session", "claude-code-jsonl:s-1", "-n", "3"])
    assert limited.exit_code == 0 and re.search(r"\d+ more event\(s\) after seq 3: add --after 3", limited.output)
    everything = runner.invoke(app, ["events", str(store), "--session", "claude-code-jsonl:s-1", "-n", "500"])
    assert "more event" not in everything.output


def test_inspect_shows_the_whole_request_and_its_wire_body(tmp_path):
    long_output = "line " + "x" * 300 + " END-OF-LONG-OUTPUT"
    path = write_jsonl(tmp_path / "long.jsonl", claude_code_session(result_content=long_output))
    store, dump = tmp_path / "r.db", tmp_path / "bodies"
    result = runner.invoke(app, ["replay", str(path), "--store", str(store), "--dump-requests", str(dump), "--no-compare"])
    assert result.exit_code == 0, result.output
    whole = runner.invoke(app, ["inspect", str(store), "-s", "claude-code-jsonl:s-1", "-r", "1"])
    assert whole.exit_code == 0, whole.output
    assert "END-OF-LONG-OUTPUT" in whole.output and "x" * 300 in whole.output
    assert "ToolSearch: The ToolSearch tool" in whole.output and "input schema:" in whole.output
    for index, body in enumerate(sorted(dump.iterdir())):
        wire = runner.invoke(app, ["inspect", str(store), "-s", "claude-code-jsonl:s-1", "-r", str(index), "--wire", "anthropic"])
        assert json.loads(wire.stdout) == json.loads(body.read_text())
    error = _one_line_error(
        runner.invoke(app, ["inspect", str(store), "-s", "claude-code-jsonl:s-1", "-r", "0", "--wire", "openai_chat"])
    )
    assert "use --wire anthropic" in error
    # Check: --wire and --json print one request, so without --request they say so instead of being ignored.
    for flag in (["--wire", "anthropic"], ["--json"]):
        error = _one_line_error(runner.invoke(app, ["inspect", str(store), "-s", "claude-code-jsonl:s-1", *flag]))
        assert f"{flag[0]} needs --request N" in error


def test_help_has_no_type_placeholders_for_flags():
    for command in ([], ["demo"], ["replay"], ["inspect"], ["stats"], ["compress"], ["events"], ["verify"]):
        out = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"}).output
        assert "<bool>" not in out and "Usage" in out, command
    replay_help = " ".join(runner.invoke(app, ["replay", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "--strict" in replay_help and "--seed" in replay_help and "derived from the transcripts' bytes" in replay_help


@pytest.mark.parametrize("command", [["sessions"], ["stats"], ["keys", "list", "--store"], ["serve", "--store"]], ids=" ".join)
def test_unreachable_postgres_fails_fast_with_the_cause(command):
    pytest.importorskip("psycopg", reason="needs psycopg (the postgres extra)")
    if command[0] == "serve":
        pytest.importorskip("fastapi", reason="serve needs fastapi (the service extra)")
        pytest.importorskip("uvicorn", reason="serve needs uvicorn (the service extra)")
    result = runner.invoke(app, [*command, "postgresql://postgres@127.0.0.1:1/test"])
    error = _one_line_error(result)
    assert "cannot connect to PostgreSQL" in error and "refused" in error.lower()
    # Check: none of the pool's retries or its "pool exhausted" reach the terminal.
    assert "pool" not in result.output, result.output


def test_a_postgres_server_that_never_answers_is_given_up_after_five_seconds():
    pytest.importorskip("psycopg", reason="needs psycopg (the postgres extra)")
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.monotonic()
        result = runner.invoke(app, ["sessions", f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/test"])
        waited = time.monotonic() - started
    error = _one_line_error(result)
    assert "cannot connect to PostgreSQL" in error and "timeout" in error.lower()
    assert 4 <= waited < 9, waited


@pytest.mark.postgres
def test_a_missing_postgres_database_is_named(postgres_dsn):
    base = postgres_dsn.rsplit("/", 1)[0]
    error = _one_line_error(runner.invoke(app, ["sessions", f"{base}/no_such_database_here"]))
    assert 'database "no_such_database_here" does not exist' in error


@pytest.mark.corpus
def test_replay_runs_every_shared_transcript_without_flags(traces_dir, tmp_path):
    files = sorted(p for p in traces_dir.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))
    # No --lenient, no --format: every file as a new user would pass it (the comparison is left to the benchmark).
    result = runner.invoke(app, ["replay", *map(str, files), "--no-compare", "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    rows = json.loads(result.stdout)["transcripts"]
    assert len(rows) >= len(files) and not any(row["skipped_records"] for row in rows)


def test_replay_report_captions_its_comparison_truthfully(today, tmp_path):
    other = write_jsonl(tmp_path / "other.jsonl", claude_code_session(result_content="a.py\nb.py"))
    both = tmp_path / "both.html"
    result = runner.invoke(app, ["replay", str(today), str(other), "--report", str(both)])
    assert result.exit_code == 0, result.output
    html = both.read_text()
    assert "all 2 transcripts replayed together: totals, not this session alone" in html
    assert "input cost usd" not in html and "input_cost_usd" not in html and ">input cost</th>" in html
    assert "2 transcripts (totals) under common strategies" in " ".join(result.output.split())
    one = tmp_path / "one.html"
    assert runner.invoke(app, ["replay", str(today), "--report", str(one)]).exit_code == 0
    assert "Each strategy on this transcript" in one.read_text()


@pytest.mark.parametrize("columns", [80, 140, 200])
def test_replay_table_never_cuts_file_format_or_strategy_names(tmp_path, columns):
    name = "a-rather-long-transcript-file-name-from-a-real-project.jsonl"
    path = write_jsonl(tmp_path / name, claude_code_session())
    result = runner.invoke(app, ["replay", str(path)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= columns
    # Check: the tables themselves, not the warning above them that names the file too.
    tables = out.split("Replayed at", 1)[1]
    assert "claude-code-jsonl" in tables and "keep_all_single_breakpoint" in tables and "summarize_at_threshold" in tables
    if columns != 140:  # at 140 the table fits only with the file name folded past 40 characters, as documented
        assert name in tables
    if columns == 200:  # wide enough for one line per transcript
        assert any(name in line and "claude-code-jsonl" in line for line in tables.splitlines())


def test_simulated_usage_reports_each_requests_own_usage_back_to_the_session(today, tmp_path):
    from contextwright.log import open_log

    pytest.importorskip("tiktoken", reason="--usage simulated counts with o200k (the tiktoken extra)")
    store = tmp_path / "r.db"
    args = ["replay", str(today), "--store", str(store), "--no-compare", "--usage", "simulated"]
    assert runner.invoke(app, args).exit_code == 0
    log = open_log(str(store))
    try:
        responses = [e.payload for e in log.read("claude-code-jsonl:s-1") if e.type == "model.response"]
    finally:
        log.close()
    # The recorded 3,000-token reads belong to Claude Code's own requests; what is reported now is ours,
    # priced by the simulator (this prefix is under Sonnet's minimum cacheable length: nothing is cached).
    assert [r.replayed for r in responses] == [False, False]
    totals = [r.usage.input_tokens + r.usage.cache_read_tokens + r.usage.cache_write_5m_tokens for r in responses]
    assert all(0 < total < 3_000 for total in totals) and totals[1] > totals[0]
    stats = runner.invoke(app, ["stats", str(store)], env={"COLUMNS": "200"}).output
    assert "0.0%" in next(line for line in stats.splitlines() if "claude-code-jsonl:s-1" in line)
    wrong = runner.invoke(app, ["replay", str(today), "--no-compare", "--usage", "guessed"])
    assert wrong.exit_code == 2 and "--usage must be recorded or simulated, not 'guessed'" in wrong.output
    openai_wire = runner.invoke(app, ["replay", str(today), "--no-compare", "--usage", "simulated", "--provider", "openai"])
    assert openai_wire.exit_code == 2 and "use it with --provider anthropic" in openai_wire.output


def test_the_comparison_says_how_its_engine_row_heard_usage(today):
    pytest.importorskip("tiktoken", reason="the comparison counts with o200k (the tiktoken extra)")
    note = "the replay above used the recorded usage (--usage simulated to match)"
    recorded = runner.invoke(app, ["replay", str(today)], env={"COLUMNS": "200"})
    assert recorded.exit_code == 0 and note in " ".join(recorded.output.split())
    simulated = runner.invoke(app, ["replay", str(today), "--usage", "simulated"], env={"COLUMNS": "200"})
    assert simulated.exit_code == 0 and note not in " ".join(simulated.output.split())


def test_dumped_requests_say_whether_the_engine_heard_provider_usage(today, tmp_path):
    recorded = runner.invoke(app, ["replay", str(today), "--dump-requests", str(tmp_path / "a"), "--no-compare"])
    assert recorded.exit_code == 0, recorded.output
    assert "built without provider usage" in " ".join(recorded.output.split())
    simulated = runner.invoke(
        app, ["replay", str(today), "--dump-requests", str(tmp_path / "b"), "--no-compare", "--usage", "simulated"]
    )
    assert simulated.exit_code == 0, simulated.output
    assert "built without provider usage" not in " ".join(simulated.output.split())
