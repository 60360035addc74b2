"""Traces (options["profile"], NEURONSIM_PROFILE), run stats, report(), timing-only, targets."""

from __future__ import annotations

import io
import json

import pytest
import torch

import neuronsim
from models import MLP, TOLERANCE, relative_error

ENGINES = {"tensor", "vector", "scalar", "gpsimd", "dma"}


def _run(options=None, dtype=torch.float32, shape=(128, 256, 384, 128)):
    batch, features, hidden, classes = shape
    model = MLP(features, hidden, classes).to(dtype)
    x = torch.randn(batch, features, dtype=dtype)
    compiled = torch.compile(model, backend="neuron", dynamic=False, options=options)
    with torch.no_grad():
        return compiled(x), model(x), neuronsim.last_run_stats()


def _check_trace_format(path) -> dict:
    """The trace-event format (JSON object form): what chrome://tracing and Perfetto read."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    events = data["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    assert complete, "no instruction events"
    for e in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= e.keys(), e
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["cat"] in ENGINES
    names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert {e["tid"] for e in complete} <= names.keys(), "a lane without thread_name metadata"
    assert names[0] == "Tensor" and names[4] == "DMA q0"
    # Events of one lane never overlap.
    by_lane: dict[int, list] = {}
    for e in complete:
        by_lane.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_lane.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - 2e-6  # ts and dur are each rounded to 1e-6 us
    return data


def test_stats_have_mfu_roofline_and_utilization():
    actual, expected, stats = _run()
    assert relative_error(actual, expected) <= TOLERANCE[torch.float32]
    assert 0 < stats["mfu"] < 1
    assert 0 < stats["roofline_ns"] <= stats["sim_ns"]
    assert set(stats["engine_utilization"]) == ENGINES
    for engine, share in stats["engine_utilization"].items():
        assert 0 <= share <= 1 + 1e-9
        assert share == pytest.approx(stats["engine_busy_ns"][engine] / stats["sim_ns"])
    # fp32 matmuls: the fp32 peak; mfu = flops / (sim time x peak).
    assert stats["peak_tflops"] == 20
    assert stats["mfu"] == pytest.approx(stats["flops"] / (stats["sim_ns"] * 20e3))
    assert stats["matmuls"] > 0 and stats["dma_transfers"] > 0
    assert stats["origin_busy_ns"] and all(v > 0 for v in stats["origin_busy_ns"].values())
    assert any("addmm" in name or "mm" in name for name in stats["origin_busy_ns"])
    assert stats["timing_only"] is False and stats["trace"] is None


def test_profile_option_writes_a_chrome_trace(tmp_path):
    path = tmp_path / "trace.json"
    _, _, stats = _run({"profile": str(path)})
    assert stats["trace"] == str(path)
    data = _check_trace_format(path)
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == stats["instructions"]
    assert {e["name"] for e in complete} >= {"nc_matmul", "dma_copy"}
    assert any("addmm" in e["args"].get("origin", "") for e in complete)
    assert data["otherData"]["target"] == "trn2"
    end_us = max(e["ts"] + e["dur"] for e in complete)
    assert end_us <= stats["sim_ns"] / 1000 + 1e-6


def test_profile_environment_variable_and_placeholders(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURONSIM_PROFILE", str(tmp_path / "sub" / "{graph}-{run}.json"))
    _, _, stats = _run()
    written = list((tmp_path / "sub").iterdir())
    assert len(written) == 1 and written[0].name.startswith(stats["graph"] + "-")
    assert stats["trace"] == str(written[0])
    _check_trace_format(written[0])


def test_profile_to_an_unwritable_path_is_a_runtime_error(tmp_path):
    # A directory cannot be opened as the trace file.
    with pytest.raises(neuronsim.NeuronRuntimeError, match="cannot open trace file"):
        _run({"profile": str(tmp_path)})


def test_timing_only_has_shapes_and_the_same_timing():
    _, _, full = _run(dtype=torch.bfloat16)
    torch._dynamo.reset()
    actual, expected, timed = _run({"timing_only": True}, dtype=torch.bfloat16)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert timed["timing_only"] is True
    for key in ("sim_ns", "instructions", "hbm_bytes", "mfu", "roofline_ns"):
        assert timed[key] == full[key], key


def test_timing_only_from_the_environment(monkeypatch):
    monkeypatch.setenv("NEURONSIM_TIMING_ONLY", "1")
    _, _, stats = _run()
    assert stats["timing_only"] is True


@pytest.mark.parametrize("bad", [{"timing_only": "maybe"}, {"profile": 3}])
def test_bad_run_options_raise(bad):
    with pytest.raises(neuronsim.NeuronCompileError, match="timing_only|profile"):
        _run(bad)


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_targets_run_end_to_end(target):
    actual, expected, stats = _run({"target": target}, dtype=torch.bfloat16)
    assert relative_error(actual, expected) <= TOLERANCE[torch.bfloat16]
    assert stats["target"] == target
    assert stats["peak_tflops"] == {"trn1": 92, "trn2": 79, "trn3": 79}[target]
    assert stats["sim_ns"] > 0 and 0 < stats["mfu"] < 1


def test_targets_differ_in_time():
    times = {}
    for target in ("trn1", "trn2", "trn3"):
        torch._dynamo.reset()
        times[target] = _run({"target": target, "timing_only": True})[2]["sim_ns"]
    assert len(set(times.values())) == 3, times
    assert times["trn3"] < times["trn2"]  # more DMA and HBM bandwidth, faster engines


def test_report_prints_a_table():
    _run()
    out = io.StringIO()
    text = neuronsim.report(file=out)
    assert out.getvalue().strip() == text
    for needle in ("simulated time", "roofline", "MFU", "HBM traffic", "instructions", "addmm"):
        assert needle in text
    for engine in ENGINES:
        assert f"\n  {engine} " in text


def _bounds_of(fn, *inputs):
    compiled = torch.compile(fn, backend="neuron", dynamic=False, options={"timing_only": True})
    with torch.no_grad():
        compiled(*inputs)
    stats = neuronsim.last_run_stats()
    return stats, {b.node.split(" at ")[0]: b for b in neuronsim.node_bounds()}


def test_node_bounds_classify_each_aten_node():
    # A large fp32 matmul is Tensor-engine bound (fp32 runs at a quarter of the bf16 rate, and
    # its 512-column panels load in 2 KiB rows); x * 2 + 1 over many elements moves bytes.
    a, b = (torch.randn(1024, 1024) for _ in "ab")
    stats, bounds = _bounds_of(torch.mm, a, b)
    mm = bounds["aten.mm.default"]
    assert (mm.bound, mm.bottleneck) == ("compute", "tensor")
    assert mm.roofline_ns == pytest.approx(2 * 1024**3 / (stats["peak_tflops"] * 1e3))
    assert 0.5 < mm.of_roofline <= 1.0 + 1e-9
    cost = stats["origin_costs"][mm.node]
    assert cost["flops"] == 2 * 1024**3 and cost["hbm_bytes"] >= 3 * 1024 * 1024 * 4
    assert cost["busy_ns"] == pytest.approx(sum(cost["engine_ns"].values()))

    x = torch.randn(2048, 4096, dtype=torch.bfloat16)
    stats, bounds = _bounds_of(lambda t: t * 2 + 1, x)
    (node,) = bounds.values()
    assert (node.bound, node.bottleneck) == ("memory", "dma")
    assert stats["origin_costs"][node.node]["flops"] == 0
    assert 0.5 < node.of_roofline <= 1.0 + 1e-9

    # bf16 layer norm: its fp32 intermediates keep the engines busier than its bytes need.
    x, w, b = (torch.randn(shape, dtype=torch.bfloat16) for shape in ((2048, 768), 768, 768))
    _, bounds = _bounds_of(lambda t, w, b: torch.nn.functional.layer_norm(t, (768,), w, b), x, w, b)
    (node,) = bounds.values()
    assert node.bound == "overhead" and node.bottleneck in ("vector", "scalar", "gpsimd")
    assert node.of_roofline < 1.0


def test_report_names_each_nodes_bound():
    a, b = (torch.randn(1024, 1024) for _ in "ab")  # fp32: Tensor-engine bound
    _bounds_of(torch.mm, a, b)
    text = neuronsim.report(file=io.StringIO())
    (line,) = [row for row in text.splitlines() if "aten.mm.default" in row]
    assert " compute  tensor " in line


def test_report_before_any_run():
    assert "no compiled graph has run" in neuronsim.report(file=io.StringIO())


def test_plot_timeline(tmp_path):
    pytest.importorskip("matplotlib")
    trace = tmp_path / "trace.json"
    _run({"profile": str(trace)})
    png = tmp_path / "timeline.png"
    assert neuronsim.plot_timeline(trace, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_states_the_targets_calibration():
    """bench/fidelity.py's summary of the published points checked on each target (fitted
    points left out) ends the report."""
    from neuronsim import calibration

    rows = calibration.calibration("trn1")
    assert {"collectives (nccom-test)", "compiled fp32 kernels vs the best NKI kernels"} <= {
        row["work"] for row in rows
    }
    for row in rows:
        assert row["points"] > 0 and 0 <= row["median_abs_error"] <= row["max_abs_error"]
    assert calibration.calibration("trn2-lnc2") == calibration.calibration("trn2") != []
    text = neuronsim.report({"target": "trn1", "sim_ns": 1000.0}, file=io.StringIO())
    assert "calibration of trn1 against published measurements" in text
    assert "collectives (nccom-test): " in text
    assert calibration.describe("no-such-target") == [
        "  calibration: no published measurement checks no-such-target yet "
        "(bench/results/fidelity.md)"
    ]
