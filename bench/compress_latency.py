"""Latency of the tool-output compressors per 100 KB of input, on large and on small outputs.

Runs the public call as the command line's defaults run it, ``compress(text,
exit_code=1, budget_tokens="auto")``, over each set of outputs and reports the CPU time
per 100 KB of input: every output timed on its own, best of ``--rounds``, the bests
summed. Small outputs weigh the per-call work (splitting, detection, counting) more than
large ones, so each set is also broken down by output size.

Sets: the shared corpus (``shared/tool-outputs``), the hand-written outputs of tools the
corpus lacks (``tests/tool_outputs/unseen_samples.py``), and, with ``--small DIR``, a directory
of real outputs (``*.txt``) of failed runs kept outside the repository; a set that is
absent is skipped with the reason printed.

``--dump DIR`` writes, instead of timing, every output of those sets compressed under
several settings (exit code 0 and 1, the automatic budget and none, the command line's
token counter), one file each, so two trees can be compared with ``diff -r``.

``--against TREE`` compares this tree with another checkout of the project (its ``src``
is imported instead): one worker process per tree, each warmed up once, and every output
timed in both in turn (which tree goes first alternates), ``--rounds`` times, the least
CPU time kept. A machine whose speed drifts within minutes then still gives both trees
the same conditions, output by output, so the ratio means something.

    python bench/compress_latency.py [--small DIR] [--rounds N] [--dump DIR] [--against TREE]
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parents[1] / "tests" / "tool_outputs"))
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from _docs import machine_load

from contextwright.testing.corpus import corpus_path, missing_reason
from contextwright.tool_outputs.compressors import calibrated_token_count, compress

SIZE_BANDS: tuple[tuple[str, int, float], ...] = (
    ("< 4 KB", 0, 4_096),
    ("4-32 KB", 4_096, 32_768),
    ("> 32 KB", 32_768, float("inf")),
)
"""Bands of input size, in bytes (lower bound inclusive)."""
PER_100_KB = 100_000


@dataclass(frozen=True)
class Output:
    """One tool output of a set."""

    name: str
    text: str

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def corpus_outputs() -> tuple[list[Output], str | None]:
    """Every sample of ``shared/tool-outputs``, or the reason it is absent."""
    root = corpus_path("tool-outputs")
    if root is None:
        return [], missing_reason("tool-outputs")
    records = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    return [Output(r["file"], (root / r["file"]).read_text(encoding="utf-8")) for r in records], None


def unseen_outputs() -> tuple[list[Output], str | None]:
    """The hand-written outputs of tools the corpus lacks."""
    import unseen_samples

    return [Output(name, build()[0]) for name, build in sorted(unseen_samples.UNSEEN.items())], None


def directory_outputs(root: Path | None) -> tuple[list[Output], str | None]:
    """``root/*.txt`` decoded as the command line decodes its input, or the reason there are none."""
    if root is None:
        return [], "no --small DIR given"
    paths = sorted(root.glob("*.txt")) if root.is_dir() else []
    if not paths:
        return [], f"no *.txt outputs in {root}"
    return [Output(p.stem, p.read_bytes().decode("utf-8", errors="replace")) for p in paths], None


def _call(text: str) -> None:
    compress(text, exit_code=1, budget_tokens="auto")


def best_cpu(output: Output, rounds: int, call: Callable[[str], None] = _call) -> float:
    """The least CPU time, in seconds, of ``rounds`` calls on one output."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        call(output.text)
        best = min(best, time.process_time() - started)
    return best


def per_100_kb(seconds: float, size: int) -> str:
    return f"{1000 * seconds * PER_100_KB / size:.1f}" if size else "–"


def measure(outputs: list[Output], rounds: int) -> list[tuple[Output, float]]:
    """Each output with its best CPU time; one untimed pass first so imports and compiled patterns are warm."""
    for output in outputs:
        _call(output.text)
    return [(output, best_cpu(output, rounds)) for output in outputs]


def bands(outputs: list[Output]) -> Iterator[tuple[str, list[int], int]]:
    """The whole set, then each size band that holds outputs: its name, its outputs' positions and their bytes."""
    for band, low, high in [("all", 0, float("inf")), *SIZE_BANDS]:
        chosen = [i for i, output in enumerate(outputs) if low <= output.size < high]
        if chosen:
            yield band, chosen, sum(outputs[i].size for i in chosen)


def rows(label: str, timed: list[tuple[Output, float]]) -> Iterator[str]:
    """Table rows for one set: the whole set, then each size band that holds outputs."""
    for band, chosen, size in bands([output for output, _ in timed]):
        seconds = sum(timed[i][1] for i in chosen)
        per_call = 1000 * seconds / len(chosen)
        yield f"| {label} | {band} | {len(chosen)} | {size / 1000:,.1f} | {per_call:.2f} | {per_100_kb(seconds, size)} |"


def slowest(timed: list[tuple[Output, float]], count: int = 3) -> str:
    worst = sorted(timed, key=lambda pair: pair[1] / max(pair[0].size, 1), reverse=True)[:count]
    return ", ".join(f"{o.name} ({per_100_kb(t, o.size)} ms)" for o, t in worst)


def dump(sets: dict[str, list[Output]], target: Path) -> int:
    """Write every output compressed under several settings; returns the number of files written."""
    settings: dict[str, dict[str, object]] = {
        "exit0-auto": {"exit_code": 0, "budget_tokens": "auto"},
        "exit1-auto": {"exit_code": 1, "budget_tokens": "auto"},
        "exit1-none": {"exit_code": 1, "budget_tokens": None},
        "exit1-auto-cli": {"exit_code": 1, "budget_tokens": "auto", "count_tokens": calibrated_token_count},
    }
    written = 0
    for set_name, outputs in sets.items():
        for output in outputs:
            for setting, options in settings.items():
                result = compress(output.text, **options)  # type: ignore[arg-type]
                path = target / set_name / setting / (output.name.replace("/", "__") + ".out")
                path.parent.mkdir(parents=True, exist_ok=True)
                facts = {
                    "kind": result.kind,
                    "tokens": [result.original_tokens, result.compressed_tokens],
                    "must": result.kept_must_lines,
                    "omitted": result.omitted,
                    "failed": result.failed,
                    "budget": result.budget_tokens,
                }
                path.write_text(json.dumps(facts) + "\n" + result.text, encoding="utf-8")
                written += 1
    return written


def serve(sets: dict[str, list[Output]]) -> int:
    """Worker mode: warm up, then answer ``SET INDEX`` lines on stdin with one call's CPU seconds."""
    by_label = {label.split()[0]: outputs for label, outputs in sets.items()}
    for outputs in by_label.values():
        for output in outputs:
            _call(output.text)
    print("ready", flush=True)
    for request in sys.stdin:
        label, index = request.split()
        print(repr(best_cpu(by_label[label][int(index)], 1)), flush=True)
    return 0


class _Worker:
    """This script in worker mode, importing ``contextwright`` from ``src``."""

    def __init__(self, src: Path, forwarded: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", *forwarded]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None and self.process.stdin is not None
        self._in, self._out = self.process.stdin, self.process.stdout
        if self._out.readline().strip() != "ready":
            raise SystemExit(f"the worker for {src} did not start (is it a checkout of this project?)")

    def time(self, label: str, index: int) -> float:
        self._in.write(f"{label} {index}\n")
        self._in.flush()
        return float(self._out.readline())

    def close(self) -> None:
        self._in.close()
        self.process.wait()


def compare_trees(sets: dict[str, list[Output]], other: Path, rounds: int, forwarded: list[str]) -> None:
    """Time every output in this tree and in ``other`` in turn; print each band's CPU time per 100 KB and the ratio."""
    here = Path(__file__).resolve().parents[1] / "src"
    workers = [_Worker(here, forwarded), _Worker(other / "src", forwarded)]
    print("| set | size band | outputs | KB | this tree, ms per 100 KB | other tree | this / other |")
    print("|---|---|---:|---:|---:|---:|---:|")
    try:
        for label, outputs in sets.items():
            best = [[float("inf")] * len(outputs) for _ in workers]
            turn = 0
            for _ in range(rounds):
                for index in range(len(outputs)):
                    order = (0, 1) if turn % 2 == 0 else (1, 0)
                    turn += 1
                    for which in order:
                        best[which][index] = min(best[which][index], workers[which].time(label.split()[0], index))
            for band, chosen, size in bands(outputs):
                ours, theirs = (sum(times[i] for i in chosen) for times in best)
                ratio = f"{ours / theirs:.2f}" if theirs else "–"
                row = f"| {label} | {band} | {len(chosen)} | {size / 1000:,.1f} | {per_100_kb(ours, size)} | "
                print(row + f"{per_100_kb(theirs, size)} | {ratio} |")
    finally:
        for worker in workers:
            worker.close()


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", type=Path, help="a directory of real outputs (*.txt) of failed runs")
    parser.add_argument("--rounds", type=int, default=3, help="calls per output; the least CPU time counts")
    parser.add_argument("--dump", type=Path, help="write the compressed outputs here instead of timing")
    parser.add_argument("--against", type=Path, help="another checkout of the project: time both, output by output, in turn")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a worker of --against
    args = parser.parse_args(argv)
    sources = {
        "shared corpus": corpus_outputs(),
        "hand-written outputs of other tools": unseen_outputs(),
        "small real outputs": directory_outputs(args.small),
    }
    sets = {label: outputs for label, (outputs, _) in sources.items() if outputs}
    if args.serve:
        return serve(sets)
    for label, (_, reason) in sources.items():
        if reason:
            print(f"skipped {label}: {reason}")
    if args.dump:
        slugs = {label: label.split()[0] + "-" + label.split()[-1] for label in sets}
        print(f"wrote {dump({slugs[k]: v for k, v in sets.items()}, args.dump)} files under {args.dump}")
        return 0
    print(f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}; load {machine_load()}")
    print(f"CPU time of compress(text, exit_code=1, budget_tokens='auto'), best of {args.rounds} per output\n")
    if args.against:
        compare_trees(sets, args.against.resolve(), args.rounds, ["--small", str(args.small)] if args.small else [])
        print(f"load after: {machine_load()}")
        return 0
    print("| set | size band | outputs | KB | ms per call | ms per 100 KB |")
    print("|---|---|---:|---:|---:|---:|")
    slow: list[str] = []
    for label, outputs in sets.items():
        timed = measure(outputs, args.rounds)
        print("\n".join(rows(label, timed)))
        slow.append(f"slowest per KB, {label}: {slowest(timed)}")
    print("\n" + "\n".join(slow))
    print(f"load after: {machine_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
