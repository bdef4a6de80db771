"""A longer, coverage-guided fuzz run with atheris (optional: ``pip install atheris``).

Run from the repository root, one door at a time::

    python bench/fuzz_atheris.py importer -atheris_runs=20000
    python bench/fuzz_atheris.py payload -max_total_time=600
    python bench/fuzz_atheris.py escape -max_total_time=600

Arguments after the door go to libFuzzer (``-max_total_time``, ``-atheris_runs``, a
corpus folder such as ``tests/fuzz/corpus``). The doors are the same functions the
hypothesis suite in tests/fuzz drives for a few seconds on every test run; a crash here
is any exception that is not one of Contextwright's typed errors. Add what it finds to
``tests/fuzz/corpus`` so the regression suite keeps it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

try:
    import atheris
except ImportError:  # pragma: no cover - an optional tool
    sys.exit("atheris is not installed: pip install atheris")

with atheris.instrument_imports():
    import fuzz_targets

_LOG = fuzz_targets.new_log()


def importer(data: bytes) -> None:
    """Bytes as a transcript file, with each suffix the importers look at."""
    provider = atheris.FuzzedDataProvider(data)
    suffix = provider.PickValueInList([".jsonl", ".json", ".traj", ".md"])
    fuzz_targets.importer(provider.ConsumeBytes(provider.remaining_bytes()), suffix)


def payload(data: bytes) -> None:
    """Bytes as the JSON of a raw payload, decoded and appended."""
    provider = atheris.FuzzedDataProvider(data)
    type_name = provider.PickValueInList(list(fuzz_targets.TYPES))
    try:
        value = json.loads(provider.ConsumeUnicode(provider.remaining_bytes()))
    except (ValueError, RecursionError):
        return
    fuzz_targets.payload_decoder(type_name, value)
    fuzz_targets.log_append(_LOG, "s", type_name, value)


def escape(data: bytes) -> None:
    """Bytes as text to put inside an envelope."""
    fuzz_targets.envelope_escape(atheris.FuzzedDataProvider(data).ConsumeUnicode(len(data)))


DOORS = {"importer": importer, "payload": payload, "escape": escape}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in DOORS:
        sys.exit(f"usage: python bench/fuzz_atheris.py {{{','.join(DOORS)}}} [libFuzzer options]")
    door = DOORS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], door)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
