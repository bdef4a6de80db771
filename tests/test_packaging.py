"""What the package declares: its licence, one version, its extras and a library-only plain install."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import contextwright

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_licence_file_matches_the_declared_licence():
    assert PROJECT["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_the_version_is_written_once():
    assert "version" not in PROJECT["project"] and "version" in PROJECT["project"]["dynamic"]
    assert PROJECT["tool"]["hatch"]["version"]["path"] == "src/contextwright/_version.py"
    from importlib.metadata import version

    assert version("contextwright") == contextwright.__version__


def test_the_changelog_names_the_current_version():
    assert f"## {contextwright.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_the_plain_install_is_the_library_alone_and_all_brings_every_capability():
    project = PROJECT["project"]
    assert project["dependencies"] == []
    extras = project["optional-dependencies"]
    capabilities = sorted(name for name in extras if name not in ("all", "dev"))
    (everything,) = extras["all"]
    assert sorted(everything.removeprefix("contextwright[").removesuffix("]").split(",")) == capabilities
    assert "contextwright[all]" in extras["dev"]
    # PEP 639: the licence is the `license` expression alone, never a classifier too.
    assert not any(name.startswith("License ::") for name in project["classifiers"])
    assert "Typing :: Typed" in project["classifiers"] and (ROOT / "src/contextwright/py.typed").exists()


def test_the_command_says_which_extra_to_install_when_typer_is_missing():
    code = "import sys; sys.modules['typer'] = None; from contextwright.__main__ import main; main()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert 'pip install "contextwright[cli]"' in result.stderr and "typer" in result.stderr


def test_the_library_imports_without_the_command_line_packages():
    code = (
        "import sys; sys.modules['typer'] = None; sys.modules['rich'] = None; "
        "import contextwright as cw; cw.Engine.open('memory://'); print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
