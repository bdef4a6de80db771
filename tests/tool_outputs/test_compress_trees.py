"""Dependency trees: nodes with a problem marker are kept, the healthy nodes fold."""

from __future__ import annotations

from contextwright.tool_outputs.compressors import compress, normalize, trees
from contextwright.tool_outputs.compressors.marks import MUST, Marks


def _npm_tree() -> tuple[str, list[str]]:
    lines = ["shop@2.1.0 /srv/shop"]
    problems = {
        37: '│ │ └── zod@4.0.2 deduped invalid: "^3.22.0" from the root project',
        80: "├── UNMET DEPENDENCY left-pad@^1.3.0",
        121: "│ ├── chalk@5.3.0 extraneous",
    }
    for n in range(160):
        rail = "│ │ ├──" if n % 3 else "├─┬"
        lines.append(f"{rail} pkg-{n}@1.{n % 7}.{n % 5}" + (" deduped" if n % 4 == 0 else ""))
        if n % 10 == 0:
            lines.append(f"│ ├── UNMET OPTIONAL DEPENDENCY @swc/core-platform-{n}@1.4.0")
        if n in problems:
            lines.append(problems[n])
    lines += [
        "",
        "npm error code ELSPROBLEMS",
        "npm error missing: left-pad@^1.3.0, required by shop@2.1.0",
    ]
    return "\n".join(lines) + "\n", list(problems.values())


def test_npm_ls_keeps_every_node_with_a_problem_marker():
    text, must = _npm_tree()
    result = compress(text, budget_tokens="auto", exit_code=1)
    shown = {line.rstrip() for line in normalize(result.text).splitlines()}
    assert [line for line in must if line not in shown] == []
    assert "npm error missing: left-pad@^1.3.0, required by shop@2.1.0" in shown
    assert 1 - result.compressed_tokens / result.original_tokens > 0.7
    # Unmet optional dependencies are counted by name in the omission markers.
    assert "UNMET OPTIONAL DEPENDENCY" in result.text


def test_package_names_that_contain_a_marker_word_are_not_problems():
    lines = [
        "├── character-reference-invalid@2.0.1",
        "│ └── is-missing-value@1.0.0",
        "├── extraneous-cleaner@0.3.0",
        '├── zod@4.0.2 invalid: "^3.22.0" from the root project',
    ]
    marks = Marks(len(lines))
    trees.protect_tree_problems(lines, marks)
    assert [p >= MUST for p in marks.priority] == [False, False, False, True]
