"""OpInfo sweep: PyTorch's operator database through the neuron backend, compared with eager.

    python bench/opinfo_sweep.py                      # fp32, all ops -> bench/results/opinfo.{md,csv}
    python bench/opinfo_sweep.py --dtype bfloat16     # bf16 (ops that take it)
    python bench/opinfo_sweep.py --inductor           # also Inductor -> opinfo_inductor.csv
    python bench/opinfo_sweep.py --backward           # gradients -> opinfo_backward.{md,csv}
    python bench/opinfo_sweep.py --only sin --only add   # (--only never writes the results)

For every OpInfo of torch.testing._internal.common_methods_invocations.op_db that supports
the dtype on the CPU, its first --samples sample inputs (default 2) run as
torch.compile(fn, backend=..., dynamic=False), with the sample's tensors as graph inputs, and
the outputs are compared with eager (fp32: rtol 1.3e-4, atol 1e-5; bf16: 2e-2; integer
and bool outputs exactly). An op passes if all its samples pass. Each sample is classified:
  pass          compiled and matched eager
  unsupported   NeuronCompileError listing unsupported operators
  compile       another compile error (the message's first line is kept)
  runtime       an error while running the compiled program
  mismatch      outputs differ from eager
  timeout       more than --timeout seconds
  eager error   eager itself raised on the sample (not counted against the backend)
In bf16, a forward sample whose outputs differ from eager's also passes when every element is
as close as eager's (within the tolerance) to the same computation in fp32 rounded to bf16:
eager's own bf16 rounding differs between CPU kernels (a bf16 conv_transpose2d sample is
0.79 off its fp32 result on one machine).
Ops whose outputs are uninitialized memory (empty, empty_like, ...) compare shapes and dtypes.
sort, argsort and topk (without stable=True) may order equal elements differently from eager,
as PyTorch leaves that order unspecified: their indices pass if they are distinct and select
the same values as eager's.
With --backward, ops with autograd run forward and backward instead: the gradients of
sum(output * probe) (a fixed random probe per floating output; a complex output's real view)
with respect to every floating input are compared, so the backward graph AOTAutograd derives
goes through the backend too.
The samples are PyTorch's and the probes seeded, so the sweep is deterministic.
Inductor's results do not depend on neuronsim: --inductor saves them beside the table
(opinfo[_dtype][_backward]_inductor.csv, with the torch version), and a later run without
--inductor on the same torch version shows that saved column next to its own.
"""

from __future__ import annotations

import argparse
import collections
import csv
import os
import signal
import sys
import time
import warnings

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch
from torch.utils import _pytree as pytree

import neuronsim

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
CATEGORIES = ("pass", "unsupported", "compile", "runtime", "mismatch", "timeout")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def _tolerance(dtype: torch.dtype) -> dict:
    if dtype == torch.bfloat16:
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == torch.float16:
        return {"rtol": 2e-3, "atol": 2e-3}
    return {"rtol": 1.3e-4, "atol": 1e-5}


def _graph_fn(op, sample):
    """(fn, tensors): fn(*tensors) runs the op on the sample with its tensors as inputs."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [leaves[i] for i in positions]

    def fn(*args):
        filled = list(leaves)
        for i, t in zip(positions, args):
            filled[i] = t
        inp, a, kw = pytree.tree_unflatten(filled, spec)
        return op(inp, *a, **kw)

    return fn, tensors


# Ops whose output values are uninitialized memory in eager: only shapes and dtypes compare.
UNDEFINED_VALUES = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                    "new_empty_strided"}  # fmt: skip


def _compare(got, expected, dtype, values: bool = True) -> str | None:
    """None if equal within tolerance (or, without `values`, in shape and dtype), else why
    not."""
    g_leaves, g_spec = pytree.tree_flatten(got)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if g_spec != e_spec:
        return f"output structure {g_spec} != {e_spec}"
    for g, e in zip(g_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                return f"got {type(g).__name__} for a tensor"
            if g.shape != e.shape or g.dtype != e.dtype:
                return f"shape/dtype {tuple(g.shape)} {g.dtype} != {tuple(e.shape)} {e.dtype}"
            if not values:
                continue
            try:
                if e.dtype.is_floating_point or e.dtype.is_complex:
                    torch.testing.assert_close(g, e, equal_nan=True, **_tolerance(e.dtype))
                else:
                    torch.testing.assert_close(g, e, rtol=0, atol=0)
            except AssertionError as error:
                return " ".join(str(error).split())[:200]
        elif g != e and not (isinstance(e, float) and e != e and g != g):
            return f"{g!r} != {e!r}"
    return None


def _gradients(fn, tensors):
    """The gradients of sum(output * probe) over fn's floating outputs with respect to its
    floating inputs (None for an input it does not depend on); None if no output depends on
    an input."""
    inputs = [t.detach().requires_grad_(t.is_floating_point()) for t in tensors]
    outputs = [o for o in pytree.tree_leaves(fn(*inputs))
               if isinstance(o, torch.Tensor) and o.requires_grad]  # fmt: skip
    if not outputs:
        return None
    # A complex output is probed through its real view (real, imag): the loss stays real.
    outputs = [torch.view_as_real(o.resolve_conj()) if o.is_complex() else o for o in outputs]
    generator = torch.Generator().manual_seed(0)
    loss = sum((o * torch.randn(o.shape, generator=generator).to(o.dtype)).sum() for o in outputs)
    wrt = [t for t in inputs if t.requires_grad]
    return torch.autograd.grad(loss, wrt, allow_unused=True)


def _raised_by_timeout(error: BaseException) -> bool:
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, _Timeout):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _warm_up(backend: str) -> None:
    """Compiles one small graph without a time limit: Inductor's first compile also builds
    its C++ toolchain's caches, which must not count against the first op's samples."""
    torch._dynamo.reset()
    torch.compile(lambda x: x * 2 + 1, backend=backend, dynamic=False)(torch.ones(4))


def run_sample(op, sample, dtype, backend: str, timeout: int, backward: bool = False):
    """(category, detail) of one sample through `backend`."""
    fn, tensors = _graph_fn(op, sample)
    try:
        if backward:
            expected = _gradients(fn, tensors)
            if expected is None:
                return "eager error", "no output depends on a floating input"
        else:
            with torch.no_grad():
                expected = fn(*tensors)
    except Exception as error:  # noqa: BLE001
        return "eager error", f"{type(error).__name__}: {str(error)[:120]}"
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=False)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if backward:
                got = _gradients(compiled, tensors)
            else:
                with torch.no_grad():
                    got = compiled(*tensors)
    except _Timeout:
        return "timeout", f"over {timeout} s"
    except neuronsim.NeuronCompileError as error:
        text = str(error)
        first = text.strip().splitlines()[0] if text.strip() else ""
        if "unsupported operator" in text:
            ops = [line.strip().split()[0] for line in text.splitlines()[1:] if line.startswith("  ")]
            return "unsupported", " ".join(ops)[:200]
        return "compile", first[:200]
    except neuronsim.NeuronRuntimeError as error:
        return "runtime", str(error).splitlines()[0][:200]
    except Exception as error:  # noqa: BLE001 (Dynamo wraps backend errors; Inductor's own)
        if _raised_by_timeout(error):  # the alarm fired inside the backend, which wrapped it
            return "timeout", f"over {timeout} s"
        text = " ".join(str(error).split())
        if "unsupported operator" in text:
            return "unsupported", text[:200]
        return "compile", f"{type(error).__name__}: {text[:200]}"
    finally:
        signal.alarm(0)
    why = _compare(got, expected, dtype, values=op.name not in UNDEFINED_VALUES)
    if why and not backward and _same_up_to_ties(op, sample, got, expected, dtype):
        why = None
    if why and not backward and _closer_than_eager(fn, tensors, got, expected, dtype):
        why = None
    return ("mismatch", why) if why else ("pass", "")


def _closer_than_eager(fn, tensors, got, expected, dtype) -> bool:
    """In bf16 / fp16, eager's own rounding (which differs between CPU kernels) is no ground
    truth: outputs that differ from eager's pass if each element is, within the dtype's
    tolerance, at least as close as eager's to the same computation in fp32 (the sample's
    values upcast, the fp32 result rounded to the dtype)."""
    if dtype not in (torch.bfloat16, torch.float16):
        return False
    try:
        with torch.no_grad():
            reference = fn(*[t.float() if t.dtype == dtype else t for t in tensors])
    except Exception:  # noqa: BLE001 (an op without an fp32 path on these inputs)
        return False
    g_leaves, e_leaves = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    r_leaves = pytree.tree_leaves(reference)
    if not len(g_leaves) == len(e_leaves) == len(r_leaves):
        return False
    tol = _tolerance(dtype)
    for g, e, r in zip(g_leaves, e_leaves, r_leaves):
        if not isinstance(e, torch.Tensor) or not e.dtype.is_floating_point:
            if _compare(g, e, dtype) is not None:
                return False
            continue
        if not isinstance(r, torch.Tensor) or r.shape != e.shape:
            return False
        r = r.to(dtype).double()
        g_err, e_err = (g.double() - r).abs(), (e.double() - r).abs()
        allowed = e_err + tol["atol"] + tol["rtol"] * r.abs()
        if not bool(((g_err <= allowed) | (g.double().isnan() & e.double().isnan())).all()):
            return False
    return True


def _same_up_to_ties(op, sample, got, expected, dtype) -> bool:
    """sort, argsort and topk leave the order of equal elements unspecified (unless
    stable=True): their indices match if they are distinct positions along the dim that
    select the same values as eager's, and their values outputs match eager's."""
    if op.name not in ("sort", "argsort", "topk") or sample.kwargs.get("stable"):
        return False
    x, args = sample.input, list(sample.args)
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return False
    position = 1 if op.name == "topk" else 0
    dim = sample.kwargs.get("dim", args[position] if len(args) > position else -1)
    g_leaves, e_leaves = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    if len(g_leaves) != len(e_leaves):
        return False
    for g, e in zip(g_leaves, e_leaves):
        if not isinstance(e, torch.Tensor) or not isinstance(g, torch.Tensor):
            return False
        if e.dtype != torch.int64:  # values: as compared everywhere else
            if _compare(g, e, dtype):
                return False
            continue
        if g.shape != e.shape or g.dtype != e.dtype:
            return False
        positions = g.sort(dim).values
        if positions.numel() and (
            positions.min() < 0 or positions.max() >= x.shape[dim]
            or (positions.narrow(dim, 1, positions.shape[dim] - 1)
                == positions.narrow(dim, 0, positions.shape[dim] - 1)).any()
        ):  # fmt: skip
            return False  # an index out of range or repeated
        chosen, wanted = x.gather(dim, g), x.gather(dim, e)
        if not torch.equal(chosen.isnan(), wanted.isnan()):
            return False
        if not torch.equal(chosen[~chosen.isnan()], wanted[~wanted.isnan()]):
            return False
    return True


def sweep(dtype, backends, samples, only, timeout, log=print, backward=False):
    from torch.testing._internal.common_methods_invocations import op_db

    for backend in backends:
        _warm_up(backend)
    rows = []
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if only and not any(o == name or o == op.name for o in only):
            continue
        if dtype not in op.supported_dtypes("cpu") or (backward and not op.supports_autograd):
            continue
        try:
            cases = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples]
        except Exception as error:  # noqa: BLE001
            log(f"[opinfo] {name}: no samples ({type(error).__name__})")
            continue
        row = {"op": name}
        for backend in backends:
            results = [run_sample(op, s, dtype, backend, timeout, backward) for s in cases]
            counted = [r for r in results if r[0] != "eager error"]
            if not counted:
                row[backend] = ("eager error", results[0][1] if results else "no samples")
            else:
                failed = [r for r in counted if r[0] != "pass"]
                row[backend] = failed[0] if failed else ("pass", "")
        rows.append(row)
        log(f"[opinfo] {name}: " + ", ".join(f"{b} {row[b][0]}" for b in backends))
    return rows


def _suffix(dtype, backward):
    suffix = "" if dtype == torch.float32 else f"_{str(dtype).split('.')[-1]}"
    return suffix + ("_backward" if backward else "")


def _inductor_path(dtype, backward):
    return os.path.join(RESULTS, f"opinfo{_suffix(dtype, backward)}_inductor.csv")


def save_inductor(rows, dtype, backward):
    """Inductor's column of this sweep, for later neuron-only runs on the same torch."""
    os.makedirs(RESULTS, exist_ok=True)
    with open(_inductor_path(dtype, backward), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", f"inductor result (torch {torch.__version__})", "detail"])
        for r in rows:
            w.writerow([r["op"], *r["inductor"]])


def load_inductor(rows, dtype, backward):
    """Adds the saved Inductor column to rows; False if none was saved for this torch, or it
    does not cover every op of this sweep."""
    try:
        with open(_inductor_path(dtype, backward), newline="") as f:
            reader = csv.reader(f)
            header = next(reader)
            saved = {op: (result, detail) for op, result, detail in reader}
    except (OSError, StopIteration, ValueError):
        return False
    if f"(torch {torch.__version__})" not in header[1] or any(r["op"] not in saved for r in rows):
        return False
    for r in rows:
        r["inductor"] = saved[r["op"]]
    return True


def write(rows, backends, dtype, command, seconds, backward=False):
    os.makedirs(RESULTS, exist_ok=True)
    suffix = _suffix(dtype, backward)
    counted = {b: collections.Counter(r[b][0] for r in rows) for b in backends}
    with open(os.path.join(RESULTS, f"opinfo{suffix}.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op"] + [f"{b} {k}" for b in backends for k in ("result", "detail")])
        for r in rows:
            w.writerow([r["op"]] + [x for b in backends for x in r[b]])
    with open(os.path.join(RESULTS, f"opinfo{suffix}.md"), "w") as f:
        kind = ", forward and backward" if backward else ""
        f.write(f"# OpInfo sweep ({str(dtype).split('.')[-1]}{kind})\n\n")
        f.write(f"Produced by: `{command}` in {seconds:.0f} s; torch {torch.__version__}, neuronsim "
                f"{neuronsim.compiler_version()}. Date: {time.strftime('%Y-%m-%d')}.\n\n")
        if "inductor" in backends and "--inductor" not in command:
            saved = os.path.basename(_inductor_path(dtype, backward))
            f.write(f"Inductor's column: saved by an earlier `--inductor` run in `{saved}`.\n\n")
        f.write("```\n" + (__doc__ or "").strip() + "\n```\n\n")
        f.write("| backend | ops | " + " | ".join(CATEGORIES) + " | eager error |\n")
        f.write("|---|---|" + "---|" * (len(CATEGORIES) + 1) + "\n")
        for b in backends:
            c = counted[b]
            total = sum(v for k, v in c.items() if k != "eager error")
            f.write(f"| {b} | {total} | " + " | ".join(str(c.get(k, 0)) for k in CATEGORIES)
                    + f" | {c.get('eager error', 0)} |\n")
        missing = collections.Counter()
        for r in rows:
            if r["neuron"][0] == "unsupported":
                missing.update(r["neuron"][1].split())
        if missing:
            f.write("\nMost frequent unsupported operators (ops of the sweep that need them):\n\n")
            f.write(", ".join(f"`{k}` {v}" for k, v in missing.most_common(40)) + "\n")
        f.write("\n| op | " + " | ".join(backends) + " |\n|---|" + "---|" * len(backends) + "\n")
        for r in rows:
            cells = [f"{r[b][0]}" + (f": {r[b][1]}" if r[b][1] and r[b][0] != "pass" else "")
                     for b in backends]
            f.write(f"| {r['op']} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--only", action="append", help="op name (OpInfo name or name.variant)")
    parser.add_argument("--inductor", action="store_true", help="also run Inductor")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per sample")
    parser.add_argument("--backward", action="store_true", help="compare gradients")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    # Every sample compiles (nothing from, nor to, the user's disk cache). Set here, not at
    # import: test_opinfo_subset.py imports this module into the test process.
    os.environ.setdefault("NEURONSIM_DISABLE_CACHE", "1")
    torch._dynamo.config.cache_size_limit = 64
    dtype = getattr(torch, args.dtype)
    backends = ["neuron"] + (["inductor"] if args.inductor else [])
    start = time.time()
    rows = sweep(dtype, backends, args.samples, args.only, args.timeout, backward=args.backward)
    if not args.no_write and not args.only:
        command = "python " + " ".join(sys.argv)
        if args.inductor:
            save_inductor(rows, dtype, args.backward)
        elif load_inductor(rows, dtype, args.backward):
            backends.append("inductor")
        write(rows, backends, dtype, command, time.time() - start, backward=args.backward)
    for b in backends:
        c = collections.Counter(r[b][0] for r in rows)
        print(f"[opinfo] {b}: " + ", ".join(f"{k} {c.get(k, 0)}" for k in CATEGORIES + ("eager error",)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
