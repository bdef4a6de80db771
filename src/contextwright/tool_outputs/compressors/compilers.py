"""Compilers and builds: rustc/cargo build, tsc, mypy, scalac/sbt, MSBuild/dotnet, gradle, maven, make.

Every error and warning with its location line is protected, as is the tool's
verdict ("Build FAILED.", "could not compile", "BUILD SUCCESSFUL"); notes rank
below them. Dependency resolution, task lists and progress are ordinary lines that get
grouped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from contextwright.tool_outputs.compressors.generic import is_exception_line, is_location_line, is_summary_line
from contextwright.tool_outputs.compressors.marks import KEY, KEY_HIGH, KEY_LOW, Marks

# --- rustc / cargo build ---------------------------------------------------------------

_RUST_ERROR = re.compile(r"^error(?:\[E\d+\])?: ")
_RUST_WARNING = re.compile(r"^warning(?:\[\w+\])?: ")
_RUST_LOCATION = re.compile(r"^\s*--> \S")
_RUST_SNIPPET = re.compile(r"^\s*(?:\d+\s*)?\|")
_RUST_NOTE = re.compile(r"^\s*(?:= )?(?:help|note): ")
_CARGO_PROGRESS = re.compile(
    r"^\s*(?:Compiling|Checking|Finished|Running|Downloaded|Downloading|Updating|Locking|Fresh|Blocking)\b"
)
_RUST_PANIC_DETAIL = re.compile(
    r"^(?:assertion .* failed|\s*left: |\s*right: |note: panic did not|\s*(?:panic message|expected substring): |---- \S+ std(?:out|err) ----$)"
)


def analyse_rustc(lines: Sequence[str], marks: Marks) -> None:
    """rustc: ``error[...]`` lines with their ``-->`` location, panics and the verdict are kept."""
    current = ""
    for index, line in enumerate(lines):
        if _RUST_ERROR.match(line):
            marks.must(index)
            marks.failed = True
            current = "error"
        elif _RUST_WARNING.match(line):
            # A warning and its location are kept like an error's; "generated N warnings" is a total.
            marks.must(index)
            current = "warning"
        elif _RUST_LOCATION.match(line):
            if current in ("error", "warning"):
                marks.must(index)
            else:
                marks.key(index, KEY)
        elif "panicked at" in line or _RUST_PANIC_DETAIL.match(line):
            # A panic (from `cargo run` or a test) with its assertion detail.
            marks.must(index)
            marks.failed = True
            if index + 1 < len(lines) and lines[index + 1].strip():
                marks.must(index + 1)
            current = "error"
        elif _RUST_SNIPPET.match(line):
            marks.key(index, KEY_LOW if current == "error" else KEY_LOW - 10, "code snippet line")
        elif _RUST_NOTE.match(line):
            marks.key(index, KEY if current == "error" else KEY_LOW, f"{current or 'compiler'} note")
        elif _CARGO_PROGRESS.match(line):
            marks.label(index, "cargo progress")
        elif line.startswith("Some errors have detailed explanations"):
            marks.must(index)  # the error codes of the whole run
        elif line.startswith("For more information about"):
            marks.label(index, "explain hint")
        elif line.startswith("note: run with `RUST_BACKTRACE"):
            marks.label(index, "backtrace hint")


# --- type checkers: tsc, mypy, scalac/sbt ----------------------------------------------

_TSC_ERROR = re.compile(r"^\S.*?(?:\(\d+,\d+\): |:\d+:\d+ - )error TS\d+: ")
_TSC_FOUND = re.compile(r"^Found \d+ errors?\b")
_MYPY = re.compile(r"^\S+?:\d+(?::\d+)?: (error|warning|note): ")
_MYPY_VERDICT = re.compile(r"^(?:Found \d+ errors? in \d+ files?|Success: no issues found)")
_SBT = re.compile(r"^\[(error|warn|info|success)\] ")
_SBT_LOCATED = re.compile(r"^\[(?:error|warn)\] \S+\.(?:scala|java|sbt):\d+")
_SBT_VERDICT = re.compile(r"\b(?:one|two|three|\d+) (?:errors?|warnings?) found$|Compilation failed|Total time:")


def analyse_typecheck(lines: Sequence[str], marks: Marks) -> None:
    """tsc, mypy, scalac: every located error and the error count are kept; notes rank lower."""
    in_error = False
    for index, line in enumerate(lines):
        sbt = _SBT.match(line)
        if _TSC_ERROR.match(line) or line.startswith("error TS"):
            marks.must(index)
            marks.failed = True
            in_error = True
        elif _TSC_FOUND.match(line) or _MYPY_VERDICT.match(line):
            marks.must(index)
        elif (mypy := _MYPY.match(line)) is not None:
            severity = mypy.group(1)
            if severity == "error":
                marks.must(index)
                marks.failed = True
            elif severity == "warning":
                marks.must(index)
            else:
                marks.key(index, KEY_LOW, f"mypy {severity}")
            in_error = severity == "error"
        elif sbt is not None:
            level = sbt.group(1)
            if _SBT_LOCATED.match(line):
                marks.must(index)
                marks.failed = marks.failed or level == "error"
                in_error = level == "error"
            elif level == "error" and _SBT_VERDICT.search(line) and "Total time" not in line:
                marks.must(index)
                marks.failed = True
            elif level == "error":
                marks.key(index, KEY if in_error else KEY_HIGH)
            elif level == "warn":
                marks.key(index, KEY_LOW if not _SBT_VERDICT.search(line) else KEY_HIGH)
            elif level == "success":
                marks.must(index)
            elif line.startswith("[info] Resolving "):
                marks.label(index, "[info] Resolving dependency")
            else:
                marks.label(index, "[info] line")
        elif in_error and line.startswith((" ", "\t")) and line.strip():
            marks.key(index, KEY, "error detail")
        else:
            in_error = False
            if re.match(r"^(?:yarn run v|\$ |info Visit |Done in |npm ERR! code|> )", line):
                marks.label(index, "runner line")


# --- builds: MSBuild/dotnet, gradle, maven, make/gcc -----------------------------------

_MSBUILD = re.compile(r"\(\d+(?:,\d+)?\): (error|warning) [A-Z]+\d+: ")
_MSBUILD_VERDICT = re.compile(
    r"^\s*(?:Build FAILED\.|Build succeeded\.|\d+ Error\(s\)|\d+ Warning\(s\)|Failed!|Passed!|Total tests: )"
)
_DOTNET_TEST_PASS = re.compile(r"^\s*Passed \S+ \[")
_DOTNET_TEST_FAIL = re.compile(r"^\s*Failed \S+ \[|^\s*Error Message:")
_GRADLE_TASK = re.compile(r"^> Task :\S+(?: (UP-TO-DATE|NO-SOURCE|SKIPPED|FROM-CACHE|NO-SOURCE|FAILED))?$")
_GRADLE_VERDICT = re.compile(
    r"^(?:BUILD (?:SUCCESSFUL|FAILED)|FAILURE: |Execution failed for task|\* What went wrong:|\d+ tests? completed, \d+ failed|> There were failing tests)"
)
_GRADLE_TEST = re.compile(r"^(\S+ > .+?) (PASSED|FAILED|SKIPPED)$")
_MAVEN = re.compile(r"^\[(ERROR|WARNING|INFO)\] ")
_MAVEN_VERDICT = re.compile(r"BUILD (?:SUCCESS|FAILURE)|Tests run: \d+, Failures: \d+|Failed tests:|Tests in error:")
_MAVEN_CLASS_TALLY = re.compile(r"Tests run: \d+, Failures: 0, Errors: 0, .* (?:-- )?in \S+$")
_MAKE_ERROR = re.compile(r"^(?:g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped|collect2: error|ld: )")
_GCC = re.compile(r"^\S+?:\d+(?::\d+)?: (fatal error|error|warning|note): ")
_BUILD_PROGRESS = re.compile(
    r"^\s*(?:Determining projects to restore|All projects are up-to-date|Restored |Restoring |"
    r"\[\s*\d+%\]|make(?:\[\d+\])?: (?:Entering|Leaving) directory|Download(?:ing|ed) |Progress \(|"
    r"(?:CC|CXX|LD|AR|AS|GEN|CCLD|CXXLD)\s+\S)"
)


def analyse_build(lines: Sequence[str], marks: Marks) -> None:
    """Builds: located errors, failing tests and the verdict are kept; task and progress lines group."""
    in_failure = False
    located = True
    for index, line in enumerate(lines):
        if (msbuild := _MSBUILD.search(line)) is not None:
            marks.must(index)
            marks.failed = marks.failed or msbuild.group(1) == "error"
        elif _MSBUILD_VERDICT.match(line) or _GRADLE_VERDICT.match(line):
            marks.must(index)
            if re.search(r"FAILED|FAILURE|Failed!|[1-9]\d* Error\(s\)|[1-9]\d* failed|failing", line):
                marks.failed = True
        elif _DOTNET_TEST_PASS.match(line):
            marks.noise(index, "passed test")
        elif _DOTNET_TEST_FAIL.match(line):
            marks.must(index)
            marks.failed = True
            in_failure, located = True, located and line.lstrip().startswith("Error Message")
        elif (task := _GRADLE_TASK.match(line)) is not None:
            if task.group(1) == "FAILED":
                marks.must(index)
                marks.failed = True
            else:
                marks.label(index, "> Task line")
        elif (test := _GRADLE_TEST.match(line)) is not None:
            in_failure = test.group(2) == "FAILED"
            located = not in_failure
            if in_failure:
                marks.must(index)
                marks.failed = True
            else:
                marks.noise(index, f"{test.group(2).lower()} test")
        elif (maven := _MAVEN.match(line)) is not None:
            if _MAVEN_CLASS_TALLY.search(line):
                # One tally per test class that passed; the run's own tally follows.
                marks.label(index, "test class tally")
            elif _MAVEN_VERDICT.search(line):
                marks.must(index)
                marks.failed = marks.failed or "FAILURE" in line or re.search(r"Failures: [1-9]", line) is not None
            elif maven.group(1) == "ERROR":
                marks.must(index)
                marks.failed = True
            elif maven.group(1) == "WARNING" and line[maven.end() :].strip():
                marks.must(index)  # a warning is a diagnostic, like an error
            elif is_summary_line(line[maven.end() :]):
                marks.must(index)  # the compiler's own tally, such as "[INFO] 3 errors"
            elif "Download" in line:
                marks.noise(index, "download line")
            else:
                marks.label(index, "[INFO] line")
        elif _MAKE_ERROR.match(line):
            marks.must(index)
            marks.failed = True
        elif (gcc := _GCC.match(line)) is not None:
            severity = gcc.group(1)
            if severity != "note":
                marks.must(index)
                marks.failed = marks.failed or "error" in severity
            else:
                marks.key(index, KEY_LOW, f"compiler {severity}")
        elif _BUILD_PROGRESS.match(line):
            marks.label(index, "build progress")
        elif in_failure and line.startswith((" ", "\t")) and line.strip():
            if line.lstrip().startswith("at ") and not located and is_location_line(line):
                # The first frame that names a file is where the test failed.
                marks.must(index)
                located = True
            elif line.lstrip().startswith("at "):
                marks.key(index, KEY_LOW, "stack frame")
            elif is_exception_line(line):
                marks.must(index)
            else:
                marks.key(index, KEY_HIGH, "failure detail")
        elif line.startswith("Time Elapsed"):
            marks.label(index, "timing line")
        else:
            in_failure = in_failure and line.strip() != "" and not line.startswith(">")
