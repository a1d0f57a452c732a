# Shared by scripts/run and scripts/test: make .venv if missing and install the project.
# Usage: . scripts/_venv.sh [extra]   (extra: "test" installs the test extra)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
extra="${1:-}"
spec="$ROOT"
[ -n "$extra" ] && spec="$ROOT[$extra]"
stamp="$VENV/.installed-$extra"
# Reinstall only when the project's metadata changed since the last install.
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec"
    touch "$stamp"
fi
# Byte-compile the project like a wheel install would, so a hook's `continuity log` does
# not recompile every module on each start (PYTHONDONTWRITEBYTECODE may be set).
"$VENV/bin/python" -m compileall -q "$ROOT/continuity" "$ROOT/events" "$ROOT/projections" >/dev/null
