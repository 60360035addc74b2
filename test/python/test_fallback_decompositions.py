"""PyTorch's own decompositions stand in for the ATen ops the compiler does not lower itself
(backend._fallback_decompositions), and never replace an op it lowers natively."""

import pytest
import torch

import neuronsim
from neuronsim.backend import _decompositions, _fallback_decompositions
from neuronsim.graph_export import target_name

aten = torch.ops.aten


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def test_the_fallback_table_never_replaces_a_native_lowering():
    supported = neuronsim.supported_ops()
    table = _fallback_decompositions()
    assert table, "PyTorch's decomposition table offers ops the compiler does not lower"
    assert not [target_name(op) for op in table if target_name(op) in supported]
    assert aten.addmv.default in table and aten.mm.default not in table
    assert all(op in _decompositions() for op in table)


@pytest.mark.parametrize(
    "name, fn, shapes",
    [
        ("addmv", lambda a, m, v: torch.addmv(a, m, v, beta=0.5, alpha=2.0), [(6,), (6, 5), (5,)]),
        ("dist", lambda a, b: torch.dist(a, b, p=3), [(4, 7), (4, 7)]),
        ("ldexp", lambda a, b: torch.ldexp(a, b.round()), [(3, 8), (3, 8)]),
        ("addr", lambda a, u, v: torch.addr(a, u, v, beta=0.5, alpha=2.0), [(4, 6), (4,), (6,)]),
        ("renorm", lambda x: torch.renorm(x, p=2, dim=0, maxnorm=1.0), [(5, 7)]),
    ],
)
def test_ops_through_pytorch_decompositions_match_eager(name, fn, shapes):
    torch.manual_seed(0)
    inputs = [torch.randn(shape) for shape in shapes]
    torch.testing.assert_close(_compiled(fn)(*inputs), fn(*inputs), rtol=1e-4, atol=1e-5)
    ops = {target_name(op) for op in _fallback_decompositions()}
    assert f"aten.{name}.default" in ops or name == "ldexp"  # the op goes through the table


def test_a_prims_op_left_by_a_decomposition_is_named_in_the_error():
    with pytest.raises(neuronsim.NeuronCompileError) as info:
        _compiled(lambda a, b: torch.gcd(a, b))(torch.arange(1, 5), torch.arange(3, 7))
    message = str(info.value)
    assert message.startswith(
        "unsupported operators (1):\n  prims.gcd.default (from PyTorch's decomposition of "
        "an ATen op the compiler does not lower) at "
    ), message


def test_prims_convert_element_type_from_a_decomposition():
    # renorm's decomposition converts bf16 to fp32 and back with prims.convert_element_type.
    x = torch.randn(5, 7, dtype=torch.bfloat16)
    fn = lambda t: torch.renorm(t, p=2, dim=1, maxnorm=1.0)  # noqa: E731
    torch.testing.assert_close(_compiled(fn)(x), fn(x), rtol=2e-2, atol=2e-2)
