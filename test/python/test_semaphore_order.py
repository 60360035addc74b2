"""Every pair of instruction instances that touch the same bytes (one of them writing) on
different queues is ordered by semaphore waits, directly or through other waits.

The simulator runs instances in program order, so a missing wait would not change any
number, only make timings optimistic: this test expands compiled loop programs and checks
the ordering with vector clocks, byte by byte.
"""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

NUM_QUEUES = 20
ELEMENT_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i8": 1, "u8": 1, "i1": 1}


def _affine(base, terms, iv):
    return base + sum(coef * (iv[level] % mod if mod > 0 else iv[level]) for level, coef, mod in terms)


def _instances(program):
    """(instruction index, induction variables) in execution order, loops expanded."""
    loops = program.get("loops", [])
    depths = [
        sum(1 for k, o in enumerate(loops) if k < j and o[0] <= loop[0] and loop[1] <= o[1])
        for j, loop in enumerate(loops)
    ]
    out = []

    def expand(begin, end, iv):
        i = begin
        while i < end:
            inner = [loop for j, loop in enumerate(loops) if loop[0] == i and depths[j] == len(iv)]
            if inner:
                first, last, count = inner[0]
                for k in range(count):
                    expand(first, last, iv + (k,))
                i = last
            else:
                out.append((i, iv))
                i += 1

    expand(0, len(program["instructions"]), ())
    return out


def _bytes(ap, iv):
    """Every byte an access pattern touches, as integer keys (memory, buffer or partition, byte)."""
    size = ELEMENT_BYTES[ap["dtype"]]
    start = _affine(ap["offset"], ap.get("terms", []), iv)
    hbm = ap["space"] == "hbm"
    offsets = np.zeros(1, dtype=np.int64)
    for stride, count in ap["dims"] if hbm else ap["dims"][1:]:
        offsets = (offsets[:, None] + stride * np.arange(count, dtype=np.int64)[None, :]).ravel()
    if hbm:
        byte = ((start + offsets)[:, None] * size + np.arange(size)[None, :]).ravel()
        where = np.full(1, ap["buffer"], dtype=np.int64)
    else:
        byte = (start + offsets[:, None] * size + np.arange(size)[None, :]).ravel()
        pstride, pcount = ap["dims"][0]
        where = ap["partition"] + pstride * np.arange(pcount, dtype=np.int64)
    memory = {"hbm": 1, "sbuf": 2, "psum": 3}[ap["space"]]
    keys = (memory << 60) | (where[:, None] << 40) | byte[None, :]
    return set(keys.ravel().tolist())


def unordered_conflicts(program):
    insts = program["instructions"]
    clocks, issued, count = [], {}, [0] * NUM_QUEUES
    last_on_queue = [None] * NUM_QUEUES
    last_write, reads_since = {}, {}
    problems = []
    for n, (i, iv) in enumerate(_instances(program)):
        inst, q = insts[i], insts[i]["queue"]
        clock = list(clocks[last_on_queue[q]]) if last_on_queue[q] is not None else [0] * NUM_QUEUES
        for wait in inst.get("waits", []):
            value = _affine(wait[1], wait[2] if len(wait) > 2 else [], iv)
            if value > 0:
                clock = [max(a, b) for a, b in zip(clock, clocks[issued[(wait[0], value)]])]
        count[q] += 1
        clock[q] = count[q]
        clocks.append(clock)
        issued[(q, count[q])] = n
        last_on_queue[q] = n

        def after(m):
            mq, mcount = m
            if mq != q and clock[mq] < mcount:
                problems.append((n, inst["op"], q, iv, mq, mcount))

        # An activation that accumulates writes its row sums into its last source.
        row_sums = inst["op"] == "activation" and inst.get("accumulate")
        srcs = inst.get("srcs", [])  # a memset reads nothing
        srcs = srcs[:-1] if row_sums else srcs
        read = set().union(*(_bytes(s, iv) for s in srcs))
        if inst["op"] == "nc_matmul" and inst.get("accumulate"):
            read |= _bytes(inst["dst"], iv)
        written = _bytes(inst["dst"], iv)
        if row_sums:
            written |= _bytes(inst["srcs"][-1], iv)
        me = (q, count[q])
        for key in read:
            if key in last_write:
                after(last_write[key])
        for key in written:
            if key in last_write:
                after(last_write[key])
            for r in reads_since.get(key, ()):
                after(r)
        for key in read:
            reads_since.setdefault(key, set()).add(me)
        for key in written:
            last_write[key] = me
            reads_since[key] = set()
    return problems


def _programs(tmp_path, fn, *inputs, backward=False):
    compiled = torch.compile(fn, backend="neuron", dynamic=False, options={"dump_dir": str(tmp_path)})
    out = compiled(*inputs)
    if backward:
        out.sum().backward()
    return [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*/program.json"))]


bf16 = torch.bfloat16


@pytest.mark.parametrize(
    "case",
    ["batched_matmul", "mlp_training", "layernorm", "causal_attention", "conv_pool"],
)
def test_conflicting_instances_are_ordered(tmp_path, case):
    if case == "batched_matmul":  # resident panels, peeled K steps, rotating buffers
        programs = _programs(
            tmp_path, torch.bmm, torch.randn(2, 300, 200, dtype=bf16), torch.randn(2, 200, 96, dtype=bf16)
        )
    elif case == "mlp_training":  # epilogues, forward and backward graphs
        model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.GELU(), torch.nn.Linear(48, 16))
        programs = _programs(tmp_path, model, torch.randn(300, 32), backward=True)
    elif case == "layernorm":  # fusions with row reductions, hoisted weights
        model = torch.nn.LayerNorm(96).to(bf16)
        with torch.no_grad():
            # 5 blocks of 128 rows: a loop of two interleaved blocks per iteration, and one more
            programs = _programs(tmp_path, model, torch.randn(5, 128, 96, dtype=bf16))
    elif case == "causal_attention":
        q = torch.randn(1, 2, 160, 8)
        programs = _programs(
            tmp_path, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, q, q
        )
    else:  # padded copies, conv accumulation nests, pooling
        model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.MaxPool2d(2))
        with torch.no_grad():
            programs = _programs(tmp_path, model, torch.randn(2, 4, 24, 24))
    assert programs and any(p.get("loops") for p in programs)
    for program in programs:
        assert unordered_conflicts(program) == []


def test_the_check_finds_a_dropped_wait(tmp_path):
    (program,) = _programs(tmp_path, lambda x: torch.relu(x) * 2, torch.randn(300, 40))
    waited = [inst for inst in program["instructions"] if inst.get("waits")]
    assert waited
    waited[0]["waits"] = []
    assert unordered_conflicts(program)
