"""The README's code is executed, and its first lines stay the two commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    block = re.search(r"```console\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert block == [
        "python3 -m pip install -e . && contextwright demo",
        'python3 -m pip install -e ".[dev]" && python3 -m pytest',
    ]
    ci = (README.parent / ".ci" / "run").read_text()
    assert block[1] in ci


def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for code in re.findall(r"```python\n(.*?)```", README.read_text(), re.S):
        if "postgresql://" in code and "sqlite" not in code:
            continue
        exec(compile(code, "README.md", "exec"), {})
