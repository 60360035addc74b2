"""Random ops on the simulated device: a counter-based generator on the GpSimd engine
(ntorch.random), keyed by a seed that every run draws from torch's default generator. The
numbers are not the CPU's, so these tests check distributions, masks and seeds, not elements.
"""

import math

import pytest
import torch

import neuronsim


def _compile(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def _within(value: float, expected: float, std_error: float, sigmas: float = 5.0) -> bool:
    return abs(value - expected) <= sigmas * std_error


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_drops_p_and_scales_the_rest(p):
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 512)
    model = torch.nn.Sequential(linear, torch.nn.Dropout(p))
    x = torch.randn(64, 64, requires_grad=True)
    y = _compile(model)(x)
    assert neuronsim.get_fallback_ops() == {}
    dense = linear(x).detach()
    kept = y != 0
    n = kept.numel()
    assert _within(1 - kept.float().mean().item(), p, math.sqrt(p * (1 - p) / n))
    torch.testing.assert_close(y[kept], dense[kept] / (1 - p), rtol=1e-5, atol=1e-5)
    # Backward uses the same mask: d(sum y)/dx = (mask / (1 - p)) @ W.
    y.sum().backward()
    expected = (kept.float() / (1 - p)) @ linear.weight.detach()
    torch.testing.assert_close(x.grad, expected, rtol=1e-4, atol=1e-4)


def test_dropout_masks_differ_per_call_and_follow_manual_seed():
    model = _compile(torch.nn.Dropout(0.5))
    x = torch.ones(4096)
    torch.manual_seed(123)
    first, second = model(x), model(x)
    assert not torch.equal(first, second)
    torch.manual_seed(123)
    assert torch.equal(model(x), first)
    assert torch.equal(model(x), second)


def test_dropout_is_the_identity_in_eval_mode():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).eval()
    x = torch.randn(4, 8)
    torch.testing.assert_close(_compile(model)(x), model(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rand_and_rand_like_are_uniform(dtype):
    n = 1 << 16

    def fn(x):
        return torch.rand(n, dtype=dtype), torch.rand_like(x)

    a, b = _compile(fn)(torch.zeros(300, 7, dtype=dtype))
    for u in (a.float(), b.float()):
        assert u.min().item() >= 0 and u.max().item() < 1
        count = u.numel()
        assert _within(u.mean().item(), 0.5, math.sqrt(1 / 12 / count))
        assert abs(u.var().item() - 1 / 12) < 0.01
    # Two ops of one graph draw from different streams.
    assert not torch.equal(a[:2100].reshape(300, 7), b)


def test_uniform_bernoulli_and_randn():
    n = 1 << 16

    def fn(x):
        return (
            torch.empty_like(x).uniform_(-2.0, 3.0),
            torch.bernoulli(torch.full_like(x, 0.3)),
            torch.full_like(x, 0.5).bernoulli_(0.8),
            torch.randn(n),
        )

    u, b1, b2, z = _compile(fn)(torch.zeros(n))
    assert neuronsim.get_fallback_ops() == {}
    assert u.min().item() >= -2 and u.max().item() < 3
    assert _within(u.mean().item(), 0.5, math.sqrt(25 / 12 / n))
    for b, p in ((b1, 0.3), (b2, 0.8)):
        assert set(b.unique().tolist()) <= {0.0, 1.0}
        assert _within(b.mean().item(), p, math.sqrt(p * (1 - p) / n))
    assert _within(z.mean().item(), 0.0, math.sqrt(1 / n))
    assert abs(z.std().item() - 1) < 0.02
    # Normal tails: about 4.55% beyond 2 sigma.
    assert _within((z.abs() > 2).float().mean().item(), 0.0455, math.sqrt(0.0455 / n))


def _train(model, x, y, steps: int, compile_: bool) -> list[float]:
    run = _compile(model) if compile_ else model
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(run(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_training_with_dropout_learns_as_eager_does():
    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Dropout(0.1),
            torch.nn.Linear(64, 1),
        )  # fmt: skip

    x = torch.randn(256, 16, generator=torch.Generator().manual_seed(1))
    y = x.sum(1, keepdim=True).sin()
    compiled = _train(model(), x, y, 40, compile_=True)
    assert neuronsim.get_fallback_ops() == {}
    eager = _train(model(), x, y, 40, compile_=False)
    # Different masks, the same distribution: both learn, to about the same loss.
    assert sum(compiled[-5:]) < 0.5 * sum(compiled[:5])
    assert sum(compiled[-5:]) == pytest.approx(sum(eager[-5:]), rel=0.3)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_huggingface_gpt2_trains_with_its_dropout_on(attention):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=32,
        attn_implementation=attention, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    assert config.resid_pdrop == config.attn_pdrop == config.embd_pdrop == 0.1
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).train()
    ids = torch.randint(0, 128, (2, 16))
    loss = _compile(model)(ids, labels=ids).loss
    loss.backward()
    assert neuronsim.get_fallback_ops() == {}
    eager = model(ids, labels=ids).loss  # other masks: close, not equal
    assert abs(loss.item() - eager.item()) < 0.1
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_sdpa_with_dropout_trains():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 32, 16, requires_grad=True) for _ in range(3))

    def attention(q, k, v, p):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, dropout_p=p, is_causal=True
        )

    out = _compile(lambda q, k, v: attention(q, k, v, 0.2))(q, k, v)
    out.sum().backward()
    assert neuronsim.get_fallback_ops() == {}
    plain = attention(q, k, v, 0.0)
    # Dropped probabilities change the output; on average it is unchanged (inverted
    # dropout), so the means agree to within the noise.
    assert not torch.allclose(out, plain)
    assert abs(out.mean().item() - plain.mean().item()) < 0.05
    assert all(torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0 for t in (q, k, v))


def test_dropout_on_two_physical_cores_draws_different_numbers_per_core():
    # trn2-lnc2 splits the generator's loop between the cores: each half its own stream.
    model = torch.compile(
        torch.nn.Dropout(0.5), backend="neuron", dynamic=False, options={"target": "trn2-lnc2"}
    )
    x = torch.ones(1024, 2048)
    y = model(x)
    assert _within((y == 0).float().mean().item(), 0.5, math.sqrt(0.25 / x.numel()))
    first, second = y[:512], y[512:]
    assert not torch.equal(first, second)
    # No repeated block of rows either: the halves are independent.
    agree = (first == second).float().mean().item()
    assert _within(agree, 0.5, math.sqrt(0.25 / first.numel()))


def test_fork_rng_inside_a_compiled_function():
    # fork_rng saves and restores the accelerator's (neuron's) RNG state too; inside a traced
    # function those calls must run for real, not on fake tensors.
    def f(x):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            noise = torch.rand(x.shape)
        return x * 2 + noise

    x = torch.ones(64)
    got = _compile(f)(x)
    assert ((got >= 2) & (got < 3)).all()
