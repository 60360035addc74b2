"""torchtitan 0.3.0 trains its llama3 debug model on the neuron device with its unchanged command
(`torchrun -m torchtitan.train --module llama3 --config llama3_debugmodel`), on 1 rank, on a
tiny run: sequence length 32, batch 1, 2 steps, with a tokenizer and a `c4_test` data set made
here (torchtitan_assets.py; no network). Checked against eager PyTorch on the CPU: the step-2
loss is recomputed on the CPU by torchtitan's own model, loaded from the checkpoint torchtitan
saved after step 1, on the batch its data loader gives at step 2.

The 2-rank runs (FSDP2, tensor parallel) are in the README's TorchNeuron compatibility section;
they take minutes on this machine."""

from __future__ import annotations

import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

torchtitan = pytest.importorskip(
    "torchtitan", reason="torchtitan is not installed (tools/setup.sh installs torchtitan==0.3.0)"
)

import torchtitan_assets  # noqa: E402

SEQ_LEN = 32
# bf16 parameters in the forward (torchtitan's default mixed precision, FSDP2's policy even on
# one rank), fp32 loss: the device's bf16 matmuls and the CPU's differ in accumulation order.
LOSS_ATOL = 5e-3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train(root: Path, steps: int = 2) -> tuple[list[float], str]:
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
        "--master-port", str(_free_port()),
        "-m", "torchtitan.train", "--module", "llama3", "--config", "llama3_debugmodel",
        "--training.steps", str(steps), "--training.seq-len", str(SEQ_LEN),
        "--training.local-batch-size", "1", "--validator.no-enable",
        "--metrics.disable-color-printing",
        "--checkpoint.enable", "--checkpoint.enable-first-step-checkpoint",
        "--checkpoint.interval", "100", "--checkpoint.last-save-model-only",
    ]  # fmt: skip
    env = dict(os.environ)
    # A user's environment: TorchNeuron's defaults, not the suite's (conftest.py).
    env.pop("NEURON_LOGICAL_NC_CONFIG", None)
    env.pop("TORCH_NEURONX_RETAIN_DEVICE_MODE", None)
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    losses = [float(m.group(2)) for m in re.finditer(r"step:\s+(\d+)\s+loss:\s+([-\w.+]+)", log)]
    return losses, log


def _cpu_loss_of_step_2(root: Path) -> float:
    """Step 2's loss in eager PyTorch on the CPU: torchtitan's llama3 debug model with the
    weights saved after step 1, on the data loader's second batch, bf16 parameters."""
    import torch.distributed.checkpoint as dcp
    from torchtitan.components.tokenizer import HuggingFaceTokenizer
    from torchtitan.hf_datasets.text_datasets import HuggingFaceTextDataset
    from torchtitan.models.llama3 import model_registry

    with torch.device("cpu"):
        model = model_registry("debugmodel").model.build()
    model.init_weights(buffer_device=torch.device("cpu"))
    state = model.state_dict()  # its hooks split the fused qkv weight as the checkpoint has it
    dcp.load(state, checkpoint_id=str(root / "outputs" / "checkpoint" / "step-1"))
    model.load_state_dict(state)
    for p in model.parameters():
        p.data = p.data.bfloat16()
    assets = root / "tests" / "assets"
    tokenizer = HuggingFaceTokenizer(tokenizer_path=str(assets / "tokenizer"))
    batches = iter(HuggingFaceTextDataset("c4_test", str(assets / "c4_test"), tokenizer,
                                          seq_len=SEQ_LEN))
    next(batches)
    inputs, labels = next(batches)
    positions = inputs["positions"][None]
    with torch.no_grad():
        logits = model(inputs["input"][None], positions=positions,
                       attention_masks=model.get_attention_masks(positions=positions))
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten()).item()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_llama3_debugmodel_trains_on_one_rank_as_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))  # not ~/.cache
    torchtitan_assets.write_assets(tmp_path, num_docs=40)
    losses, log = _train(tmp_path)
    assert len(losses) == 2, log[-4000:]
    assert "NEURON capacity: neuron (simulated" in log  # torchtitan trained on the device
    assert all(math.isfinite(x) for x in losses), losses
    assert losses[1] < losses[0], losses  # it learns
    assert losses[1] == pytest.approx(_cpu_loss_of_step_2(tmp_path), abs=LOSS_ATOL), losses
