#!/usr/bin/env bash
# The main job: an MLP in fp32 and bf16 on the simulated NeuronCore, compared with eager.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
exec "${PYTHON:-python3}" python/examples/mlp.py "$@"
