"""More report shapes on the severity ladder: codes in trailing parentheses, places in
words or parentheses, shellcheck's tty paragraphs and checkstyle XML.

Each sample is written here in a tool's shape with a few findings at the severity that
fails the run among many lower ones, compressed as the command line does it.
"""

from __future__ import annotations

import as_cli as cli

from contextwright.tool_outputs.compressors import compress


def _flood(lower: str, errors: dict[int, str], total: str, count: int = 400) -> tuple[str, list[str]]:
    # ``count`` lower findings from ``lower`` (formatted with n), the errors at their positions, then the total.
    lines: list[str] = []
    for n in range(count):
        lines.append(lower.format(n=n, file=f"src/widgets/part_{n // 40}.js", row=n + 3))
        if n in errors:
            lines.append(errors[n])
    lines += ["", total]
    return "\n".join(lines) + "\n", [*errors.values(), total]


def test_jshint_warning_codes_fold_under_its_error_codes():
    text, must = _flood(
        "{file}: line {row}, col 14, Missing semicolon. (W033)",
        {
            120: "src/widgets/part_3.js: line 8, col 17, Unexpected '1'. (E024)",
            310: "src/widgets/part_7.js: line 44, col 2, Expected ')' and instead saw ';'. (E021)",
        },
        "402 errors",
    )
    shown = cli.shown(text)
    assert set(must) <= shown
    assert cli.reduction(text) > 0.8
    # One W033 stays as the example of what folded.
    assert sum("(W033)" in line for line in shown) >= 1


def test_eslint_compact_and_unix_warnings_fold_under_errors():
    compact, compact_must = _flood(
        "/app/{file}: line {row}, col 5, Warning - 'tmp{n}' is assigned a value but never used. (no-unused-vars)",
        {200: "/app/src/widgets/part_5.js: line 9, col 1, Error - 'render' is not defined. (no-undef)"},
        "401 problems",
    )
    unix, unix_must = _flood(
        "/app/{file}:{row}:5: 'tmp{n}' is assigned a value but never used. [Warning/no-unused-vars]",
        {200: "/app/src/widgets/part_5.js:9:1: 'render' is not defined. [Error/no-undef]"},
        "401 problems",
    )
    for text, must in ((compact, compact_must), (unix, unix_must)):
        assert set(must) <= cli.shown(text)
        assert cli.reduction(text) > 0.8


def test_tidy_places_in_words_with_a_severity_after_a_dash():
    text, must = _flood(
        'line {row} column 7 - Warning: <img> lacks "alt" attribute',
        {150: "line 60 column 3 - Error: <blink> is not recognized!"},
        "Tidy found 400 warnings and 1 error!",
    )
    assert set(must) <= cli.shown(text)
    assert cli.reduction(text) > 0.8


def test_tsc_and_msvc_places_in_parentheses():
    tsc, tsc_must = _flood(
        "{file}({row},9): warning TS6133: 'value{n}' is declared but its value is never read.",
        {90: "src/widgets/part_2.ts(30,5): error TS2322: Type 'string' is not assignable to type 'number'."},
        "Found 1 error in src/widgets/part_2.ts:30",
    )
    msvc, msvc_must = _flood(
        r"C:\build\src\unit_{n}.c({row}): warning C4996: 'strcpy': This function or variable may be unsafe.",
        {250: r"C:\build\src\unit_250.c(88): error C2065: 'count': undeclared identifier"},
        "Build FAILED.",
    )
    for text, must in ((tsc, tsc_must), (msvc, msvc_must)):
        assert set(must) <= cli.shown(text)
        assert cli.reduction(text) > 0.7


def _shellcheck_paragraph(file: str, row: int, source: str, caret: str) -> list[str]:
    return [f"In {file} line {row}:", source, caret, "", ""]


def test_shellcheck_tty_paragraphs_below_an_error_fold():
    lines: list[str] = []
    for n in range(120):
        lines += _shellcheck_paragraph(
            "deploy.sh",
            n + 10,
            f'if [ -z "${{VAR_{n}}}" ]; then',
            "   ^-------------^ SC2292 (style): Prefer [[ ]] over [ ] for tests in Bash/Ksh/Busybox.",
        )
        if n == 60:
            lines += [
                "In deploy.sh line 400:",
                '  [[ $DEBUG== 1 ]] && printf "debug\\n"',
                "  ^-- SC1073 (error): Couldn't parse this test expression. Fix to allow more checks.",
                "",
                "",
            ]
    lines.append("For more information:")
    lines.append("  https://www.shellcheck.net/wiki/SC1073 -- Couldn't parse this test expression.")
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert {
        "In deploy.sh line 400:",
        "  ^-- SC1073 (error): Couldn't parse this test expression. Fix to allow more checks.",
    } <= shown
    assert cli.reduction(text) > 0.7


def test_checkstyle_info_folds_and_the_file_of_a_kept_error_stays():
    lower = [
        ("info", "SC2292", "Prefer [[ ]] over [ ] for tests in Bash"),
        ("style", "SC2250", "Prefer putting braces around variable references even when not strictly required"),
        ("warning", "SC2034", "This variable appears unused. Verify use (or export if used externally)"),
        ("info", "SC2086", "Double quote to prevent globbing and word splitting"),
    ]
    lines = ["<?xml version='1.0' encoding='UTF-8'?>", "<checkstyle version='4.3'>"]
    for file in range(30):
        lines.append(f"<file name='scripts/step_{file}.sh' >")
        for n in range(60):
            level, code, message = lower[n % len(lower)]
            lines.append(
                f"<error line='{n + 5}' column='{n % 9 + 1}' severity='{level}' message='{message} VAR_{n}.'"
                f" source='ShellCheck.{code}' />"
            )
        if file == 17:
            lines.append(
                "<error line='121' column='38' severity='error' message='Argument mixes string and array.'"
                " source='ShellCheck.SC2145' />"
            )
        lines.append("</file>")
    lines.append("</checkstyle>")
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert "<file name='scripts/step_17.sh' >" in shown
    assert any("severity='error'" in line for line in shown)
    assert cli.reduction(text) > 0.8


def _perl_check_loop(with_errors: bool) -> tuple[str, list[str]]:
    # What `for f in lib/**/*.pm; do perl -wc $f; done` prints: one verdict per module,
    # perldiag warnings, and for broken modules errors placed by "at FILE line N."
    lines: list[str] = []
    errors: list[str] = []
    for n in range(90):
        module = f"lib/Acme/Part{n}.pm"
        if n % 9 == 4:
            lines += [f"Subroutine helper_{k} redefined at {module} line {k * 7 + 20}." for k in range(6)]
        if n % 11 == 2:
            lines.append(f'Name "Acme::Part{n}::FH" used only once: possible typo at {module} line {n + 40}.')
        if with_errors and n == 33:
            errors += [
                f'syntax error at {module} line 12, near "my "',
                f'Global symbol "$tail" requires explicit package name (did you forget to declare "my $tail"?)'
                f" at {module} line 12.",
                f"BEGIN not safe after errors--compilation aborted at {module} line 30.",
            ]
            lines += errors[-3:]
            continue
        if with_errors and n == 71:
            error = (
                "Can't locate Tk.pm in @INC (you may need to install the Tk module) (@INC contains: /etc/perl"
                f" /usr/share/perl/5.36) at {module} line 5."
            )
            errors += [error, f"BEGIN failed--compilation aborted at {module} line 5."]
            lines += errors[-2:]
            continue
        lines.append(f"{module} syntax OK")
    return "\n".join(lines) + "\n", errors


def test_perl_warnings_and_ok_verdicts_fold_under_its_compile_errors():
    text, must = _perl_check_loop(with_errors=True)
    shown = cli.shown(text)
    assert [line for line in must if line not in shown] == []
    assert cli.reduction(text) > 0.7
    assert "warning redefine" in compress(text, budget_tokens="auto", exit_code=1).text


def test_perl_warnings_alone_are_all_kept():
    text, _ = _perl_check_loop(with_errors=False)
    shown = cli.shown(text)
    warnings = [line for line in text.splitlines() if " redefined at " in line or "used only once" in line]
    assert [line for line in warnings if line not in shown] == []


def test_bare_warning_lines_fold_under_a_bare_error_line():
    lines = [f"WARNING: Retrying (Retry(total={n % 5})) after connection broken: /simple/pkg-{n}/" for n in range(150)]
    lines.insert(90, "ERROR: Could not find a version that satisfies the requirement acme-sdk==9.1 (from versions: none)")
    lines.append("ERROR: No matching distribution found for acme-sdk==9.1")
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert {lines[90], lines[-1]} <= shown
    assert cli.reduction(text) > 0.8


def test_starred_warnings_fold_under_starred_errors():
    lines: list[str] = []
    for n in range(80):
        doc = f"lib/Acme/Doc{n}.pm"
        if n % 4 == 1:
            lines.append(f"*** WARNING: empty section in previous paragraph at line {n + 30} in file {doc}")
        if n == 50:
            lines += [f"*** ERROR: Unknown directive: =bakc at line 12 in file {doc}", f"{doc} has 1 pod syntax error."]
            continue
        lines.append(f"{doc} pod syntax OK.")
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert "*** ERROR: Unknown directive: =bakc at line 12 in file lib/Acme/Doc50.pm" in shown
    assert "lib/Acme/Doc50.pm has 1 pod syntax error." in shown
    starred = [line for line in text.splitlines() if line.startswith("*** WARNING")]
    assert len(set(starred) & shown) < len(starred)


def test_shellcheck_gcc_format_coded_notes_fold_under_its_errors():
    notes = [
        "Not following: ../../common.sh was not specified as input (see shellcheck -x). [SC1091]",
        "This function is never invoked. Check usage (or ignored if invoked indirectly). [SC2329]",
        "Useless echo? Instead of 'cmd $(echo foo)', just use 'cmd foo'. [SC2116]",
        "Double quote to prevent globbing and word splitting. [SC2086]",
    ]
    lines: list[str] = []
    errors: list[str] = []
    for n in range(150):
        script = f"test/fast/Unit tests/case_{n}"
        lines += [f"{script}:{n % 30 + 4 + k}:4: note: {note}" for k, note in enumerate(notes[: n % 4 + 1])]
        if n % 50 == 7:
            errors.append(f"{script}:14:11: error: Argument to -n is always true due to literal strings. [SC2157]")
            lines.append(errors[-1])
    text = "\n".join(lines) + "\n"
    shown = cli.shown(text)
    assert set(errors) <= shown
    assert cli.reduction(text) > 0.8


def test_a_note_without_a_code_stays_with_the_error_above_it():
    lines = [f"src/unit_{n}.c:{n + 3}:5: warning: unused variable 'tmp{n}' [-Wunused-variable]" for n in range(120)]
    lines += [
        "src/main.c:40:12: error: conflicting types for 'parse_config'",
        "src/config.h:8:6: note: previous declaration of 'parse_config' with type 'int(const char *)'",
    ]
    shown = cli.shown("\n".join(lines) + "\n")
    assert set(lines[-2:]) <= shown
