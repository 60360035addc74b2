"""Strided views and their scatters (as_strided, unfold, the *_copy views, slice_scatter,
select_scatter, diagonal_scatter, as_strided_scatter), inverse trigonometric and hyperbolic
functions, atan2, hypot, fmin, fmax and logical_xor, compiled against eager.

Ops that Dynamo and the decompositions leave in graphs are compiled with torch.compile (the
graph is checked to contain them); the others run as a one-node FX graph given straight to
the compiler. Data movement is exact: results must equal eager's bit for bit. Functions
match eager within rtol 1.3e-4 in fp32 (1.6e-2 in bf16), NaN where eager has NaN, and the
sign of eager's zeros.
"""

from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.fx

import neuronsim
from neuronsim.compiler import compile_fx_graph
from neuronsim.errors import NeuronCompileError
from neuronsim.options import resolve_options

A = torch.ops.aten
DTYPES = [torch.float32, torch.bfloat16]
DTYPE_IDS = ["fp32", "bf16"]


def _compile(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def _one_op_graph(op, args) -> torch.fx.GraphModule:
    """A graph of one call of `op` on `args` (tensors become placeholders)."""
    graph = torch.fx.Graph()
    by_id = {}
    for i, t in enumerate(a for a in args if isinstance(a, torch.Tensor)):
        placeholder = graph.placeholder(f"x{i}")
        placeholder.meta["val"] = t
        by_id[id(t)] = placeholder
    node_args = tuple(by_id.get(id(a), a) if isinstance(a, torch.Tensor) else a for a in args)
    node = graph.call_function(op, node_args)
    value = op(*args)
    node.meta["val"] = value
    if isinstance(value, (list, tuple)):
        items = []
        for i, item in enumerate(value):
            getitem = graph.call_function(operator.getitem, (node, i))
            getitem.meta["val"] = item
            items.append(getitem)
        graph.output(tuple(items))
    else:
        graph.output((node,))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _run_one_op(op, *args):
    """(compiled, eager) results of `op(*args)` as tuples."""
    gm = _one_op_graph(op, args)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    expected = gm(*tensors)
    actual = compile_fx_graph(gm, tensors, resolve_options(None))(list(tensors))
    return tuple(actual), tuple(expected)


def _assert_equal(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
        assert torch.equal(a, e)


def _x(*shape, dtype=torch.float32):
    """Distinct values (exact in bf16 up to 256) so that any misplaced element shows."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float32) % 251 - 125).reshape(shape).to(dtype)


# --- Scatters (one-op graphs: the decompositions keep them, but Dynamo rarely emits them) ---

SCATTERS = [
    # (id, op, input shape, src shape, extra args)
    ("slice_last_step3", A.slice_scatter.default, (4, 9), (4, 3), (-1, 1, None, 3)),
    ("slice_first", A.slice_scatter.default, (130, 7), (2, 7), (0, -2, None, 1)),
    ("slice_end_clamped", A.slice_scatter.default, (5, 6), (5, 4), (1, 2, 100, 1)),
    ("slice_empty", A.slice_scatter.default, (5, 6), (5, 0), (1, 4, 2, 1)),
    ("slice_3d_mid", A.slice_scatter.default, (2, 9, 3), (2, 4, 3), (1, 1, 8, 2)),
    ("select_mid", A.select_scatter.default, (3, 4, 5), (3, 5), (1, -1)),
    ("select_first", A.select_scatter.default, (7, 129), (129,), (0, 3)),
    ("select_1d", A.select_scatter.default, (5,), (), (0, 2)),
    ("diagonal_main", A.diagonal_scatter.default, (5, 5), (5,), (0, 0, 1)),
    ("diagonal_offset", A.diagonal_scatter.default, (5, 3, 4), (3, 4), (1, 2, 0)),
    ("diagonal_negative", A.diagonal_scatter.default, (3, 6, 4), (3, 4), (-2, -2, -1)),
    ("as_strided", A.as_strided_scatter.default, (4, 9), (2, 2), ([2, 2], [9, 3], 2)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("op", "shape", "src_shape", "extra"),
                         [pytest.param(*c[1:], id=c[0]) for c in SCATTERS])
def test_scatter_replaces_the_window(op, shape, src_shape, extra, dtype):
    x, src = _x(*shape, dtype=dtype), -_x(*src_shape, dtype=dtype) - 500
    actual, expected = _run_one_op(op, x, src, *extra)
    _assert_equal(actual, expected)


def test_scatter_of_integers_and_booleans():
    x = torch.arange(20).reshape(4, 5)
    _assert_equal(*_run_one_op(A.slice_scatter.default, x, -torch.ones(4, 2, dtype=torch.long),
                               1, 1, 5, 2))
    mask = torch.zeros(3, 3, dtype=torch.bool)
    _assert_equal(*_run_one_op(A.diagonal_scatter.default, mask, torch.ones(3, dtype=torch.bool)))


def test_overlapping_as_strided_scatter_is_an_error():
    x, src = _x(4, 9), _x(2, 2)
    with pytest.raises(NeuronCompileError, match="overlap"):
        _run_one_op(A.as_strided_scatter.default, x, src, [2, 2], [1, 1], 0)


# --- Strided reads -----------------------------------------------------------------------------

READS = [
    ("as_strided", A.as_strided.default, (4, 9), ([3, 3], [1, 2], 1)),
    ("as_strided_repeat", A.as_strided.default, (4, 9), ([5, 2], [0, 35])),
    ("as_strided_overlapping", A.as_strided.default, (130, 7), ([129, 14], [7, 1])),
    ("as_strided_copy", A.as_strided_copy.default, (2, 3, 5), ([5, 6], [1, 5], 0)),
    ("unfold_last", A.unfold.default, (4, 9), (-1, 3, 2)),
    ("unfold_first_whole", A.unfold.default, (5, 3), (0, 5, 1)),
    ("unfold_3d", A.unfold.default, (2, 130, 3), (1, 4, 7)),
    ("narrow_copy", A.narrow_copy.default, (4, 9), (0, -3, 2)),
    ("narrow_copy_empty", A.narrow_copy.default, (4, 9), (1, 9, 0)),
    ("view_copy", A.view_copy.default, (4, 9), ([6, -1],)),
    ("permute_copy", A.permute_copy.default, (2, 3, 5), ([2, 0, 1],)),
    ("unbind_copy", A.unbind_copy.int, (2, 3, 5), (-2,)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("op", "shape", "extra"),
                         [pytest.param(*c[1:], id=c[0]) for c in READS])
def test_strided_read(op, shape, extra, dtype):
    actual, expected = _run_one_op(op, _x(*shape, dtype=dtype), *extra)
    _assert_equal(actual, expected)


def test_as_strided_outside_the_input_is_an_error():
    """Eager reads past a view's elements into its base's storage; the compiled input is
    the view's elements alone, so the compiler refuses, naming the op and the sizes."""
    x = _x(48)[:36].view(4, 9)
    with pytest.raises(NeuronCompileError, match=r"as_strided.*reach element 37 of an input of 36"):
        _run_one_op(A.as_strided.default, x, [3, 3], [12, 6], 1)


# --- Through torch.compile ---------------------------------------------------------------------


def _graph_targets(monkeypatch) -> set[str]:
    import neuronsim.backend as backend

    seen: set[str] = set()
    original = backend.check_supported

    def record(gm):
        seen.update(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return original(gm)

    monkeypatch.setattr(backend, "check_supported", record)
    return seen


def test_unfold_and_as_strided_compile(monkeypatch):
    seen = _graph_targets(monkeypatch)

    def f(x):
        windows = x.unfold(-1, 4, 3)  # [6, 33, 4]
        return windows * 2, torch.as_strided(x, (5, 3), (2, 7), 3) + 1

    x = torch.randn(6, 103)
    _assert_equal(_compile(f)(x), f(x))
    assert {"aten.unfold.default", "aten.as_strided.default"} <= seen


def test_as_strided_of_a_transposed_view_reads_its_base():
    """as_strided reads the storage: of a transposed view of a graph value, the value's
    row-major elements (strided_views.py rewrites it to address the value)."""

    def f(x):
        return torch.as_strided((x * 2).t(), (3, 2), (1, 3)) + 1

    x = torch.randn(2, 3)
    assert torch.equal(_compile(f)(x), f(x))


def test_as_strided_of_a_transposed_input_is_unsupported():
    """Of a graph input that is a transposed view, the storage is not the compiled graph's
    (contiguous) input: the compiler does not take it (it runs on the CPU with fallback)."""

    def f(x):
        return torch.as_strided(x, (3, 2), (1, 3)) + 1

    x = torch.randn(2, 3).t()
    with pytest.raises(NeuronCompileError, match="non-contiguous or offset view"):
        _compile(f)(x)


class PositionalModel(torch.nn.Module):
    """A learned position table sliced to the sequence length: its gradient is a
    slice_scatter of the slice's gradient into zeros."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(17, 24))
        self.proj = torch.nn.Linear(24, 24)

    def forward(self, x):
        return torch.tanh(self.proj(x + self.pos[: x.shape[1]]))


def test_slice_scatter_in_training(monkeypatch):
    seen = _graph_targets(monkeypatch)
    torch.manual_seed(0)
    model = PositionalModel()
    compiled = _compile(copy.deepcopy(model))
    x = torch.randn(3, 11, 24)
    compiled(x).square().sum().backward()
    model(x).square().sum().backward()
    assert neuronsim.get_fallback_ops() == {}
    assert "aten.slice_scatter.default" in seen
    for (name, p), q in zip(model.named_parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)
    assert torch.equal(compiled._orig_mod.pos.grad[11:], torch.zeros(6, 24))


# --- Inverse trigonometric and hyperbolic functions, hypot, fmin/fmax, logical_xor ---------

INF, NAN = float("inf"), float("nan")
EDGES = [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-7, 0.5, 2.0, -2.0, 1e10, -1e30, INF, -INF, NAN]


def _values(low: float, high: float) -> torch.Tensor:
    """A [7, 131] grid of values from low to high, then the edge values."""
    grid = torch.linspace(low, high, 7 * 131 - len(EDGES))
    return torch.cat([grid, torch.tensor(EDGES)]).reshape(7, 131)


UNARY = [
    ("atan", torch.atan, (-30.0, 30.0)),
    ("asin", torch.asin, (-1.0, 1.0)),
    ("acos", torch.acos, (-1.0, 1.0)),
    ("asinh", torch.asinh, (-1e4, 1e4)),
    ("asinh_small", torch.asinh, (-1e-3, 1e-3)),
    ("acosh", torch.acosh, (1.0, 1e4)),
    ("acosh_near_one", torch.acosh, (1.0, 1.001)),
]
# fp32: max |compiled - eager| / max |eager| with NaN where eager has NaN; each element also
# within rtol 1.3e-4 (and tiny atol) of eager.
RTOL = {torch.float32: 1.3e-4, torch.bfloat16: 1.6e-2}


def _close(actual, expected, dtype, signed_zero: bool = True) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, rtol=RTOL[dtype], atol=1e-6, equal_nan=True)
    if not signed_zero:  # fmin(0, -0) may be either zero
        return
    zeros = expected == 0
    assert torch.equal(actual[zeros].signbit(), expected[zeros].signbit()), "sign of zero"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("fn", "domain"), [pytest.param(*c[1:], id=c[0]) for c in UNARY])
def test_inverse_function(fn, domain, dtype):
    x = _values(*domain).to(dtype)
    _close(_compile(lambda t: fn(t))(x), fn(x), dtype)


def test_inverse_functions_odd_shapes_in_one_graph():
    def f(a, b):
        acosh = torch.acosh(a.abs() + 1)
        return torch.atan(a) + torch.asin(b), torch.acos(b) * torch.asinh(a), acosh

    a, b = torch.randn(130, 7) * 5, torch.rand(130, 7) * 2 - 1
    for got, want in zip(_compile(f)(a, b), f(a, b), strict=True):
        _close(got, want, torch.float32)


def _pairs() -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair of edge values, then random pairs: [2, n] each."""
    edges = torch.tensor(EDGES + [3.0, -3.0, 1e-38, 5e-39])
    y, x = torch.meshgrid(edges, edges, indexing="ij")
    y, x = y.flatten(), x.flatten()
    ry, rx = torch.randn(2, 200) * 10
    return torch.stack([y, ry.repeat(2)[: y.numel()]]), torch.stack([x, rx.repeat(2)[: x.numel()]])


BINARY = [
    ("atan2", torch.atan2),
    ("hypot", torch.hypot),
    ("fmin", torch.fmin),
    ("fmax", torch.fmax),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("fn", [pytest.param(c[1], id=c[0]) for c in BINARY])
def test_binary_function_on_edge_values(fn, dtype):
    torch.manual_seed(0)
    y, x = (t.to(dtype) for t in _pairs())
    signed_zero = fn not in (torch.fmin, torch.fmax)
    _close(_compile(lambda a, b: fn(a, b))(y, x), fn(y, x), dtype, signed_zero)


def test_binary_functions_broadcast_and_take_integers():
    def f(a, b, i, j):
        return torch.atan2(a, b), torch.hypot(b, a), torch.fmax(a, b), torch.fmin(i, j)

    a, b = torch.randn(3, 1, 129), torch.randn(5, 1)
    i, j = torch.randint(-9, 9, (4, 5)), torch.randint(-9, 9, (5,))
    for got, want in zip(_compile(f)(a, b, i, j), f(a, b, i, j), strict=True):
        if want.is_floating_point():
            _close(got, want, torch.float32, signed_zero=False)
        else:
            assert torch.equal(got, want)


def test_logical_xor():
    def f(a, b, m, n):
        return torch.logical_xor(a, b), torch.logical_xor(m, n), torch.logical_xor(a, m)

    a = torch.tensor([[0.0, -0.0, 1.0, NAN, -2.0, 0.0]]).expand(3, 6).contiguous()
    b = torch.tensor([0.0, 1.0, 0.0, 0.0, 3.0, NAN])
    m = torch.randint(0, 2, (3, 6)).bool()
    n = torch.randint(-2, 3, (6,))
    for got, want in zip(_compile(f)(a, b, m, n), f(a, b, m, n), strict=True):
        assert got.dtype == torch.bool and torch.equal(got, want)
