# Sourced by scripts/*: make sure .venv exists and has the project installed.
# Usage: ensure_venv [extras]   (extras like "dev"); reinstalls when pyproject.toml changes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

ensure_venv() {
  local extras="${1:-}"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV" >&2
    "$PY" -m venv "$VENV"
  fi
  local spec="$ROOT"
  [ -n "$extras" ] && spec="$ROOT[$extras]"
  local stamp="$VENV/.installed-${extras:-base}"
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    echo "==> installing agent-sessions${extras:+ [$extras]} into .venv" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec" >&2
    touch "$stamp"
  fi
  # Byte-code for our own packages (the editable install leaves none, and with
  # PYTHONDONTWRITEBYTECODE=1 no import writes it): every server start would compile
  # ~100 modules from source, ~0.1 s of its ~0.6 s start-up. Up-to-date files are skipped.
  "$VENV/bin/python" -m compileall -q "$ROOT/server" "$ROOT/agent_bridge" "$ROOT/store" \
    "$ROOT/scripts/benchlib" >/dev/null
}
