"""What a new user meets first, with the README and --help only: each stumble, and that it is gone."""

from __future__ import annotations

import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

import contextwright as cw
from contextwright.cli import app
from contextwright.errors import PrefixOverBudget

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
