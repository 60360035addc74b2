"""Where ranks sit on the simulated machine, and what a collective among them costs.

One rank is one logical NeuronCore. Ranks fill a chip (the target's logical cores per chip),
then the chips of an instance, then the next instance: with n ranks per instance (the target's
cores x chips, or fewer: torchrun's LOCAL_WORLD_SIZE), global rank r sits on instance r // n,
on that instance's chip (r % n) // cores. Links: between logical cores of a chip
(through HBM), NeuronLink between chips of an instance (shared by the chip's ranks), EFA between
instances (shared by the instance's ranks). Every number comes from the target description
(runtime/program/Target.cpp, with sources or ESTIMATE marks in runtime/HARDWARE.md).

Algorithms: ring all-reduce / all-gather / reduce-scatter / all-to-all over the slowest level
the group spans; hierarchical (intra-instance reduce-scatter, inter-instance ring, intra-instance
all-gather) when it spans instances; a pipelined tree for broadcast; one hop for send/recv.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

# Collective kinds, by the bytes their cost is expressed in.
ALL_REDUCE = "all_reduce"  # bytes of the buffer
ALL_GATHER = "all_gather"  # bytes of the gathered output
REDUCE_SCATTER = "reduce_scatter"  # bytes of the full input
ALL_TO_ALL = "all_to_all"  # bytes each rank sends in total
BROADCAST = "broadcast"  # bytes of the buffer
SEND_RECV = "send_recv"  # bytes of the message
BARRIER = "barrier"  # no bytes
KINDS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST, SEND_RECV, BARRIER)


@dataclass(frozen=True)
class Link:
    bytes_per_ns: float
    latency_ns: float


@dataclass(frozen=True)
class Topology:
    target: str
    cores_per_chip: int
    chips_per_node: int
    on_chip: Link
    chip_link: Link  # per chip
    node_link: Link  # per instance
    ranks_on_node: int = 0  # ranks per instance in use; 0: all its logical cores

    @classmethod
    def of_target(cls, target: str, ranks_per_node: int | None = None) -> Topology:
        """The target's machine; `ranks_per_node` ranks per instance (default: all cores)."""
        from .. import native

        f = native.lib().target_facts(target)
        full = int(f["logical_cores_per_chip"]) * int(f["chips_per_node"])
        if ranks_per_node is not None and not 1 <= ranks_per_node <= full:
            raise ValueError(
                f"{target} has {full} logical cores per instance; cannot place "
                f"{ranks_per_node} ranks on one"
            )
        return cls(
            target=target,
            cores_per_chip=int(f["logical_cores_per_chip"]),
            chips_per_node=int(f["chips_per_node"]),
            on_chip=Link(f["on_chip_bytes_per_ns"], f["on_chip_latency_ns"]),
            chip_link=Link(f["chip_link_bytes_per_ns"], f["chip_link_latency_ns"]),
            node_link=Link(f["node_link_bytes_per_ns"], f["node_link_latency_ns"]),
            ranks_on_node=ranks_per_node or full,
        )

    @property
    def ranks_per_node(self) -> int:
        return self.ranks_on_node or self.cores_per_chip * self.chips_per_node

    def node_of(self, rank: int) -> int:
        return rank // self.ranks_per_node

    def chip_of(self, rank: int) -> int:
        """A global chip number: instance x chips per instance + chip on the instance."""
        local = rank % self.ranks_per_node
        return self.node_of(rank) * self.chips_per_node + local // self.cores_per_chip

    def flat_link(self, ranks: list[int]) -> Link:
        """The link a ring over `ranks` (all on one instance) is limited by, per rank."""
        chips = Counter(self.chip_of(r) for r in ranks)
        if len(chips) == 1:
            return self.on_chip
        sharing = max(chips.values())  # ranks of one chip share its NeuronLink bandwidth
        return Link(self.chip_link.bytes_per_ns / sharing, self.chip_link.latency_ns)


def _ring(link: Link, steps: int, nbytes_per_step_total: float) -> float:
    return nbytes_per_step_total / link.bytes_per_ns + steps * link.latency_ns


def collective_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """Simulated time of one collective of `kind` over the global `ranks`."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective kind {kind!r}; known: {', '.join(KINDS)}")
    p = len(ranks)
    if p <= 1:
        return 0.0
    nodes = Counter(topology.node_of(r) for r in ranks)
    if kind == SEND_RECV:
        link = topology.node_link if len(nodes) > 1 else topology.flat_link(ranks)
        return nbytes / link.bytes_per_ns + link.latency_ns
    if kind == BARRIER:
        link = topology.node_link if len(nodes) > 1 else topology.flat_link(ranks)
        return 2 * math.ceil(math.log2(p)) * link.latency_ns
    if len(nodes) == 1:
        return _flat(topology.flat_link(ranks), kind, nbytes, p)
    # Spans instances: within each instance first, then one ring across instances, whose EFA
    # bandwidth the instance's ranks share (each carries 1/k of the data).
    k = max(nodes.values())
    n = len(nodes)
    local = [r for r in ranks if topology.node_of(r) == topology.node_of(ranks[0])]
    inner = topology.flat_link(local) if len(local) > 1 else topology.on_chip
    outer = topology.node_link
    if kind == ALL_REDUCE:
        within = 2 * _flat(inner, REDUCE_SCATTER, nbytes, k) if k > 1 else 0.0
        across = 2 * (n - 1) / n * nbytes / outer.bytes_per_ns + 2 * (n - 1) * outer.latency_ns
        return within + across
    if kind in (ALL_GATHER, REDUCE_SCATTER):
        within = _flat(inner, kind, nbytes // n, k) if k > 1 else 0.0
        across = (n - 1) / n * nbytes / outer.bytes_per_ns + (n - 1) * outer.latency_ns
        return within + across
    if kind == ALL_TO_ALL:  # most of each rank's data leaves the instance
        return (p - k) / p * nbytes * k / outer.bytes_per_ns + (n - 1) * outer.latency_ns
    # BROADCAST
    return nbytes / min(outer.bytes_per_ns, inner.bytes_per_ns) + math.ceil(
        math.log2(p)
    ) * max(outer.latency_ns, inner.latency_ns)


def _flat(link: Link, kind: str, nbytes: int, p: int) -> float:
    if p <= 1:
        return 0.0
    if kind == ALL_REDUCE:
        return _ring(link, 2 * (p - 1), 2 * (p - 1) / p * nbytes)
    if kind in (ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL):
        return _ring(link, p - 1, (p - 1) / p * nbytes)
    # BROADCAST: pipelined tree
    return nbytes / link.bytes_per_ns + math.ceil(math.log2(p)) * link.latency_ns


def ring_bound_ns(link: Link, kind: str, nbytes: int, p: int) -> float:
    """The bandwidth bound of a ring collective (no latency): what bench/ compares against."""
    factor = {ALL_REDUCE: 2 * (p - 1) / p, ALL_GATHER: (p - 1) / p, REDUCE_SCATTER: (p - 1) / p}
    return factor[kind] * nbytes / link.bytes_per_ns
