#!/usr/bin/env bash
# Run the whole suite against the newest releases of every dependency, ignoring the lock, so
# drift is seen the day a release lands. Works in a new virtual environment (kept in
# .venv-newest/ for a second look) and prints which versions differ from constraints.txt first.
# Pass --lock to rewrite constraints.txt with these versions when the suite passes.
set -euo pipefail
cd "$(dirname "$0")/.."

lock=false
args=()
for arg in "$@"; do
  if [[ "$arg" == "--lock" ]]; then lock=true; else args+=("$arg"); fi
done

venv=".venv-newest"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet --upgrade -e ".[dev]"

newest="$(mktemp)"
trap 'rm -f "$newest"' EXIT
"$venv/bin/python" -m pip freeze --exclude-editable | LC_ALL=C sort -f > "$newest"
echo "Versions that differ from constraints.txt (locked -> newest):"
python3 - constraints.txt "$newest" <<'PY'
import sys

def pins(path):
    rows = (line.strip() for line in open(path, encoding="utf-8"))
    return dict(row.split("==", 1) for row in rows if row and not row.startswith("#") and "==" in row)

locked, newest = pins(sys.argv[1]), pins(sys.argv[2])
changed = [(name, locked.get(name, "-"), newest.get(name, "-")) for name in sorted(locked.keys() | newest.keys(), key=str.lower)
           if locked.get(name) != newest.get(name)]
for name, old, new in changed:
    print(f"  {name}: {old} -> {new}")
print(f"  ({len(changed)} of {len(newest)} packages)")
PY

"$venv/bin/python" -m pytest "${args[@]}"
if $lock; then
  { head -n 3 constraints.txt; cat "$newest"; } > constraints.txt.new && mv constraints.txt.new constraints.txt
  echo "constraints.txt now pins the versions the suite just passed with"
fi
