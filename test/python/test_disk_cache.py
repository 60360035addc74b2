"""Disk compile cache: reuse across processes, corrupted/truncated/other-version entries,
concurrent writers, LRU eviction under NEURONSIM_CACHE_MAX_MB, NEURONSIM_DISABLE_CACHE."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import neuronsim
from models import MLP, relative_error
from neuronsim import _C, disk_cache
from neuronsim.disk_cache import CacheWarning

HERE = Path(__file__).resolve().parent

# Runs an MLP at two batch sizes in a fresh process; prints cache_stats() and an output digest.
_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, {here!r})
    import torch, neuronsim
    from models import MLP
    start_at = float(os.environ.get("START_AT", "0"))
    while time.time() < start_at:
        time.sleep(0.001)
    torch.manual_seed(0)
    model = MLP(40, 50, 6)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    sums = []
    with torch.no_grad():
        for batch in (3, 5):
            sums.append(float(compiled(torch.ones(batch, 40)).sum()))
    stats = neuronsim.cache_stats()
    stats.pop("signatures")
    print(json.dumps({{"stats": stats, "sums": sums}}))
    """
).format(here=str(HERE))


def _run_script(env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, "-c", _SCRIPT],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _entries() -> list[Path]:
    return sorted(Path(disk_cache.config_from_env().directory).glob("*.nprog"))


def _compile_mlp(batch: int, model: MLP | None = None) -> torch.Tensor:
    model = model or MLP(40, 50, 6)
    x = torch.linspace(-2.0, 2.0, batch * 40).reshape(batch, 40)
    with torch.no_grad():
        out = torch.compile(model, backend="neuron", dynamic=False)(x)
        assert relative_error(out, model(x)) <= 1e-5
    return out


def _fresh_process_state() -> None:
    """What a new process starts with: no Dynamo frames, no programs in memory."""
    torch._dynamo.reset()
    neuronsim.reset()


def test_second_process_compiles_nothing():
    first = _result(_run_script())
    assert first["stats"]["compiles"] == 2 and first["stats"]["disk_writes"] == 2
    assert len(_entries()) == 2
    second = _result(_run_script())
    stats = second["stats"]
    assert stats["compiles"] == 0 and stats["misses"] == 0
    assert stats["disk_hits"] == 2 and stats["hits"] == 2
    assert second["sums"] == first["sums"]


def test_cache_dir_is_reported_and_used():
    _compile_mlp(3)
    stats = neuronsim.cache_stats()
    assert stats["cache_dir"] == os.environ["NEURONSIM_CACHE_DIR"]
    assert len(_entries()) == 1
    _fresh_process_state()
    _compile_mlp(3)
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 0 and stats["disk_hits"] == 1
    assert [s["source"] for s in stats["signatures"]] == ["disk"]


def _corrupt(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[-20] ^= 0xFF  # inside the CBOR payload
    elif how == "truncate":
        data = data[: len(data) // 2]
    elif how == "garbage":
        data = bytearray(b"not a cache entry at all")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("how", "reason"),
    [("flip", "checksum mismatch"), ("truncate", "truncated"), ("garbage", "bad magic")],
)
def test_corrupted_entry_is_recompiled_with_a_warning(how, reason):
    model = MLP(40, 50, 6)
    expected = _compile_mlp(3, model)
    (entry,) = _entries()
    _corrupt(entry, how)
    _fresh_process_state()
    with pytest.warns(CacheWarning, match=f"is corrupted \\(.*{reason}") as caught:
        actual = _compile_mlp(3, model)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    torch.testing.assert_close(actual, expected)
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 1 and stats["disk_invalid"] == 1 and stats["disk_hits"] == 0
    # The entry was replaced by a valid one.
    loaded = disk_cache.active().load(entry.stem)
    assert loaded.program is not None and not loaded.invalid


def _rewrite_header(path: Path, **changes) -> None:
    data = path.read_bytes()
    magic, size = struct.unpack_from("<8sI", data)
    header = json.loads(data[12 : 12 + size])
    header.update(changes)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<8sI", magic, len(encoded)) + encoded + data[12 + size :])


@pytest.mark.parametrize(
    "change",
    [{"compiler": "0.0.0-older"}, {"program_format": 999}, {"build": "0123456789abcdef"}],
    ids=["compiler", "program-format", "build"],
)
def test_other_version_entry_is_replaced_with_one_warning_per_process(change):
    model = MLP(40, 50, 6)
    for batch in (3, 4):
        _compile_mlp(batch, model)
    for entry in _entries():
        _rewrite_header(entry, **change)
    _fresh_process_state()
    with pytest.warns(CacheWarning, match="another neuronsim version or build") as caught:
        for batch in (3, 4):
            _compile_mlp(batch, model)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 2 and stats["disk_invalid"] == 2
    for entry in _entries():
        assert disk_cache.active().load(entry.stem).program is not None


def test_two_processes_compiling_at_once_both_succeed_and_leave_valid_entries():
    start_at = str(time.time() + 5.0)  # both start compiling at the same moment
    procs = [_run_script({"START_AT": start_at}) for _ in range(2)]
    results = [_result(p) for p in procs]
    assert results[0]["sums"] == results[1]["sums"]
    assert all(r["stats"]["compiles"] + r["stats"]["disk_hits"] == 2 for r in results)
    directory = Path(disk_cache.config_from_env().directory)
    assert sorted(p.suffix for p in directory.iterdir()) == [".nprog", ".nprog"]  # no temp files
    for entry in _entries():
        loaded = disk_cache.active().load(entry.stem)
        assert loaded.program is not None and not loaded.invalid
    third = _result(_run_script())
    assert third["stats"]["compiles"] == 0 and third["stats"]["disk_hits"] == 2


def test_eviction_keeps_the_cache_under_its_cap(monkeypatch):
    model = MLP(40, 50, 6)
    _compile_mlp(2, model)
    entry_size = _entries()[0].stat().st_size
    cap_bytes = int(2.5 * entry_size)  # room for two entries
    monkeypatch.setenv("NEURONSIM_CACHE_MAX_MB", str(cap_bytes / (1024 * 1024)))
    for batch in range(3, 8):
        _compile_mlp(batch, model)
        total = sum(p.stat().st_size for p in _entries())
        assert total <= cap_bytes
    assert len(_entries()) == 2
    assert neuronsim.cache_stats()["evictions"] == 4


def test_eviction_removes_the_least_recently_used_entry(monkeypatch):
    model = MLP(40, 50, 6)
    for batch in (2, 3, 4):
        _compile_mlp(batch, model)
    now = time.time()
    by_batch = {}
    for entry in _entries():
        program = disk_cache.active().load(entry.stem).program
        shapes = [tuple(b["shape"]) for b in program.buffers if b["kind"] == "input"]
        (batch,) = [shape[0] for shape in shapes if shape[1:] == (40,) and shape[0] != 50]
        by_batch[batch] = entry
    for age, batch in ((300, 2), (200, 3), (100, 4)):
        os.utime(by_batch[batch], (now - age, now - age))
    # A hit (new process: from disk) makes batch 2 the most recently used.
    _fresh_process_state()
    _compile_mlp(2, model)
    assert neuronsim.cache_stats()["disk_hits"] == 1
    cap = sum(p.stat().st_size for p in _entries()) + 10
    monkeypatch.setenv("NEURONSIM_CACHE_MAX_MB", str(cap / (1024 * 1024)))
    _compile_mlp(5, model)  # one entry over the cap: the least recently used (batch 3) goes
    remaining = {p.name for p in _entries()}
    assert by_batch[3].name not in remaining
    assert by_batch[2].name in remaining and by_batch[4].name in remaining
    assert neuronsim.cache_stats()["evictions"] == 1


def test_disable_cache_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("NEURONSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NEURONSIM_DISABLE_CACHE", "1")
    _compile_mlp(3)
    assert not (tmp_path / "cache").exists()
    stats = neuronsim.cache_stats()
    assert stats["cache_dir"] is None and stats["disk_writes"] == 0 and stats["compiles"] == 1


def test_unwritable_cache_dir_warns_once_and_still_runs(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    monkeypatch.setenv("NEURONSIM_CACHE_DIR", str(blocker))
    model = MLP(40, 50, 6)
    with pytest.warns(CacheWarning, match="cannot write the disk compile cache") as caught:
        _compile_mlp(3, model)
        _compile_mlp(4, model)
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 2 and stats["disk_writes"] == 0


def test_program_bytes_round_trip():
    _compile_mlp(3)
    program = next(iter(neuronsim.cache.CACHE._programs.values()))
    data = program.to_bytes()
    assert isinstance(data, bytes) and len(data) < len(program.to_json())
    again = _C.Program.from_bytes(data)
    assert again.to_json() == program.to_json()
    with pytest.raises(_C.FormatError):
        _C.Program.from_bytes(data[: len(data) // 2])
    assert _C.PROGRAM_FORMAT_VERSION >= 1
