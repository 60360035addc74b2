#!/usr/bin/env bash
# Runs every test: lit + FileCheck, Catch2 through ctest, pytest, fuzzing, sanitizers.
# Exits non-zero if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
PYTHON="${PYTHON:-python3}"
LIT=/usr/lib/llvm-19/build/utils/lit/lit.py

# The scikit-build-core build directory: build/<wheel_tag> of this interpreter.
build_dir="$("$PYTHON" - <<'PY'
import glob, os, sys
caches = glob.glob("build/*/CMakeCache.txt")
tag = f"cp{sys.version_info.major}{sys.version_info.minor}-"
mine = [c for c in caches if os.path.basename(os.path.dirname(c)).startswith(tag)] or caches
print(os.path.dirname(max(mine, key=os.path.getmtime)) if mine else "")
PY
)"
if [[ -z "$build_dir" ]]; then
  echo "[tests] no build/*/CMakeCache.txt: tools/setup.sh did not build" >&2
  exit 1
fi
echo "[tests] build directory: $build_dir"

failed=()
run() {
  local name="$1"
  shift
  echo "[tests] === $name: $*"
  if "$@"; then echo "[tests] $name passed"; else failed+=("$name"); fi
}

if [[ -f "$build_dir/test/lit.site.cfg.py" ]]; then
  run lit "$PYTHON" "$LIT" -sv "$build_dir/test"
else
  echo "[tests] lit: no $build_dir/test/lit.site.cfg.py" >&2
  failed+=(lit)
fi
run ctest ctest --test-dir "$build_dir" --output-on-failure -j 2
# pytest on every core (pytest-xdist; NEURONSIM_PYTEST_WORKERS overrides, 0 runs in-process).
run pytest "$PYTHON" -m pytest -q -n "${NEURONSIM_PYTEST_WORKERS:-auto}" --durations=25 test/python
# Fuzzing (tools/fuzz.sh: new crashes of neuron-import, neuron-opt --neuron-lower, neuron-run,
# then every saved reproducer) and the ASan + UBSan runtime build (tools/sanitize.sh: ctest and
# neuron-run fuzzing under the sanitizers). NEURONSIM_FUZZ_SECONDS (default 40) and
# NEURONSIM_SANITIZE_FUZZ_SECONDS (default 20) set their fuzzing time; 0 skips that fuzzing
# (the regression run and the sanitizer ctest still run). NEURONSIM_SANITIZE=0 skips the
# sanitizer build.
run fuzz bash tools/fuzz.sh --build-dir "$build_dir" --seconds "${NEURONSIM_FUZZ_SECONDS:-40}"
if [[ "${NEURONSIM_SANITIZE:-1}" != 0 ]]; then
  run sanitize bash tools/sanitize.sh --fuzz-seconds "${NEURONSIM_SANITIZE_FUZZ_SECONDS:-20}"
fi

if ((${#failed[@]})); then
  echo "[tests] FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "[tests] all passed"
