#!/usr/bin/env bash
# Rewrite constraints.txt: the exact versions of everything `.[dev]` installs today, resolved
# in a new virtual environment so nothing already on this machine leaks into the lock.
# Run the suite against the result (scripts/test-newest.sh does both) before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e ".[dev]"
{
  echo "# The exact versions the test suite passes with, for Python $("$venv/bin/python" -c 'import sys; print(".".join(map(str, sys.version_info[:2])))') on Linux."
  echo "# Used as pip constraints by the README's test command and by .ci/run, so a clean clone tests"
  echo "# what was tested. Regenerate with scripts/lock.sh; check newer releases with scripts/test-newest.sh."
  "$venv/bin/python" -m pip freeze --exclude-editable | LC_ALL=C sort -f
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages pinned"
