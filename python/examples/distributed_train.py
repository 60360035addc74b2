"""Data-parallel training of a small GPT-style model across simulated NeuronCores.

One process per rank, launched as on a Trainium instance:

    torchrun --nproc-per-node 2 python/examples/distributed_train.py
    # two "instances" on one machine (run both; c10d rendezvous on loopback):
    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d \\
        --rdzv-endpoint 127.0.0.1:29400 --rdzv-id demo python/examples/distributed_train.py

Each rank reports its simulated step time split into compute, communication and waiting for
slower ranks; rank 0 prints the table and writes a timeline PNG of the last step.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import torch.distributed as dist

import neuronsim


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab: int = 256, d: int = 64, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(tokens)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4, help="sequences per rank")
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--timeline", default="distributed_timeline.png")
    parser.add_argument("--out", default=None, help="directory for each rank's results (JSON)")
    args = parser.parse_args()

    dist.init_process_group("neuron")  # torchrun's environment: rank, world size, store
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = TinyGPT().to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    run = torch.compile(ddp, backend="neuron", dynamic=False) if args.compile else ddp
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)

    losses = []
    for _ in range(args.steps):
        tokens = torch.randint(0, 256, (args.batch, args.seq + 1), generator=generator)
        tokens = tokens.to(device)
        with neuronsim.measure() as step:
            logits = run(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.item())
    per_rank = step.per_rank()  # the last step, from every rank

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            json.dump({"rank": rank, "world": world, "losses": losses, "per_rank": per_rank}, f)
    if rank == 0:
        print(f"{world} ranks, last step (simulated, us):")
        print("rank  step     compute  comm     waiting  exposed comm")
        for r, s in enumerate(per_rank):
            print(f"{r:<5} {s['device_ns'] / 1e3:<8.1f} {s['compute_ns'] / 1e3:<8.1f} "
                  f"{s['comm_ns'] / 1e3:<8.1f} {s['comm_wait_ns'] / 1e3:<8.1f} "
                  f"{s['exposed_comm_ns'] / 1e3:.1f}")  # fmt: skip
        path = neuronsim.distributed.plot_rank_timeline(
            per_rank, args.timeline, title=f"TinyGPT DDP step on {world} simulated NeuronCores"
        )
        print(f"losses {[round(v, 4) for v in losses]}; timeline: {path}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
