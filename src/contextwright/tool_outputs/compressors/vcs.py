"""git: status, diff, log and blame.

These are data, not verdicts: every row is named (commit messages included), so the
failure shapes only see lines that are not data (a commit message that says "fix
error" is not an error, a ``fatal:`` line from git is). What is protected is structure: every
``diff --git`` header (the list of files touched), conflict lines in a status, the
branch line. Hunk headers and changed lines rank above context lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, Marks

_STATUS_SECTION = re.compile(
    r"^(?:Changes to be committed|Changes not staged for commit|Untracked files|Unmerged paths|You have unmerged paths)"
)
_STATUS_HINT = re.compile(r'^\s+\(use "git ')
_STATUS_ENTRY = re.compile(
    r"^\t(?:(new file|modified|deleted|renamed|copied|typechange|both modified|both added|both deleted|added by us|added by them|deleted by us|deleted by them):\s+)?\S"
)
_PORCELAIN = re.compile(r"^((?=[ MADRCUT?!]{2} )(?! {2})..) \S")


def analyse_git_status(lines: Sequence[str], marks: Marks) -> None:
    """git status: branch, sections, conflicts and verdicts are kept; file lists group by section."""
    section = "changes"
    for index, line in enumerate(lines):
        if line.startswith(
            (
                "On branch",
                "HEAD detached",
                "Your branch",
                "nothing to commit",
                "no changes added",
                "nothing added",
            )
        ):
            marks.must(index)
        elif _STATUS_SECTION.match(line):
            section = line.split(" (")[0].rstrip(":").lower()
            marks.key(index, KEY_HIGH + 10)
            if "unmerged" in section:
                marks.failed = True
        elif _STATUS_HINT.match(line):
            marks.noise(index, "git hint")
        elif (entry := _STATUS_ENTRY.match(line)) is not None:
            state = entry.group(1) or ""
            if state.startswith(("both", "added by", "deleted by")):
                marks.must(index)
            else:
                marks.label(index, f"{section} entry")
        elif (porcelain := _PORCELAIN.match(line)) is not None:
            code = porcelain.group(1)
            if "U" in code or code in ("AA", "DD"):
                marks.must(index)
            else:
                marks.label(index, "untracked entry" if code == "??" else "changed entry")


_DIFF_HEADER = re.compile(r"^diff --git |^diff --(?:cc|combined) |^Only in |^Binary files ")
_DIFF_META = re.compile(
    r"^(?:index |old mode|new mode|deleted file mode|new file mode|similarity index|dissimilarity index|rename from|rename to|copy from|copy to)"
)


def analyse_git_diff(lines: Sequence[str], marks: Marks) -> None:
    """git diff: every file header is kept; hunk headers and changed lines rank above context."""
    for index, line in enumerate(lines):
        if _DIFF_HEADER.match(line):
            marks.must(index)
        elif _DIFF_META.match(line):
            marks.key(index, KEY_LOW + 5, "file metadata line")
        elif line.startswith(("--- ", "+++ ")):
            marks.key(index, KEY_LOW, "file name line")
        elif line.startswith("@@"):
            marks.key(index, KEY, "hunk header")
        elif line.startswith(("+", "-")):
            marks.label(index, "changed line")
        elif line.startswith(" "):
            marks.label(index, "context line")


_COMMIT = re.compile(r"^commit [0-9a-f]{7,64}\b")
_ONELINE = re.compile(r"^[0-9a-f]{7,64} \S")
_STAT = re.compile(r"^ \S.* \| +(?:\d+ ?[+-]*|Bin .*)$")
_STAT_TOTAL = re.compile(r"^ \d+ files? changed")
_TRAILER = re.compile(r"^(?:Author|AuthorDate|Commit|CommitDate|Date|Merge):\s")


def analyse_git_log(lines: Sequence[str], marks: Marks) -> None:
    """git log: commits are blocks; diffstat lines group; nothing is treated as a failure."""
    for index, line in enumerate(lines):
        if _COMMIT.match(line) or _ONELINE.match(line):
            marks.label(index, "commit")
        elif _TRAILER.match(line):
            marks.label(index, "author/date line")
        elif _STAT.match(line):
            marks.label(index, "diffstat line")
        elif _STAT_TOTAL.match(line):
            marks.label(index, "diffstat total")
        elif line.startswith("    ") and line.strip():
            # Commit messages are data: "fix error" in one is not an error of this command.
            marks.label(index, "commit message")


_BLAME_HEADER = re.compile(r"^[0-9a-f]{40} \d+ \d+(?: \d+)?$")
_BLAME_META = re.compile(
    r"^(?:author|author-mail|author-time|author-tz|committer|committer-mail|committer-time|committer-tz|summary|filename|previous|boundary)(?: |$)"
)
_BLAME_NOISE = re.compile(
    r"^(?:author-mail|author-tz|committer|committer-mail|committer-time|committer-tz|boundary|previous)(?: |$)"
)


def analyse_git_blame(lines: Sequence[str], marks: Marks) -> None:
    """git blame --porcelain: code lines and who wrote them stay; repeated commit metadata goes."""
    for index, line in enumerate(lines):
        if line.startswith("\t"):
            marks.key(index, KEY_LOW, "blamed code line")
        elif _BLAME_NOISE.match(line):
            marks.noise(index, "blame metadata")
        elif _BLAME_META.match(line):
            marks.label(index, "blame metadata")
        elif _BLAME_HEADER.match(line):
            marks.label(index, "blame line header")
