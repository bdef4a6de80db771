"""The lock: every dependency the project declares is pinned to one exact version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        assert re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", line), f"not an exact pin: {line!r}"
        name, version = line.split("==")
        assert _name(name) not in pins, f"{name} is pinned twice"
        pins[_name(name)] = version
    return pins


def test_every_declared_dependency_is_pinned_exactly():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += [req for req in extra if not req.startswith(f"{project['name']}[")]
    missing = sorted({_name(req) for req in declared} - _locked().keys())
    assert not missing, f"declared in pyproject.toml but not in constraints.txt: {missing}; run scripts/lock.sh"


def test_the_readme_and_ci_install_with_the_lock():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = 'python3 -m pip install -c constraints.txt -e ".[dev]" && python3 -m pytest'
    assert command in readme and command in ci
    assert "scripts/test-newest.sh" in readme
