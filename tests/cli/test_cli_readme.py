"""The README's command-line table names only commands and flags that exist, with the help saying so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def table_rows() -> list[tuple[list[list[str]], set[str]]]:
    """For each row of the "Command line" table: the commands it names and the flags it mentions."""
    section = README.read_text().split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        match = re.match(r"\| `contextwright ([^`]+)` \|(.*)\|$", line)
        if not match:
            continue
        usage, text = match.groups()
        words = [w for w in re.split(r"\s*/\s*", usage)]
        first = words[0].split()
        commands = [[first[0]]] if len(words) == 1 else []
        if len(words) > 1:
            # "sessions / events / verify STORE" or "keys create TENANT / list / revoke KEY_ID".
            group = [first[0]] if first[0] == "keys" else []
            names = [first[1] if group else first[0]] + [w.split()[0] for w in words[1:]]
            commands = [[*group, name] for name in names]
        rows.append((commands, set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b", usage + text))))
    return rows


def help_text(command: list[str]) -> str:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, (command, result.output)
    return result.output


def test_the_table_covers_every_command():
    named = {" ".join(c) for commands, _ in table_rows() for c in commands}
    listed = {c.name for c in app.registered_commands if not c.hidden} | {g.name for g in app.registered_groups}
    assert listed - {n.split()[0] for n in named} == set(), "commands missing from the README's table"
    assert len(table_rows()) >= 9


@pytest.mark.parametrize("row", table_rows(), ids=lambda row: " / ".join(" ".join(c) for c in row[0]))
def test_every_flag_in_a_row_is_in_its_commands_help(row):
    commands, flags = row
    helps = " ".join(help_text(command) for command in commands)
    missing = sorted(flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps))
    assert not missing, f"{commands}: the README names {missing}, the help does not"


def test_the_check_notices_a_flag_that_does_not_exist():
    helps = help_text(["replay"])
    assert not re.search(r"(?<![\w-])--rewind(?![\w-])", helps) and re.search(r"(?<![\w-])--seed(?![\w-])", helps)
