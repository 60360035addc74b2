#!/usr/bin/env bash
# Bounded-time fuzzing of neuron-import, neuron-opt --neuron-lower and neuron-run --timing-only
# (tools/fuzz.py), then the regression run of every saved reproducer. Deterministic mutants for a
# given --seed. Exits non-zero on a new crash or a reproducer that crashes again.
#   tools/fuzz.sh [--seconds 120] [--seed 1] [--build-dir DIR] [other tools/fuzz.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
status=0
"$PYTHON" tools/fuzz.py --seconds 120 --seed 1 "$@" || status=1
# --regress takes no --seconds/--seed: pass on only --build-dir and --timeout.
regress_args=()
while (($#)); do
  case "$1" in
    --build-dir|--timeout|--targets) regress_args+=("$1" "$2"); shift 2 ;;
    *) shift ;;
  esac
done
"$PYTHON" tools/fuzz.py --regress "${regress_args[@]}" || status=1
exit "$status"
