#!/usr/bin/env bash
# Run layerpick's tests, by tier (markers declared in pyproject.toml):
#   bash scripts/test.sh          the default tier, the README's test command: every test but those marked `full`
#   bash scripts/test.sh --unit   the unit tier: neither `slow` nor `full`, a quick check while editing
#   bash scripts/test.sh --full   every test, the science's slow checks included
# Any further arguments go to pytest (a later -m replaces the tier's).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    --full) shift; tier=() ;;
    --unit) shift; tier=(-m "not slow and not full") ;;
    *) tier=(-m "not full") ;;
esac
exec .venv/bin/python -m pytest -q "${tier[@]}" "$@"
