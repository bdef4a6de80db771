"""Lines a kept diagnostic needs beside it to be understood, kept with it.

Runs after every other protection, and reads which lines are kept:

* the context line right before a kept diagnostic: gcc's ``util.c: In function 'f':``
  (``In member function``, ``At top level:``), the linker's ``/usr/bin/ld: lib.a(x.o):
  in function `f':``, a frame's name over its kept ``at ./src/lib.rs:4:9`` line, a
  configure step's ``-- Checking for module 'zstd'`` over its ``No package`` verdict,
  a sanitizer's ``freed by thread T0 here:`` over its kept frames;
* the title lines of a numbered failure (mocha's ``  1) suite`` then ``     test title:``);
* labelled expected/actual blocks after a failure, where the label stands alone and its
  values follow on bare lines (tcltest's ``---- Result was:``, Test::More's ``Structures
  begin differing at:``), and pip's error box: the ``│`` lines under its ``×`` line and
  the output inside ``╰─>``;
* a findings' file printed once above them, a bare path over its indented findings
  (htmlhint's ``   /site/page.html`` over ``L12 |...`` and ``^ message (rule)``);
* where a sanitizer says the bad address lies (``0x6020... is located 0 bytes inside of
  4-byte region``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import MUST, NOISE, Marks

# Anchored once before its alternatives: a match tries the line start alone.
_CONTEXT_HEADER = re.compile(
    r"^(?:\S.*?: (?:In (?:static |member |)function|In (?:constructor|destructor|lambda function|instantiation of)"
    r"|At (?:top level|global scope):)"
    r"|(?:\S*/)?(?:ld|ld\.\w+|lld|collect2)(?:\.exe)?: .*\bin function\b"
    r"|-- (?:Checking for (?:one of the )?modules?|Looking for|Check(?:ing)? (?:for|if|whether))\b"
    r"|checking (?:for|whether|if)\b"
    # A frame's name with its place on the line below (Rust's backtrace, Go's goroutine dumps).
    r"|\s*\d+: [\w:<>]\S*\s*$)"
)
# A sanitizer or valgrind block header over its frames: "freed by thread T0 here:".
_BLOCK_HEADER = re.compile(r"\bhere:\s*$")
_REGION = re.compile(r"\bis located (?:\d+ bytes )?(?:inside|to the (?:left|right)|in (?:stack|global|the))\b")
_NUMBERED = re.compile(r"^(\s*)\d+\) \S")
_TITLE_LINES = 4
# A label standing alone, with its value on the lines below it ("---- Result was:",
# "#     Structures begin differing at:"), worded as what was expected or what came.
_DETAIL_LABEL = re.compile(
    r"(?i)^[\s#*=>|-]*(?:[a-z][\w ()'.,-]{0,70}?)?\b(?:result|expect\w*|got|actual|received|should|differ\w*|wanted"
    r"|obtained|output|returned|value|error)\b[\w ()'.,-]{0,40}:\s*$"
)
_DETAIL_REACH = 40  # lines after a failure line where its labelled detail may still come
_DETAIL_VALUE_LINES = 6
_BOX_OPEN = re.compile(r"^\s*╰─>")
_BOX_RAIL = re.compile(r"^\s*│")
_BOX_END = re.compile(r"^\s*\[end of output\]\s*$")
# A file's path alone on its line: a directory part and an extension, no spaces.
_BARE_PATH = re.compile(r"^(?P<indent>\s*)(?:\.{0,2}/)?(?:[\w.@+-]+/)+[\w.@+-]+\.\w+\s*$")
_BOX_HEAD = 10
_BOX_TAIL = 5


def _is_context_header(line: str) -> bool:
    return _CONTEXT_HEADER.match(line) is not None or ("here:" in line and _BLOCK_HEADER.search(line) is not None)


def protect_companions(lines: Sequence[str], marks: Marks) -> None:
    """Keep the context, title and labelled-detail lines of the diagnostics already kept."""
    kept = [priority >= MUST for priority in marks.priority]
    in_box = False  # under pip's "× step did not run successfully." line
    for index, line in enumerate(lines):
        if not line.strip() or marks.priority[index] == NOISE:
            in_box = False
            continue
        following = index + 1
        if in_box and (_BOX_RAIL.match(line) or _BOX_OPEN.match(line)):
            marks.must(index)
            if _BOX_OPEN.match(line):
                in_box = False
                _protect_box_output(lines, marks, index + 1)
            continue
        in_box = line.lstrip().startswith("× ")
        if following < len(lines) and kept[following] and not kept[index] and _is_context_header(line):
            marks.must(index)
        elif "is located" in line and _REGION.search(line):
            marks.must(index)
        elif not kept[index] and "/" in line and _heads_kept_findings(lines, index, kept):
            marks.must(index)
    _protect_numbered_titles(lines, marks, kept)
    _protect_labelled_details(lines, marks, kept)


def _heads_kept_findings(lines: Sequence[str], index: int, kept: list[bool]) -> bool:
    """A bare path whose next line is indented deeper and kept: the file those findings are in."""
    path = _BARE_PATH.match(lines[index])
    following = index + 1
    if path is None or following >= len(lines) or not kept[following]:
        return False
    below = lines[following]
    return len(below) - len(below.lstrip()) > len(path.group("indent"))


def _protect_box_output(lines: Sequence[str], marks: Marks, start: int) -> None:
    end = start
    while end < len(lines) and end - start < 400 and not _BOX_END.match(lines[end]):
        end += 1
    if end >= len(lines) or not _BOX_END.match(lines[end]):
        return
    body = list(range(start, end + 1))
    if len(body) > _BOX_HEAD + _BOX_TAIL:
        body = body[:_BOX_HEAD] + body[-_BOX_TAIL:]
    for index in body:
        if marks.priority[index] != NOISE:
            marks.must(index)


def _protect_numbered_titles(lines: Sequence[str], marks: Marks, kept: list[bool]) -> None:
    # Under a kept "  1) suite name" the deeper lines up to the one ending in ":" name the test.
    for index, line in enumerate(lines):
        if not kept[index] or ")" not in line or (numbered := _NUMBERED.match(line)) is None:
            continue
        indent = len(numbered.group(1))
        title: list[int] = []
        for following in range(index + 1, min(len(lines), index + 1 + _TITLE_LINES)):
            text = lines[following]
            if not text.strip() or len(text) - len(text.lstrip()) <= indent:
                break
            title.append(following)
            if text.rstrip().endswith(":"):
                for title_line in title:
                    if marks.priority[title_line] != NOISE:
                        marks.must(title_line)
                break


def _protect_labelled_details(lines: Sequence[str], marks: Marks, kept: list[bool]) -> None:
    # A label that also heads ordinary records away from any failure (doctest's
    # "Expecting:" before each example) starts the next record, not a failure's detail.
    labels = [(index, inside, _label_key(lines[index])) for index, inside in _label_lines(lines, kept)]
    outside = {key for _, inside, key in labels if not inside}
    resume = 0
    for index, inside, key in labels:
        if inside and index >= resume and key not in outside:
            marks.must(index)
            resume = _protect_values(lines, marks, index + 1)


def _label_lines(lines: Sequence[str], kept: list[bool]) -> list[tuple[int, bool]]:
    # Each bare label, and whether it comes within reach of a kept line with no two blank
    # lines in a row between (tcltest sets the test's code apart by single blank lines).
    found: list[tuple[int, bool]] = []
    reach = -1
    for index, line in enumerate(lines):
        if kept[index]:
            reach = index + _DETAIL_REACH
        elif not line.strip():
            if index and not lines[index - 1].strip():
                reach = -1
        elif line.rstrip().endswith(":") and _DETAIL_LABEL.match(line):
            found.append((index, index <= reach))
    return found


def _label_key(line: str) -> str:
    return line.strip(" \t#*=>|-").lower()


def _protect_values(lines: Sequence[str], marks: Marks, start: int) -> int:
    # The value lines run to the next label, a blank line or a line already kept.
    index = start
    while index < len(lines) and lines[index].strip() and marks.priority[index] < MUST:
        if lines[index].rstrip().endswith(":") and _DETAIL_LABEL.match(lines[index]):
            break
        if index - start < _DETAIL_VALUE_LINES and marks.priority[index] != NOISE:
            marks.must(index)
        index += 1
    return index
