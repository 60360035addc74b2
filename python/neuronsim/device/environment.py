"""The Neuron runtime's environment variables the device reads when it registers (as
TorchNeuron's runtime does at start): how many devices there are and what one device is.

- NEURON_LOGICAL_NC_CONFIG: 2 (default, TorchNeuron's on trn2) makes a device one logical
  core of two physical cores (target trn2-lnc2, 24 GiB of HBM), 1 one physical core (trn2,
  12 GiB). NEURONSIM_TARGET (or options["target"] for a compiled graph) overrides it.
- NEURON_RT_VISIBLE_CORES ("0-3", "1,3", "2") or NEURON_RT_NUM_CORES: how many (logical)
  cores the process sees, i.e. torch.neuron.device_count(). NEURONSIM_DEVICE_COUNT overrides
  both; default 1, as TorchNeuron's one device per process.
"""

from __future__ import annotations

import os

LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"
VISIBLE_CORES_ENV = "NEURON_RT_VISIBLE_CORES"
NUM_CORES_ENV = "NEURON_RT_NUM_CORES"
DEVICE_COUNT_ENV = "NEURONSIM_DEVICE_COUNT"
TARGET_OF_LNC = {1: "trn2", 2: "trn2-lnc2"}
MAX_DEVICES = 64  # python/src/NeuronDevice.cpp's kMaxDevices


def logical_nc_config() -> int:
    text = os.environ.get(LNC_ENV, "").strip()
    if not text:
        return 2
    if text not in ("1", "2"):
        raise ValueError(
            f"{LNC_ENV} must be 1 or 2 (physical cores per logical core), got {text!r}"
        )
    return int(text)


def default_target() -> str:
    """The target of a device (and of graphs compiled without options['target']) when
    NEURONSIM_TARGET is unset."""
    return TARGET_OF_LNC[logical_nc_config()]


def visible_cores() -> list[int]:
    """The logical core ids the process sees: NEURON_RT_VISIBLE_CORES, else the first
    NEURON_RT_NUM_CORES (or NEURONSIM_DEVICE_COUNT) ids, else [0]."""
    text = os.environ.get(DEVICE_COUNT_ENV, "").strip()
    if text:
        return list(range(_count(DEVICE_COUNT_ENV, text)))
    text = os.environ.get(VISIBLE_CORES_ENV, "").strip()
    if text:
        return _core_list(text)
    text = os.environ.get(NUM_CORES_ENV, "").strip()
    if text:
        return list(range(_count(NUM_CORES_ENV, text)))
    return [0]


def _count(name: str, text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DEVICES:
        raise ValueError(f"{name} must be a core count from 1 to {MAX_DEVICES}, got {text!r}")
    return int(text)


def _core_list(text: str) -> list[int]:
    cores: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()) or (high and int(high) < int(low)):
            raise ValueError(
                f"{VISIBLE_CORES_ENV} must be core ids and ranges such as '0-3' or '1,3', "
                f"got {text!r}"
            )
        cores.extend(range(int(low), int(high or low) + 1))
    if len(cores) != len(set(cores)) or len(cores) > MAX_DEVICES:
        raise ValueError(
            f"{VISIBLE_CORES_ENV}={text!r} names {len(cores)} cores"
            + (" with repeats" if len(cores) != len(set(cores)) else f"; at most {MAX_DEVICES}")
        )
    return cores
