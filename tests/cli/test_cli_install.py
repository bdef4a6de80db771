"""Install weight: the plain install brings no plotting stack; the demo runs without it and says how to get plots."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from contextwright.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_plain_install_does_not_pull_matplotlib_or_numpy():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    plain = " ".join(project["dependencies"]).lower()
    assert "matplotlib" not in plain and "numpy" not in plain
    assert any(dep.startswith("matplotlib") for dep in project["optional-dependencies"]["report"])


def test_the_command_line_imports_without_matplotlib():
    import subprocess

    code = "import sys; import contextwright.cli; print('matplotlib' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_demo_without_matplotlib_writes_a_report_without_plots_and_says_how(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the report extra were not installed
    report = tmp_path / "r.html"
    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.db"), "--turns", "2", "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert 'pip install "contextwright[report]"' in " ".join(result.output.split())
    html = report.read_text()
    assert "<svg" not in html and "Summary" in html


def test_readme_first_command_installs_the_report_extra():
    readme = (ROOT / "README.md").read_text()
    assert 'python3 -m pip install -e ".[report]" && contextwright demo' in readme
