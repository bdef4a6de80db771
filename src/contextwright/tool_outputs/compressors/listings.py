"""Listings and search: directory listings (ls, du, find), grep/ripgrep, process lists, package managers.

Listings are grouped by their container: entries by directory, matches by file,
processes by kind. Package-manager output is mostly progress (downloads, fetches,
unpacking) around one verdict line, which is protected.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, Marks

_LS_DIR = re.compile(r"^(\S.*):$")
_LS_TOTAL = re.compile(r"^total \d+")
_DU = re.compile(r"^\s*\d+(?:[.,]\d+)?[KMGTPkmgtp]?i?B?\s+(\S.*)$")
_PATH = re.compile(r"^(\.{0,2}/\S.*)$")
_LS_LONG = re.compile(r"^[-dlcbps][-rwxsStT]{9}[.+@]?\s+\d+\s")
_LISTING_ERROR = re.compile(r"(?i)^(?:ls|du|find|tree): |permission denied|no such file or directory")


def _parent(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head or "/"


def analyse_dir_listing(lines: Sequence[str], marks: Marks) -> None:
    """ls/du/find: entries are labelled by directory; directory headers and errors rank high."""
    directory = ""
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if _LISTING_ERROR.search(line):
            marks.must(index)
            marks.failed = True
        elif (header := _LS_DIR.match(line)) is not None and not _LS_LONG.match(line):
            directory = header.group(1)
            marks.key(index, KEY)
        elif _LS_TOTAL.match(line):
            marks.key(index, KEY_LOW, "total line")
        elif not _LS_LONG.match(line) and (du := _DU.match(line)) is not None:
            marks.label(index, f"entries under {_parent(du.group(1))}")
        elif not _LS_LONG.match(line) and (path := _PATH.match(line)) is not None:
            marks.label(index, f"entries under {_parent(path.group(1))}")
        else:
            marks.label(index, f"entries in {directory}" if directory else "entries")


_GREP_NUMBERED = re.compile(r"^(?P<file>[^\s:]*[./][^\s:]*?)(?::\d+:|-\d+-)")
_GREP_PLAIN = re.compile(r"^(?P<file>[^\s:]+\.\w+):(?!\d+:\d+: )")
_GREP_HEADING_ROW = re.compile(r"^\d+[:-](?!\d)")
_GREP_ERROR = re.compile(r"^(?:grep|rg|ag|ack): ")


def analyse_grep(lines: Sequence[str], marks: Marks) -> None:
    """grep/ripgrep: matches are labelled by file; heading lines (ripgrep style) rank high."""
    heading = ""
    for index, line in enumerate(lines):
        if not line.strip():
            heading = ""
            continue
        if _GREP_ERROR.match(line):
            marks.must(index)
            marks.failed = True
        elif heading and _GREP_HEADING_ROW.match(line):
            marks.label(index, f"matches in {heading}")
        elif (numbered := _GREP_NUMBERED.match(line)) is not None:
            marks.label(index, f"matches in {numbered.group('file')}")
        elif (plain := _GREP_PLAIN.match(line)) is not None:
            marks.label(index, f"matches in {plain.group('file')}")
        elif line == "--":
            marks.label(index, "context separator")
        elif line.startswith("Binary file "):
            marks.label(index, "binary file match")
        elif index + 1 < len(lines) and _GREP_HEADING_ROW.match(lines[index + 1]):
            heading = line
            marks.key(index, KEY_HIGH)


_PS_HEADER = re.compile(r"^\s*(?:USER|UID|PID)\s+.*\bPID\b|^\s*PID\s+")
_KERNEL_THREAD = re.compile(r"\s\[[^\]]+\]$")
_PS_ROW = re.compile(r"^\s*\S+\s+\d+\s+\S")


def analyse_process_list(lines: Sequence[str], marks: Marks) -> None:
    """ps/top: the column header stays; kernel threads group; zombies rank high."""
    for index, line in enumerate(lines):
        if _PS_HEADER.match(line):
            marks.key(index, KEY_HIGH + 10)
        elif "<defunct>" in line or re.search(r"\s(?:Z|D)[sl+<N]*\s", line):
            marks.key(index, KEY_HIGH, "zombie or blocked process")
        elif _KERNEL_THREAD.search(line):
            marks.label(index, "kernel thread")
        elif _PS_ROW.match(line):
            marks.label(index, "process")


_PKG_NOISE = (
    (
        re.compile(
            r"^\s*(?:Collecting|Downloading|Using cached|Obtaining|Preparing metadata|Getting requirements|Installing build dependencies|Building wheels? for|Created wheel|Stored in directory|Building wheel|Running setup\.py)\b"
        ),
        "pip progress",
    ),
    (re.compile(r"^Requirement already satisfied"), "already satisfied"),
    (re.compile(r"^\s*[━█▏▎▍▌▋▊▉#=\-|]{8,}"), "progress bar"),
    (re.compile(r"^(?:Get|Hit|Ign|Err):\d+ "), "apt fetch"),
    (
        re.compile(r"^(?:Reading package lists|Building dependency tree|Reading state information)"),
        "apt progress",
    ),
    (
        re.compile(
            r"^(?:Selecting previously unselected|Preparing to unpack|Unpacking|Setting up|Processing triggers|\(Reading database)"
        ),
        "dpkg progress",
    ),
    (
        re.compile(r"^\s*(?:Updating|Downloaded|Downloading|Compiling|Fresh|Locking|Adding)\s+\S"),
        "cargo progress",
    ),
    (
        re.compile(r"^(?:npm (?:timing|http|sill|verb)|\d+ packages? (?:are|is) looking for funding|\s*run `npm fund`)"),
        "npm chatter",
    ),
    (
        re.compile(r"^(?:\[\d+/\d+\] |info |yarn install v|Progress: resolved|Packages: \+)"),
        "install progress",
    ),
)
_PKG_MUST = re.compile(
    r"^(?:Successfully installed|ERROR:|error(?:\[\w+\])?:|E: |npm (?:ERR!|error)|added \d+ packages?|removed \d+ packages?|"
    r"changed \d+ packages?|up to date|found \d+ vulnerabilit|\d+ (?:\w+ severity )?vulnerabilit|\s*Installed package|"
    r"\d+ upgraded, \d+ newly installed|Done in |success |error )"
)
_PKG_WARN = re.compile(r"^(?:WARNING:|W: |npm (?:WARN|warn)|warning )")
_FIELD = re.compile(r"^([A-Z][\w-]*): ")


def analyse_package_install(lines: Sequence[str], marks: Marks) -> None:
    """pip/npm/cargo/apt: the verdict and errors are kept; download and unpack progress is noise."""
    block: int | None = None
    for index, line in enumerate(lines):
        if _PKG_MUST.match(line):
            marks.must(index)
            if re.match(r"^(?:ERROR:|error|E: |npm (?:ERR!|error))", line):
                marks.failed = True
            continue
        if _PKG_WARN.match(line):
            marks.key(index, KEY_LOW if "deprecated" in line else KEY_HIGH, "package manager warning")
            continue
        for pattern, label in _PKG_NOISE:
            if pattern.match(line):
                marks.noise(index, label)
                break
        else:
            if (field := _FIELD.match(line)) is not None:
                name = field.group(1)
                if name in ("Name", "Package"):
                    block = index
                    marks.key(index, KEY)
                elif name == "Version":
                    marks.key(index, KEY_LOW + 5)
                else:
                    marks.label(index, f"{name} field")
            elif line.startswith((" ", "\t")) and block is not None and line.strip():
                marks.label(index, "continuation line")
            elif re.match(r"^(?:Package|Name)\s+Version\b", line):
                marks.key(index, KEY_HIGH)
            elif re.match(r"^(?:Inst|Conf|Remv|Purg) \S", line):
                marks.label(index, f"{line[:4]} line")
            elif re.match(r"^[\w.\-\[\]]+\s+\d[\w.+!-]*\s*$", line):
                marks.label(index, "package row")
