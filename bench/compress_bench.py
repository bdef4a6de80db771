"""Benchmark the tool-output compressors at their default settings against plain head+tail truncation.

For every sample of ``shared/tool-outputs`` (exact o200k_base token counts), with the
settings a user gets by default (``budget_tokens="auto"``, an exit code of 1 only where
the sample carries a failure, no kind hint):

* ours: must-line retention and token reduction, per corpus folder and overall;
* ours with detection barred from the sample's own kind (leave one kind out), which is
  what an output of a tool without rules gets;
* head+tail truncation cut to the same number of tokens as ours, sample by sample;
* latency of the public call per 100 KB, with the default token counter.

The hand-written outputs of tools the corpus lacks (``tests/tool_outputs/unseen_samples.py``)
get the same treatment in a second table. Prints both tables and writes them into
``docs/benchmarks.md``; the default-settings summary also goes into ``docs/tool-outputs.md``.

With ``--heldout DIR``, a set of real outputs kept outside the repository (``DIR/out/NAME.txt``,
with the lines each must keep in ``DIR/must/NAME.must``) is run the way ``contextwright
compress --exit-code 1`` runs it, and gets a table of its own.

    python bench/compress_bench.py [--budget auto|keep|N] [--quick] [--no-write] [--heldout DIR]
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1] / "tests" / "tool_outputs"))
import argparse
import dataclasses
import json
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from _docs import BENCHMARKS, machine_load, update_section

from contextwright.budget._tokenizers import exact_token_counter
from contextwright.testing.corpus import corpus_path, missing_reason
from contextwright.tool_outputs.compressors import calibrated_token_count, compress, detect_kind, normalize

TOOL_OUTPUTS_DOC = Path(__file__).resolve().parents[1] / "docs" / "tool-outputs.md"
QUICK_MAX_BYTES = 50_000
LATENCY_MIN_BYTES = 10_000
LATENCY_ROUNDS = 3
FINDINGS_ONLY = {"reek_report", "eslint_warnings", "eslint_compact_run", "go_vet", "hadolint_run"}
FOLDER_KIND = {
    "dotnet": "build",
    "gradle": "build",
    "json-api": "json",
    "package-manager": "package-install",
    "rustc-build": "rustc",
    "search": "grep",
}


@dataclass
class Sample:
    """One output with its must lines and what the run knows about it."""

    group: str
    name: str
    text: str
    must: list[str]
    exit_code: int | None
    kind: str


@dataclass
class Tally:
    """Sums for one group of samples (or for all of them)."""

    samples: int = 0
    with_must: int = 0
    must_lines: int = 0
    tokens_in: int = 0
    ours_out: int = 0
    ours_kept_lines: int = 0
    ours_all_kept: int = 0
    loo_out: int = 0
    loo_kept_lines: int = 0
    loo_all_kept: int = 0
    base_kept_lines: int = 0
    base_all_kept: int = 0
    lost: list[str] = field(default_factory=list)
    loo_lost: list[str] = field(default_factory=list)


def head_tail(text: str, budget: int, count: Callable[[str], int]) -> str:
    """Plain truncation: whole lines from the head and the tail, half the budget each, one marker."""
    if count(text) <= budget:
        return text
    lines = text.split("\n")
    marker_cost = count("[... 99999 lines omitted ...]") + 1
    half = max(0, (budget - marker_cost) // 2)
    head: list[str] = []
    used = 0
    for line in lines:
        cost = count(line) + 1
        if used + cost > half:
            break
        head.append(line)
        used += cost
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        cost = count(line) + 1
        if used + cost > half:
            break
        tail.append(line)
        used += cost
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[... {omitted} lines omitted ...]", *tail])


def _kept(must: list[str], text: str) -> int:
    shown = set(normalize(text).split("\n"))
    trimmed = {line.rstrip() for line in shown}
    return sum(1 for line in must if line in shown or line.rstrip() in trimmed)


def corpus_samples(quick: bool) -> Iterator[Sample]:
    """The shared corpus, with each sample's folder kind and exit code."""
    root = corpus_path("tool-outputs")
    if root is None:
        sys.exit(missing_reason("tool-outputs"))
    for record in json.loads((root / "manifest.json").read_text()):
        if quick and record["bytes"] > QUICK_MAX_BYTES:
            continue
        must: list[str] = []
        if record["must_file"]:
            raw = (root / record["must_file"]).read_text(encoding="utf-8")
            must = [normalize(line) for line in raw.split("\n") if line]
        yield Sample(
            group=record["kind"],
            name=record["file"],
            text=(root / record["file"]).read_text(encoding="utf-8"),
            must=must,
            exit_code=1 if record["has_error_signal"] else None,
            kind=FOLDER_KIND.get(record["kind"], record["kind"]),
        )


def unseen_samples() -> Iterator[Sample]:
    """Hand-written outputs of tools the corpus lacks; every one is a failed run."""
    import unseen_samples as unseen

    for name, build in sorted(unseen.UNSEEN.items()):
        text, must = build()
        yield Sample(group=name, name=name, text=text, must=must, exit_code=1, kind=detect_kind(text))


def heldout_samples(root: Path) -> Iterator[Sample]:
    """Real outputs kept outside the repository, each a failed run, with their must-line sidecars."""
    for path in sorted((root / "out").glob("*.txt")):
        text = path.read_bytes().decode("utf-8", errors="replace")  # as the command line reads it
        sidecar = root / "must" / f"{path.stem}.must"
        must = [normalize(line) for line in sidecar.read_text(encoding="utf-8").split("\n") if line] if sidecar.exists() else []
        yield Sample(group=path.stem, name=path.stem, text=text, must=must, exit_code=1, kind=detect_kind(text))


def run(
    samples: Iterator[Sample], budget: int | str, count: Callable[[str], int], *, as_cli: bool = False
) -> tuple[dict[str, Tally], Tally]:
    """Ours, ours with the sample's kind left out, and head+tail at ours' size, over ``samples``.

    ``as_cli`` compresses as ``contextwright compress`` does, aiming with its token counter
    (the calibrated estimate); ``count`` then only measures what comes in and out.
    """
    groups: dict[str, Tally] = defaultdict(Tally)
    total = Tally()
    for sample in samples:
        options = {
            "budget_tokens": None if budget == "keep" else budget,
            "keep_content": budget == "keep",
            "exit_code": sample.exit_code,
            "count_tokens": calibrated_token_count if as_cli else count,
        }
        ours = compress(sample.text, **options)  # type: ignore[arg-type]
        loo = compress(sample.text, exclude_kinds={sample.kind}, **options)  # type: ignore[arg-type]
        if as_cli:
            ours = dataclasses.replace(ours, original_tokens=count(sample.text), compressed_tokens=count(ours.text))
            loo = dataclasses.replace(loo, compressed_tokens=count(loo.text))
        base = head_tail(sample.text, ours.compressed_tokens, count)
        kept = (_kept(sample.must, ours.text), _kept(sample.must, loo.text), _kept(sample.must, base))
        for tally in (groups[sample.group], total):
            tally.samples += 1
            tally.tokens_in += ours.original_tokens
            tally.ours_out += ours.compressed_tokens
            tally.loo_out += loo.compressed_tokens
            if not sample.must:
                continue
            tally.with_must += 1
            tally.must_lines += len(sample.must)
            tally.ours_kept_lines += kept[0]
            tally.loo_kept_lines += kept[1]
            tally.base_kept_lines += kept[2]
            tally.ours_all_kept += kept[0] == len(sample.must)
            tally.loo_all_kept += kept[1] == len(sample.must)
            tally.base_all_kept += kept[2] == len(sample.must)
            if kept[0] < len(sample.must):
                tally.lost.append(sample.name)
            if kept[1] < len(sample.must):
                tally.loo_lost.append(sample.name)
    return dict(sorted(groups.items())), total


def latency(samples: list[Sample]) -> tuple[float, float, str, float]:
    """Per 100 KB of the default call (default counter): wall-clock ms overall, the slowest sample's CPU ms, its name, CPU ms overall.

    CPU time is what the call costs the process whatever else the machine runs; the
    wall-clock figure also holds the waits of a shared machine.
    """
    seconds = cpu = 0.0
    size = 0
    worst = (0.0, "")
    for sample in samples:
        data = len(sample.text.encode("utf-8"))
        if data < LATENCY_MIN_BYTES:
            continue
        best = best_cpu = float("inf")
        for _ in range(LATENCY_ROUNDS):
            started, started_cpu = time.perf_counter(), time.process_time()
            compress(sample.text, budget_tokens="auto", exit_code=sample.exit_code)
            best = min(best, time.perf_counter() - started)
            best_cpu = min(best_cpu, time.process_time() - started_cpu)
        seconds += best
        cpu += best_cpu
        size += data
        worst = max(worst, (1000 * best_cpu / (data / 100_000), sample.name))
    if not size:
        return 0.0, 0.0, "", 0.0
    return 1000 * seconds / (size / 100_000), worst[0], worst[1], 1000 * cpu / (size / 100_000)


def _reduction(before: int, after: int) -> str:
    return f"{100 * (1 - after / before):.1f}%" if before else "–"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}" if whole else "–"


def table(groups: dict[str, Tally], total: Tally, label: str) -> str:
    """Per-group results as a Markdown table."""
    head = (
        f"| {label} | samples | must kept, ours | must kept, kind left out | must kept, head+tail at ours' size "
        "| reduction, ours | reduction, kind left out |\n|---|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = [
        f"| {name} | {t.samples} | {_share(t.ours_all_kept, t.with_must)} | {_share(t.loo_all_kept, t.with_must)} | "
        f"{_share(t.base_all_kept, t.with_must)} | {_reduction(t.tokens_in, t.ours_out)} | {_reduction(t.tokens_in, t.loo_out)} |"
        for name, t in [*groups.items(), ("**all**", total)]
    ]
    return head + "\n".join(rows) + "\n"


def summary(total: Tally) -> str:
    """Must lines and tokens, in one sentence per strategy."""
    lost = ", ".join(total.lost) or "none"
    loo_lost = ", ".join(total.loo_lost) or "none"
    return (
        f"* Must lines kept: ours {total.ours_kept_lines}/{total.must_lines} ({total.ours_all_kept}/{total.with_must} samples whole); "
        f"kind left out {total.loo_kept_lines}/{total.must_lines} ({total.loo_all_kept}/{total.with_must}); "
        f"head+tail at ours' size {total.base_kept_lines}/{total.must_lines} ({total.base_all_kept}/{total.with_must}).\n"
        f"* Tokens: {total.tokens_in:,} in; ours {total.ours_out:,} out ({_reduction(total.tokens_in, total.ours_out)} fewer), "
        f"kind left out {total.loo_out:,} ({_reduction(total.tokens_in, total.loo_out)} fewer).\n"
        f"* Samples losing a must line: ours {lost}; kind left out {loo_lost}.\n"
    )


def heldout_block(heldout: tuple[dict[str, Tally], Tally]) -> str:
    """The held-out table, when the bench was given a held-out set."""
    groups, total = heldout
    biggest = max(groups, key=lambda name: groups[name].tokens_in)
    return f"""
### Real outputs kept outside the repository (held out)

`--heldout DIR`: {total.samples} outputs of real runs on this machine, each passed as `contextwright compress
--exit-code 1` passes it, with the lines each must keep listed beside it.

{table(groups, total, "output")}
{summary(total)}
Without the largest sample (`{biggest}`) the reduction is {_reduction(*_without(groups, {biggest}))}.
"""


def results_block(
    corpus: tuple[dict[str, Tally], Tally],
    unseen: tuple[dict[str, Tally], Tally],
    speed: tuple[float, float, str, float],
    budget: int | str,
    quick: bool,
    heldout: tuple[dict[str, Tally], Tally] | None = None,
) -> str:
    """The generated section of docs/benchmarks.md."""
    groups, total = corpus
    scope = f"the samples of at most {QUICK_MAX_BYTES:,} bytes (--quick)" if quick else f"all {total.samples} samples"
    aim = (
        "the default budget (`auto`: a fifth of each output, from 60 to 500 tokens)"
        if budget == "auto"
        else "`keep_content` (the command line's default: nothing of the content cut)"
        if budget == "keep"
        else f"a {budget}-token budget"
    )
    machine = f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
    return f"""### Results at the default settings (measured here)

Run: `python bench/compress_bench.py{"" if budget == "auto" else f" --budget {budget}"}{" --quick" if quick else ""}` on {date.today().isoformat()}
({machine}) over {scope} of `shared/tool-outputs`, {total.with_must} of them with must-line
sidecars, at {aim}, with `exit_code=1` where the sample carries a failure and no kind hint.
Tokens are exact o200k_base counts. A must line is kept when it is a complete line of
the output in display form (colour codes stripped). "Kind left out" bars detection from
the sample's own kind, so the output goes through the rules of another kind or the
generic path, as an output of a tool without rules would. Head+tail keeps whole lines
from both ends, cut to the number of tokens ours used on that sample.

{table(groups, total, "corpus folder")}
{summary(total)}
The aggregate is dominated by a few very large listings and logs (a 947 KB `git log`,
`ls -alR`, `du`); the per-folder rows say more about typical outputs.

### Outputs of tools the corpus lacks (hand-written in their real shapes)

`tests/tool_outputs/unseen_samples.py`: reek, cargo build, rubocop, eslint, go vet, mypy, tsc,
jest, gradle, dotnet test, terraform, kubectl, rspec, webpack via npm, maven, docker
build, PHPUnit, a service log, unittest, pylint, mix test, mocha, black, hadolint, make
with gcc, shellcheck, kubectl get, minitest, ansible, eslint compact, terraform plan,
npm audit, cmake, ruff's full format, node --test (TAP) and valgrind, all as failed runs (`exit_code=1`). "Kind left out" bars the
kind each one is detected as.

{table(*unseen, "output")}
{summary(unseen[1])}
Reek, eslint (warnings only, in two formats), go vet and hadolint print nothing but
findings and totals, all of which are kept, so they cannot shrink; without them the reduction is
{_reduction(*_without(unseen[0], FINDINGS_ONLY))}.
{heldout_block(heldout) if heldout else ""}
### Latency

{speed[3]:.1f} ms of CPU time per 100 KB over the corpus samples of at least {LATENCY_MIN_BYTES:,} bytes
(the public call at default settings, default token counter, best of {LATENCY_ROUNDS});
the slowest sample (`{speed[2]}`) takes {speed[1]:.1f} ms of CPU time per 100 KB. Wall-clock:
{speed[0]:.1f} ms per 100 KB, with a load average of {machine_load()} when measured (the
machine was shared); it varies with the load.

### Published figures from other tools (their claims, not measured here)

None of these were measured on this corpus or with this tokenizer, so they do not
compare directly with the tables above.

| tool | claim | how it was obtained, per the project |
|---|---|---|
| RTK | 60–90% fewer tokens; about −90% on `cargo test`, `pytest` and `go test` output; 99.5% on vitest, 83% on tsc, 84% on lint | estimates for medium-sized projects, tokens counted as characters/4 |
| Headroom | 60–95% fewer tokens; 93.9% on a 200-line build log, 85.5% on 200 lines of shell output, 90.6% on a 100-item JSON array, 0% on grep results | its own benchmark pages (tiktoken); its opt-in fleet telemetry reports a median of 4.8% and a mean of 11.3% per request |
| lean-ctx | 60–90% fewer tokens; 87–88% in a simulated session | o200k counts; the session figure is driven by file reads, not shell output; its own A/B on 18 shell tasks found 33.4% average compression with task accuracy 5.6 points lower |
"""


def _without(groups: dict[str, Tally], names: set[str]) -> tuple[int, int]:
    kept = [t for name, t in groups.items() if name not in names]
    return sum(t.tokens_in for t in kept), sum(t.ours_out for t in kept)


def defaults_block(
    total: Tally, unseen_total: Tally, speed: tuple[float, float, str, float], heldout: Tally | None = None
) -> str:
    """The short default-settings table for docs/tool-outputs.md."""
    held = (
        f"| {heldout.samples} real outputs held out of the repository | {heldout.ours_kept_lines}/{heldout.must_lines} "
        f"| {_reduction(heldout.tokens_in, heldout.ours_out)} |\n"
        if heldout
        else ""
    )
    return f"""| run at default settings | must lines kept | fewer tokens |
|---|---:|---:|
| shared corpus, {total.samples} real outputs | {total.ours_kept_lines}/{total.must_lines} | {_reduction(total.tokens_in, total.ours_out)} |
| shared corpus, each sample's kind left out | {total.loo_kept_lines}/{total.must_lines} | {_reduction(total.tokens_in, total.loo_out)} |
| head+tail cut to the same size | {total.base_kept_lines}/{total.must_lines} | (same as ours) |
| {unseen_total.samples} outputs of tools without rules | {unseen_total.ours_kept_lines}/{unseen_total.must_lines} | {_reduction(unseen_total.tokens_in, unseen_total.ours_out)} |
{held}
Latency: {speed[3]:.1f} ms of CPU time per 100 KB (slowest sample {speed[1]:.1f} ms; wall-clock
{speed[0]:.1f} ms on a machine with load average {machine_load()}). Produced by
`python bench/compress_bench.py`; details in [benchmarks.md](benchmarks.md#tool-output-compression-benchcompress_benchpy).
"""


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--budget",
        default="auto",
        help="'auto' (default), 'keep' (the command line's default: the content kept) or a number of tokens per output",
    )
    parser.add_argument("--quick", action="store_true", help=f"only samples up to {QUICK_MAX_BYTES:,} bytes")
    parser.add_argument("--no-write", action="store_true", help="print only; leave the docs alone")
    parser.add_argument("--heldout", type=Path, help="a held-out set: DIR/out/NAME.txt with DIR/must/NAME.must")
    args = parser.parse_args(argv)
    budget: int | str = args.budget if args.budget in ("auto", "keep") else int(args.budget)
    count = exact_token_counter("o200k_base")
    corpus = run(corpus_samples(args.quick), budget, count)
    unseen = run(unseen_samples(), budget, count)
    heldout = run(heldout_samples(args.heldout), budget, count, as_cli=True) if args.heldout else None
    speed = latency(list(corpus_samples(args.quick)))
    print(table(*corpus, "corpus folder"))
    print(summary(corpus[1]))
    print(table(*unseen, "output"))
    print(summary(unseen[1]))
    if heldout:
        print(heldout_block(heldout))
    print(f"latency per 100 KB: {speed[3]:.1f} ms CPU, {speed[0]:.1f} ms wall; slowest {speed[1]:.1f} ms CPU ({speed[2]})")
    if not args.no_write and not args.quick:
        update_section("compress-bench", results_block(corpus, unseen, speed, budget, args.quick, heldout))
        if budget == "auto":
            update_section(
                "compress-defaults",
                defaults_block(corpus[1], unseen[1], speed, heldout[1] if heldout else None),
                path=TOOL_OUTPUTS_DOC,
            )
        print(f"wrote {BENCHMARKS}" + (f" and {TOOL_OUTPUTS_DOC}" if budget == "auto" else ""))
    return 0 if not corpus[1].lost and not corpus[1].loo_lost else 1


if __name__ == "__main__":
    raise SystemExit(main())
