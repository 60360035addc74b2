"""Training on the simulated NeuronCore: forward, backward and optimizer graphs vs eager."""

import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import neuronsim


class Block(nn.Module):
    def __init__(self, d: int, heads: int, seq: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        a = F.softmax(a.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """2-layer GPT-style decoder with a tied LM head."""

    def __init__(self, vocab=512, d=128, heads=4, seq=64, layers=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8)
        self.c3 = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x, y):
        x = self.pool(F.relu(self.b1(self.c1(x))))
        x = F.relu(x + self.b2(self.c2(x)) + self.c3(x))
        return F.cross_entropy(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)), y)


def train(model, opt, batches, backend):
    """Loss per step; the optimizer step is compiled too when a backend is given."""
    loss_fn = torch.compile(model, backend=backend, dynamic=False) if backend else model

    def step():
        opt.step()

    step_fn = torch.compile(step, backend=backend) if backend else step
    losses = []
    for inputs in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(*inputs)
        loss.backward()
        step_fn()
        losses.append(loss.item())
    return losses


def gpt_batches(steps, batch=2, seq=64, vocab=512):
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, vocab, (batch, seq + 1), generator=g) for _ in range(steps)]
    return [(d[:, :-1], d[:, 1:]) for d in data]


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    neuronsim.reset()
    yield
    torch._dynamo.reset()


def test_gradients_match_eager_after_one_step():
    """Every parameter's gradient after one backward matches eager (fp32, rtol 1e-4)."""
    torch.manual_seed(0)
    model = GPT(layers=1)
    ref = copy.deepcopy(model)
    (idx, tgt), = gpt_batches(1)
    torch.compile(model, backend="neuron", dynamic=False)(idx, tgt).backward()
    ref(idx, tgt).backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        scale = q.grad.abs().max().item() + 1e-12
        err = (p.grad - q.grad).abs().max().item() / scale
        assert err < 1e-4, f"{name}: relative gradient error {err:.2e}"


def test_gpt_adamw_follows_eager_loss_curve():
    """50 AdamW steps of a 2-layer GPT (d_model 128, 4 heads, seq 64, vocab 512): each loss
    within 1e-3 relative of eager's."""
    torch.manual_seed(0)
    model = GPT()
    ref = copy.deepcopy(model)
    batches = gpt_batches(50)
    ours = train(model, torch.optim.AdamW(model.parameters(), lr=1e-3), batches, "neuron")
    eager = train(ref, torch.optim.AdamW(ref.parameters(), lr=1e-3), batches, None)
    for step, (a, b) in enumerate(zip(ours, eager)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: loss {a} vs eager {b}"
    assert ours[-1] < ours[0]


def test_resnet_sgd_follows_eager_loss_curve():
    """20 SGD-with-momentum steps of the ResNet-style CNN: losses within 1e-3 relative."""
    torch.manual_seed(0)
    model = ResNet()
    ref = copy.deepcopy(model)
    g = torch.Generator().manual_seed(2)
    batches = [(torch.randn(4, 3, 16, 16, generator=g), torch.randint(0, 10, (4,), generator=g))
               for _ in range(20)]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ours = train(model, opt, batches, "neuron")
    eager = train(ref, torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9), batches, None)
    for step, (a, b) in enumerate(zip(ours, eager)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: loss {a} vs eager {b}"


def test_measure_sums_a_training_step():
    """neuronsim.measure() gives the simulated time of forward + backward + optimizer."""
    torch.manual_seed(0)
    model = GPT(layers=1, seq=16, vocab=64, d=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    step = torch.compile(lambda: opt.step(), backend="neuron")
    (idx, tgt), = gpt_batches(1, seq=16, vocab=64)
    compiled(idx, tgt).backward()  # compile outside the measurement
    step()
    with neuronsim.measure() as m:
        compiled(idx, tgt).backward()
        step()
    assert len(m.runs) >= 3  # forward, backward, optimizer
    assert m.sim_ns == pytest.approx(sum(r["sim_ns"] for r in m.runs))
    assert m.sim_ns > max(r["sim_ns"] for r in m.runs) > 0


def test_autocast_bf16_region_trains():
    """A torch.autocast("cpu", bfloat16) region compiles; outputs and gradients match eager
    under the same autocast within bf16 tolerance (3e-2 of the largest magnitude)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 10))
    ref = copy.deepcopy(model)
    x = torch.randn(8, 64)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = compiled(x)
        expected = ref(x)
    assert y.dtype == torch.bfloat16
    assert (y.float() - expected.float()).abs().max() <= 3e-2 * expected.float().abs().max()
    y.float().pow(2).mean().backward()
    expected.float().pow(2).mean().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert (p.grad - q.grad).abs().max() <= 3e-2 * q.grad.abs().max()
