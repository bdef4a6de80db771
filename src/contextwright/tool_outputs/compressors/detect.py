"""Guess the kind of a tool output from its content.

The caller usually knows the command and can pass the kind; when it does not, the
first few hundred and last hundred display lines are sniffed. Checks run from the
most specific signature to the most general, so a pytest run that prints a
traceback is still a pytest run, and a diff of a test file is still a diff.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Sequence

from contextwright.tool_outputs.compressors.generic import count_diagnostic_lines
from contextwright.tool_outputs.compressors.jsondoc import parse_json
from contextwright.tool_outputs.compressors.literals import required_literals, starts_lines_only, top_alternatives
from contextwright.tool_outputs.compressors.normalize import normalize_lines, probe_lines

_HEAD_LINES = 400
_TAIL_LINES = 100


class _Sample(list[str]):
    """The sniffed lines, also joined: one regex scan of the text beats a search per line."""

    def __init__(self, lines: Iterable[str], *, within: _Sample | None = None) -> None:
        super().__init__(lines)
        self._root: _Sample = self if within is None else within._root
        """The sample these lines were taken from: its words hold all of theirs."""
        self.by_words = False
        """Set (on the sample the detector takes) when its words are to rule needles out (:meth:`holds_any`)."""

    @functools.cached_property
    def text(self) -> str:
        return "\n".join(self)

    @functools.cached_property
    def after_newline(self) -> str:
        return "\n" + self.text

    @functools.cached_property
    def nonblank(self) -> _Sample:
        return _Sample((line for line in self if line.strip()), within=self)

    @functools.cached_property
    def words(self) -> str:
        """The distinct runs of letters of the text, joined by spaces: a small vocabulary."""
        # In UTF-8 every byte of a non-ASCII character is above "z": these are the text's own runs.
        return b" ".join(set(self.text.encode().translate(_LETTERS_ONLY).split())).decode()

    def holds_any(self, needles: tuple[str, ...]) -> bool:
        """``any(needle in self.text for needle in needles)``.

        Most needles occur in no sample. Once the sample is read ``by_words``, a needle whose
        longest run of letters is in none of the text's words is told absent from them, and
        only the others are scanned for: most samples hold few of the words the checks look for.
        """
        root = self._root
        if not root.by_words:
            return any(map(self.text.__contains__, needles))
        words, text = root.words, self.text
        return any(run in words and needle in text for needle, run in zip(needles, _longest_runs(needles), strict=True))


_LETTERS_ONLY = bytes(byte if 65 <= byte <= 90 or 97 <= byte <= 122 else 32 for byte in range(256))
"""A ``bytes.translate`` table that keeps the letters A-Z and a-z and turns every other byte into a space."""
_CHECKS_BEFORE_WORDS = 5
"""Checks run before a long sample's words are gathered (they cost about as much as eight scans
of it): a diff, a git kind or a test run, found among the first checks, never pays for them."""
_WORDS_MIN_CHARS = 2_048
"""A shorter sample is scanned for every needle: the scans cost less than gathering its words."""


@functools.cache
def _longest_runs(needles: tuple[str, ...]) -> tuple[str, ...]:
    # Where a needle occurs, its longest run of letters lies inside one run of letters of the
    # text ("" for a needle without letters, which the words then never rule out).
    return tuple(max(re.findall("[A-Za-z]+", needle), key=len, default="") for needle in needles)


@functools.cache
def _per_line(pattern: str) -> re.Pattern[str]:
    # The trailing ".*" runs to the end of the line, so each line counts once.
    return re.compile(f"(?m)(?:{pattern}).*")


@functools.cache
def _after_newline(pattern: str) -> re.Pattern[str] | None:
    # A pattern whose matches all start a line, searched after a newline: the engine jumps from
    # newline to newline instead of trying every character.
    return re.compile(f"(?m)\n(?:{pattern}).*") if starts_lines_only(pattern) else None


@functools.cache
def _guarded_alternatives(pattern: str) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    # Each top-level alternative with the needles every match of it holds (None: no needle known).
    parts = top_alternatives(pattern) or (pattern,)
    return tuple((part, required_literals(part)) for part in parts)


def _narrowed(pattern: str, sample: _Sample) -> str | None:
    """``pattern`` without the alternatives that cannot match in ``text``; None when none can.

    A substring test rules an alternative out; the rest keep their order, so each line
    matches as it did (the ``.*`` after the pattern ends every match at the line's end),
    and a pattern left with line-start alternatives alone is scanned from newline to newline.
    """
    kept = [part for part, needles in _guarded_alternatives(pattern) if needles is None or sample.holds_any(needles)]
    if not kept:
        return None
    return pattern if len(kept) == len(_guarded_alternatives(pattern)) else "|".join(kept)


def _count(lines: Sequence[str], pattern: str) -> int:
    if isinstance(lines, _Sample):
        narrowed = _narrowed(pattern, lines)
        if narrowed is None:
            return 0  # substring tests rule out the scan
        pattern = narrowed
        anchored = _after_newline(pattern)
        if anchored is not None:
            text = lines.after_newline
            ends = [match.end() for match in anchored.finditer(text)]
            # A match that ends just after a newline leaves the next line's start to the plain scan.
            if not any(text[end - 1] == "\n" for end in ends):
                return len(ends)
        return len(_per_line(pattern).findall(lines.text))  # as many as finditer yields, without match objects
    regex = re.compile(pattern)
    return sum(1 for line in lines if regex.search(line))


def _found(lines: Sequence[str], pattern: str) -> bool:
    """``_count(lines, pattern) > 0``, without counting: a scan of every position stops at the first match."""
    if isinstance(lines, _Sample):
        narrowed = _narrowed(pattern, lines)
        if narrowed is None:
            return False
        if _after_newline(narrowed) is None:
            return _per_line(narrowed).search(lines.text) is not None
    return _count(lines, pattern) > 0


def _mentions(lines: Sequence[str], *needles: str) -> bool:
    # A substring test on the joined sample is far cheaper than a regex with many alternatives.
    if isinstance(lines, _Sample):
        return lines.holds_any(needles)
    text = "\n".join(lines)
    return any(needle in text for needle in needles)


def _share(lines: Sequence[str], pattern: str) -> float:
    nonblank = lines.nonblank if isinstance(lines, _Sample) else [line for line in lines if line.strip()]
    return _count(nonblank, pattern) / len(nonblank) if nonblank else 0.0


def _git_diff(s: Sequence[str]) -> bool:
    return _found(s, r"^diff --git ") or (
        _found(s, r"^--- (?:a/|/dev/null)") and _found(s, r"^\+\+\+ (?:b/|/dev/null)") and _found(s, r"^@@ ")
    )


def _git_log(s: Sequence[str]) -> bool:
    first = next((line for line in s if line.strip()), "")
    if re.match(r"^commit [0-9a-f]{7,64}\b", first) and _found(s, r"^(?:Author|Date|Merge):"):
        return True
    return _share(s, r"^[0-9a-f]{7,64} \S") >= 0.8


def _git_blame(s: Sequence[str]) -> bool:
    porcelain = _count(s, r"^[0-9a-f]{40} \d+ \d+(?: \d+)?$") >= 2 and _found(s, r"^author ")
    return porcelain or _share(s, r"^\^?[0-9a-f]{7,40} (?:\S+ +)?\(.*\d{4}-\d\d-\d\d.*\d+\)") >= 0.6


def _git_status(s: Sequence[str]) -> bool:
    # Porcelain rows have a status letter in the first two columns: "   Compiling x" has none.
    if _found(
        s,
        r"^(?:On branch |HEAD detached |Changes not staged for commit|Changes to be committed|Untracked files:|nothing to commit)",
    ):
        return True
    return len(s) >= 2 and _share(s, r"^(?! {2})[ MADRCUT?!]{2} \S") >= 0.9


def _pytest(s: Sequence[str]) -> bool:
    return (
        _found(s, r"=+ test session starts =+|short test summary info|^collected \d+ items?")
        or _found(s, r"^=+ .*\b(?:passed|failed|errors?|no tests ran)\b.* in [\d.]+s.* =+$")
        or _found(s, r"^(?:FAILED|ERROR) \S+\.py::")
        # A verbose listing cut from its header and summary (``path::test PASSED``).
        or _share(s, r"^\S+::\S.* (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b") >= 0.5
    )


def _cargo_test(s: Sequence[str]) -> bool:
    return _found(s, r"^running \d+ tests?$") and _found(s, r"^test result: |^test \S+ \.\.\. ")


def _go_test(s: Sequence[str]) -> bool:
    return _found(s, r"^\s*=== (?:RUN|PAUSE|CONT)\s|^\s*--- (?:FAIL|PASS|SKIP): ") or _found(
        s,
        r"^(?:ok|FAIL|\?)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[(?:no test files|build failed|setup failed)\])",
    )


def _jest(s: Sequence[str]) -> bool:
    suites = _count(s, r"^\s*(?:PASS|FAIL)\s+\S+\.(?:[jt]sx?|mjs|cjs|vue|svelte)\b")
    details = _count(s, r"^\s*●\s|^\s*(?:Tests|Test Suites|Test Files):\s|^\s+[✓✕√×]\s")
    return suites > 0 and details > 0 or _found(s, r"^\s*Test (?:Suites|Files):?\s+\d")


def _scala_test(s: Sequence[str]) -> bool:
    if not _mentions(s, "*** FAILED", "==> X ", " passed, ", "Test run ", "[info] ", "[error] "):
        return False
    return _found(
        s,
        r"\*\*\* FAILED \*\*\*|^==> X |^\d+ tests?, \d+ passed, \d+ failed|^Test run \S+ (?:started|finished)"
        r"|^\[info\] Tests: succeeded \d+|^\[info\] All tests passed|^\[error\] Failed tests:",
    )


_HEADED_FINDING = r"^[A-Z]+\d+ (?:\[\*\] )?\S"
"""A linter's finding whose location follows on a ``-->`` line (ruff's default format)."""


def _rustc(s: Sequence[str]) -> bool:
    errors = _count(s, r"^(?:error|warning)(?:\[[A-Z]?\d+\])?: ")
    return (
        errors > 0
        and _count(s, _HEADED_FINDING) < errors
        and _found(s, r"^\s*--> \S+:\d+:\d+")
        or (_found(s, r"panicked at ") and _found(s, r"^\s*(?:Compiling|Finished|Running) "))
    )


def _typecheck(s: Sequence[str]) -> bool:
    if not _mentions(s, "error TS", ".py", "Found ", "Success: ", "[error] ", "[info] "):
        return False
    return (
        _found(s, r"\berror TS\d+: ")
        or _found(
            s,
            r"^\S+\.pyi?:\d+(?::\d+)?: (?:error|note): |^Found \d+ errors? in \d+ files?|^Success: no issues found",
        )
        or _found(s, r"^\[error\] \S+\.(?:scala|java):\d+")
        or _count(s, r"^\[info\] (?:Resolving|Loading|Updating|Compiling) ") >= 3
    )


def _build(s: Sequence[str]) -> bool:
    return (
        _found(
            s,
            r"\(\d+(?:,\d+)?\): (?:error|warning) [A-Z]+\d+: |^\s*Build (?:FAILED|succeeded)\.|Determining projects to restore",
        )
        or _found(
            s,
            r"^> Task :|^BUILD (?:SUCCESSFUL|FAILED)|^\[INFO\] BUILD (?:SUCCESS|FAILURE)|^FAILURE: Build failed",
        )
        or _found(
            s,
            r"^g?make(?:\[\d+\])?: |^\[\s*\d+%\] (?:Building|Linking)|^ninja: |^\S+\.(?:c|cc|cpp|cxx|h|hpp|m|mm):\d+:\d+: (?:fatal error|error|warning): ",
        )
    )


def _lint(s: Sequence[str]) -> bool:
    if _count(s, _HEADED_FINDING) >= 2 and _count(s, r"^\s*--> \S+:\d+") >= 2:
        return True
    findings = _count(
        s,
        r"^\S+?:\d+:\d+: (?:[A-Z]+\d+|[CRWEF]:) |^\s+\d+:\d+(?:-\d+:\d+)?\s+(?:error|warning)\s"
        r"|^\S+?:\d+:\d+(?:-\d+)?: (?:Error|Warning|Suggestion): |^\S+?:\d+:\d+: .* \([\w-]+\)$",
    )
    summary = _count(
        s,
        r"^[✖⚠]\s*\d+ (?:problems?|warnings?)|\d+ files? inspected|^\d+ hints?$|Your code has been rated",
    )
    return findings >= 2 or summary > 0


def _stack_trace(s: Sequence[str]) -> bool:
    return (
        _found(s, r"Traceback \(most recent call last\):|^Exception in thread |^goroutine \d+ \[")
        or _count(s, r"^\s+at [\w$.<>]+\(.*\)$|^\s+at .*:\d+:\d+\)?$") >= 2
    )


def _package_install(s: Sequence[str]) -> bool:
    return _found(
        s,
        r"^(?:Collecting |Successfully installed |Requirement already satisfied|Installing collected packages"
        r"|npm (?:WARN|ERR!|warn|error) |added \d+ packages?|up to date, audited|found \d+ vulnerabilit"
        r"|\s*Installed package|\s*Installing \S+ v\d|Reading package lists|(?:Get|Hit):\d+ |Setting up |Unpacking "
        r"|(?:Inst|Conf|Remv) \S+ |Package\s+Version\s*$|Name: \S|Package: \S)",
    )


def _process_list(s: Sequence[str]) -> bool:
    return _found(s[:3], r"^\s*(?:USER|UID)\s+PID\b|^\s*PID\s+(?:TTY|USER|PPID)\b")


def _dir_listing(s: Sequence[str]) -> bool:
    return (
        _found(s, r"^total \d+$")
        or _share(s, r"^[-dlcbps][-rwxsStT]{9}[.+@]?\s+\d+\s") >= 0.5
        or _share(s, r"^\s*\d+(?:[.,]\d+)?[KMGTP]?\s+\S*/") >= 0.8
        or _share(s, r"^\.{0,2}/\S*$") >= 0.8
        or (_count(s, r"^\S.*:$") >= 2 and _share(s, r"^[^\s:]+$") >= 0.6)
    )


def _grep(s: Sequence[str]) -> bool:
    # A file part needs a dot or a slash, so "2025-03-01 10:00:00" is not a match row;
    # "file:line:col: message" is a compiler's or a linter's finding, not a match.
    rows = _share(s, r"^(?=[^\s:]*[./])[^\s:]*(?::\d+:(?!\d+: )|-\d+-)|^\d+[:-](?!\d)")
    return rows >= 0.6 or _share(s, r"^[^\s:]+\.\w+:\S") >= 0.8


_FINDING_ROW_SHARE = 0.2
# A search row with its matched text right after "path:line:" (or indented code after it): the
# text is data, so a matched line that says "error" is no diagnostic of the search.
_MATCH_TEXT = re.compile(r"^(?=[^\s:]*[./])[^\s:]*(?::\d+:(?!\d+:)|-\d+-)(?:\S|\t| {2}|$)")


def _finding_rows(s: Sequence[str]) -> bool:
    # A checker states a message after "path:line: " (vulture's "unused import", codespell's
    # "teh ==> the"); grep prints the matched text right after the colon, or indented code.
    return _share(s, r"^[^\s:]+:\d+(?::\d+)?: [\w'\"`(\[]") >= _FINDING_ROW_SHARE


_WEAK = frozenset({"git-log", "git-status", "dir-listing", "grep"})
"""Kinds recognised by the share of lines of one shape: an output that also prints
diagnostics is not one of them, since their rules treat lines as data."""

_CHECKS: tuple[tuple[str, Callable[[Sequence[str]], bool]], ...] = (
    ("git-diff", _git_diff),
    ("git-log", _git_log),
    ("git-blame", _git_blame),
    ("git-status", _git_status),
    ("pytest", _pytest),
    ("cargo-test", _cargo_test),
    ("jest", _jest),
    ("scala-test", _scala_test),
    ("go-test", _go_test),
    ("rustc", _rustc),
    ("typecheck", _typecheck),
    ("build", _build),
    ("lint", _lint),
    ("stack-trace", _stack_trace),
    ("package-install", _package_install),
    ("process-list", _process_list),
    ("dir-listing", _dir_listing),
    ("grep", _grep),
)


_NEEDS: dict[str, tuple[str, ...]] = {
    "git-diff": ("diff --git ", "@@ "),
    "git-blame": ("author ", "("),
    "pytest": ("test session starts", "short test summary info", "collected ", "= ", "::"),
    "cargo-test": ("running ",),
    "jest": ("PASS", "FAIL", "Test "),
    "rustc": ("error", "warning", "panicked at "),
    "build": (
        "): error", "): warning", "Build ", "Determining projects to restore", "> Task :", "BUILD ", "FAILURE: ",
        "make", "%] ", "ninja: ", "error: ", "warning: ",
    ),
    "stack-trace": ("Traceback (most recent call last):", "Exception in thread ", "goroutine ", "at "),
    "package-install": (
        "Collecting ", "Successfully installed ", "Requirement already satisfied", "Installing ", "npm ", "added ",
        "up to date, audited", "found ", "Installed package", "Reading package lists", "Get:", "Hit:", "Setting up ",
        "Unpacking ", "Inst ", "Conf ", "Remv ", "Package", "Name: ",
    ),
}  # fmt: skip
"""Text that every output a check accepts contains (one of): one substring test on the
sample skips the check's regex scans for the many outputs that lack all of them."""


def detect_lines(text: str, lines: Sequence[str], *, exclude: frozenset[str] = frozenset(), failed: bool = False) -> str:
    """Detect the kind from the raw ``text`` and its normalised ``lines``, never one in ``exclude``.

    ``failed`` says the command exited non-zero. grep and ripgrep exit 1 when nothing
    matched, having printed nothing, so ``path:line: message`` rows of a failed run are
    a checker's findings, not matches; rows that carry matched text stay a search.
    """
    nonblank = [line for line in lines[:50] if line.strip()]
    if not nonblank:
        return "generic"
    first = nonblank[0].lstrip()
    if (
        "go-test" not in exclude
        and first.startswith("{")
        and sum('"Action"' in line for line in nonblank[:20]) >= min(3, len(nonblank))
    ):
        return "go-test"
    if "json" not in exclude and first[:1] in "{[" and parse_json(text) is not None:
        return "json"
    if len(lines) > _HEAD_LINES + _TAIL_LINES:
        lines = [*lines[:_HEAD_LINES], *lines[-_TAIL_LINES:]]
    sample = _Sample(probe_lines(lines))
    diagnostics: bool | None = None
    for position, (kind, check) in enumerate(_CHECKS):
        if position == _CHECKS_BEFORE_WORDS:
            sample.by_words = len(sample.text) >= _WORDS_MIN_CHARS
        if kind in exclude or (kind in _NEEDS and not _mentions(sample, *_NEEDS[kind])) or not check(sample):
            continue
        if kind == "grep" and failed and _finding_rows(sample):
            continue
        if kind == "grep":
            if count_diagnostic_lines([line for line in sample if not _MATCH_TEXT.match(line)], 2) >= 2:
                continue
        elif kind in _WEAK:
            if diagnostics is None:
                diagnostics = count_diagnostic_lines(sample, 2) >= 2
            if diagnostics:
                continue
        return kind
    return "generic"


_REMEMBERED_CHARS = 16_384
"""Kinds of outputs up to this long are remembered: an agent reads the same short output
again and again (a file, a status), and a few hundred of them stay a few megabytes."""


def detect_kind(text: str, *, exclude: Collection[str] = ()) -> str:
    """The kind of tool output ``text`` looks like (one of ``KINDS``; ``generic`` when unsure).

    ``exclude`` names kinds that may not be chosen: what the rest of the detector does
    with a format it has no rule for.
    """
    excluded = frozenset(exclude)
    if type(text) is str and len(text) <= _REMEMBERED_CHARS:
        return _remembered_kind(text, excluded)
    return detect_lines(text, normalize_lines(text), exclude=excluded)


@functools.lru_cache(maxsize=256)
def _remembered_kind(text: str, exclude: frozenset[str]) -> str:
    # The kind is a function of the text and the exclusions alone.
    return detect_lines(text, normalize_lines(text), exclude=exclude)
