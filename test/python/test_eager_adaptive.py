"""Adaptive eager execution (issue 28, neuronsim/device/adaptive.py): consecutive eager ops on
the neuron device recorded and run as one program, with eager semantics kept. Each test runs
the same code op by op and adaptive and compares both with CPU eager PyTorch."""

import contextlib
import io

import pytest
import torch

from neuronsim.device import adaptive, eager

DEV = torch.device("neuron:0")


@pytest.fixture(autouse=True)
def _off_after():
    yield
    adaptive.set_enabled(False)


@contextlib.contextmanager
def mode(on: bool):
    adaptive.set_enabled(on)
    try:
        yield
    finally:
        adaptive.set_enabled(False)


def programs(fn, on: bool):
    """(fn()'s result, programs run) with adaptive eager on or off."""
    with mode(on):
        before = eager.STATS.program_runs
        result = fn()
        adaptive.flush()
        return result, eager.STATS.program_runs - before


def both(fn):
    """fn() op by op and adaptive: (op-by-op result, adaptive result), having checked that
    adaptive runs fewer programs."""
    fn()  # every op's decision and program cached
    expected, n_op_by_op = programs(fn, False)
    got, n_adaptive = programs(fn, True)
    assert n_adaptive < n_op_by_op, (n_adaptive, n_op_by_op)
    return expected, got


def test_switch_default_and_environment():
    assert not adaptive.enabled()  # op by op unless NEURONSIM_ADAPTIVE_EAGER=1
    adaptive.set_enabled(True)
    assert adaptive.enabled()


def test_elementwise_chain_is_one_program():
    x = torch.randn(32, 48)

    def chain():
        y = x.to(DEV)
        for _ in range(6):
            y = torch.tanh(y * 1.5 + 0.25) - y.exp() * 0.01
        return y.cpu()

    ref = x.clone()
    for _ in range(6):
        ref = torch.tanh(ref * 1.5 + 0.25) - ref.exp() * 0.01
    expected, got = both(chain)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    _, n = programs(chain, True)
    assert n == 1  # 36 ops, one program


def test_matmul_softmax():
    a, b = torch.randn(16, 32), torch.randn(32, 24)

    def run():
        p = torch.softmax(a.to(DEV) @ b.to(DEV) / 4.0, dim=-1)
        return (p.t() @ p).cpu()

    expected, got = both(run)
    p = torch.softmax(a @ b / 4.0, dim=-1)
    torch.testing.assert_close(got, p.t() @ p, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_in_place_ops_views_and_aliasing():
    x = torch.randn(8, 6)

    def run(device):
        c = x.to(device).clone()
        flat = c.view(-1)  # an alias of c, made before the writes
        c.add_(1)
        c[:, :2].mul_(3)  # in place on a view
        c.t()[1].zero_()  # a column, through a transposed view
        d = c @ c.t()
        flat.add_(d.sum())  # through the alias
        out = torch.empty(8, 6, device=device)
        torch.mul(c, 2, out=out)
        return c.cpu(), flat.cpu(), out.cpu(), d.cpu()

    ref = run("cpu")
    expected, got = both(lambda: run(DEV))
    for g, e, r in zip(got, expected, ref):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-6)


def test_item_mid_chain_and_print_of_a_pending_tensor():
    x = torch.randn(5, 7)

    def run(device):
        y = (x.to(device) * 2).relu()
        s = y.sum().item()  # a host read: the pending ops run here
        z = y - s / 35
        text = io.StringIO()
        print(z, file=text)  # printing a pending tensor
        return s, z.cpu(), text.getvalue()

    s_ref, z_ref, _ = run("cpu")
    with mode(True):
        s, z, text = run(DEV)
    (s_op, z_op, text_op) = run(DEV)
    assert s == pytest.approx(s_ref, rel=1e-6)
    torch.testing.assert_close(z, z_ref, rtol=1e-5, atol=1e-6)
    assert text == text_op and "device='neuron:0'" in text


def test_shape_error_raised_at_the_op():
    a, b = torch.randn(4, 5).to(DEV), torch.randn(4, 5).to(DEV)

    def run():
        y = a * 2 + 1  # recorded
        with pytest.raises(RuntimeError) as info:
            y @ b  # [4, 5] @ [4, 5]: raised here, not at a later flush
        return y, info

    y_op, expected = run()
    with mode(True):
        y, got = run()
        assert got.type is expected.type
        assert str(got.value) == str(expected.value)
        torch.testing.assert_close(y.cpu(), y_op.cpu())  # the batch is still good


def test_random_ops_run_on_their_own():
    x = torch.randn(64)
    with mode(True):
        y = x.to(DEV) * 2
        before = adaptive.STATS.not_recorded
        noise = torch.rand(64, device=DEV)  # the batch runs first; the draw as op by op
        assert adaptive.STATS.not_recorded == before + 1
        z = y + noise
        dropped = torch.nn.functional.dropout(y, 0.5)
        noise_cpu, y_cpu = noise.cpu(), y.cpu()
        assert ((noise_cpu >= 0) & (noise_cpu < 1)).all()
        torch.testing.assert_close(z.cpu(), y_cpu + noise_cpu)
        kept = dropped.cpu() != 0
        torch.testing.assert_close(dropped.cpu()[kept], y_cpu[kept] * 2)


def test_training_steps_match_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 5)
    )
    data = [(torch.randn(8, 12), torch.randint(0, 5, (8,))) for _ in range(3)]

    def train(device):
        import copy

        m = copy.deepcopy(model).to(device)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, foreach=False)
        losses, runs = [], []
        for x, t in data:
            before = eager.STATS.program_runs
            loss = torch.nn.functional.cross_entropy(m(x.to(device)), t.to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            runs.append(eager.STATS.program_runs - before)
        return losses, runs, [p.detach().cpu() for p in m.parameters()]

    ref, _, ref_params = train("cpu")
    op_losses, op_runs, _ = train(DEV)
    with mode(True):
        losses, runs, params = train(DEV)
    assert losses == pytest.approx(ref, rel=1e-5, abs=1e-5)
    assert losses == pytest.approx(op_losses, rel=1e-6, abs=1e-6)
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, rtol=1e-4, atol=1e-4)
    assert runs[-1] * 3 <= op_runs[-1], (runs, op_runs)


def test_batch_that_cannot_compile_runs_op_by_op(monkeypatch):
    """A batch the compiler cannot take runs its ops one by one, with the same results
    (lifted scalars too: AdamW's x / bias_correction and addcdiv_(value=-step_size))."""
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    x = torch.randn(4, 6)

    def train(device):
        import copy

        m = copy.deepcopy(model).to(device)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, foreach=False)
        losses = []
        for _ in range(3):
            loss = (m(x.to(device)) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in m.parameters()]

    ref, ref_params = train("cpu")
    monkeypatch.setattr(adaptive, "_build", lambda batch: adaptive._OP_BY_OP)
    adaptive.clear()
    with mode(True):
        before = adaptive.STATS.op_by_op
        losses, params = train(DEV)
        assert adaptive.STATS.op_by_op > before
    assert losses == pytest.approx(ref, rel=1e-5, abs=1e-6)
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, rtol=1e-4, atol=1e-5)


def test_new_scalar_values_are_not_decided_again(monkeypatch):
    """AdamW's step sizes change every step: adaptive eager lifts them into inputs, so a new
    value neither traces the op again nor compiles a new batch program, and the results stay
    those of CPU eager (a new value each call)."""
    x = torch.randn(8, 16)
    t1, t2 = torch.randn(8, 16), torch.rand(8, 16) + 0.5
    decided = []
    real = eager._decide
    monkeypatch.setattr(eager, "_decide", lambda op, *a: decided.append(op) or real(op, *a))

    def step(value):
        y = x.to(DEV)
        y.addcdiv_(t1.to(DEV), t2.to(DEV), value=value)
        return (y / (1.0 - value)).cpu()

    with mode(True):
        step(0.125)  # decides and compiles once
        decided.clear()
        compiles = adaptive.STATS.batch_compiles
        for value in (0.25, -0.375, 0.0625):
            expected = torch.addcdiv(x, t1, t2, value=value) / (1.0 - value)
            torch.testing.assert_close(step(value), expected, rtol=1e-6, atol=1e-6)
        assert [op for op in decided if "addcdiv" in str(op) or "div" in str(op)] == []
        assert adaptive.STATS.batch_compiles == compiles
