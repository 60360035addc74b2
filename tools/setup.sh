#!/usr/bin/env bash
# Installs what NeuronSim needs (Debian 12, as root) and builds + installs the package.
# Idempotent: installed packages are skipped; the rebuild is incremental (build/<wheel_tag>, ccache).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
TORCH_VERSION="2.13.0"
APT_PACKAGES=(build-essential libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
              nlohmann-json3-dev catch2 ccache
              gdb)  # gdb: stack traces of fuzzer crashes (tools/fuzz.py)
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

log() { echo "[setup] $*"; }

# Debian packages: install only the missing ones.
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [[ "$("$PYTHON" -c 'import sys; print(sys.prefix)')" == /usr ]]; then
  dpkg -s python3-dev >/dev/null 2>&1 || missing+=(python3-dev python3-pip)
fi
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A Debian-managed Python refuses pip installs unless told otherwise.
pip_args=(-q)
stdlib="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
[[ -f "$stdlib/EXTERNALLY-MANAGED" ]] && pip_args+=(--break-system-packages)
# tools/constraints.txt pins torch==2.13.0, so that no install pulls another torch.
pip_install() { "$PYTHON" -m pip install "${pip_args[@]}" -c tools/constraints.txt "$@"; }

# torch: exactly the CPU 2.13.0 build; never an unpinned torch (that pulls a CUDA build).
installed_torch="$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
if [[ "${installed_torch%%+*}" != "$TORCH_VERSION" ]]; then
  log "pip install torch==$TORCH_VERSION (found: ${installed_torch:-none})"
  pip_install "torch==$TORCH_VERSION"
fi

# Build and test tools from PyPI (module name = distribution name here, except scikit-build-core).
missing_py="$("$PYTHON" - <<'PY'
import importlib.util
wanted = {"pytest": "pytest", "numpy": "numpy", "scikit_build_core": "scikit-build-core",
          "pybind11": "pybind11", "cmake": "cmake", "ninja": "ninja",
          "pytest_timeout": "pytest-timeout",  # the per-test timeout in pyproject.toml
          "xdist": "pytest-xdist",  # tools/run_tests.sh runs pytest on every core
          "matplotlib": "matplotlib",  # matplotlib: the demo's engine-timeline PNG
          "expecttest": "expecttest",  # PyTorch's OpInfo database (bench/opinfo_sweep.py) imports it
          "transformers": "transformers",  # HuggingFace models in the device tests and benches
          "accelerate": "accelerate==1.15.0",  # HF Accelerate on the neuron device (test_torch_neuronx.py)
          "triton": "triton==3.7.1",  # torchtitan imports it (CPU-only import is enough)
          "torchtitan": "torchtitan==0.3.0"}  # llama3 training on the device (test_torchtitan.py)
print(" ".join(dist for module, dist in wanted.items() if importlib.util.find_spec(module) is None))
PY
)"
if [[ -n "$missing_py" ]]; then
  log "pip install $missing_py"
  # shellcheck disable=SC2086
  pip_install $missing_py
fi

# Build and install neuronsim against the torch above (hence no build isolation).
mkdir -p build
log "pip install --no-build-isolation . (log: build/pip-install.log)"
start=$SECONDS
if ! "$PYTHON" -m pip install --no-build-isolation -v "${pip_args[@]:1}" . \
    >build/pip-install.log 2>&1; then
  tail -n 60 build/pip-install.log
  echo "[setup] building neuronsim failed; full log: build/pip-install.log" >&2
  exit 1
fi
log "neuronsim installed in $((SECONDS - start)) s; neuron-opt: $(command -v neuron-opt || echo 'not on PATH')"
log "neuron-import, neuron-compile, neuron-run: $(command -v neuron-run >/dev/null && echo 'on PATH' || echo 'not on PATH')"
