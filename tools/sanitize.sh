#!/usr/bin/env bash
# ASan + UBSan build of the runtime, its Catch2 tests and neuron-run (no MLIR, no Python module)
# in build/asan; runs ctest there, then fuzzes neuron-run (the program loader and the simulator)
# under the sanitizers for a bounded time. Any sanitizer report aborts the process, so it fails
# the test or counts as a fuzzer crash (saved to test/fuzz/crashes/run/).
#   tools/sanitize.sh [--fuzz-seconds 60] [--seed 1]
# Idempotent: reconfigures only when needed, rebuilds incrementally (ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
fuzz_seconds=60
seed=1
while (($#)); do
  case "$1" in
    --fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) echo "usage: tools/sanitize.sh [--fuzz-seconds N] [--seed N]" >&2; exit 2 ;;
  esac
done

build=build/asan
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Abort on the first report (a signal, so that the fuzzer sees a crash). Leak checking stays
# on for ctest; the fuzzer turns it off (see tools/fuzz.py).
export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="abort_on_error=1:halt_on_error=1:print_stacktrace=1"

start=$SECONDS
# -O1 -g1: a cold build takes about 2 minutes on 2 cores (-O2 -g took over 10), and
# line tables are enough for the reports' stacks. Configuring again is cheap and keeps an
# existing build/asan on these flags.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DNEURONSIM_RUNTIME_ONLY=ON -DNEURONSIM_BUILD_PYTHON=OFF -DNEURONSIM_BUILD_TESTS=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
# Two cores shared with everyone: at most two compile jobs.
ninja -C "$build" -j 2 runtime-tests neuron-run
echo "[sanitize] build: $((SECONDS - start)) s"

status=0
ctest --test-dir "$build" --output-on-failure -j 2 || status=1
echo "[sanitize] ctest done at $((SECONDS - start)) s"
if ((fuzz_seconds > 0)); then
  # The same mutants as tools/fuzz.sh's run target; only neuron-run exists in this build.
  "$PYTHON" tools/fuzz.py --build-dir "$build" --targets run --seconds "$fuzz_seconds" \
    --seed "$seed" --timeout 30 || status=1
  "$PYTHON" tools/fuzz.py --build-dir "$build" --targets run --regress --timeout 30 || status=1
fi
echo "[sanitize] total $((SECONDS - start)) s"
exit "$status"
