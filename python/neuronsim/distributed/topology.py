"""Where ranks sit on the simulated machine, and what a collective among them costs.

One rank is one logical NeuronCore. Ranks fill a chip (the target's logical cores per chip),
then the chips of an instance, then the next instance: with n ranks per instance (the target's
cores x chips, or fewer: torchrun's LOCAL_WORLD_SIZE), global rank r sits on instance r // n,
on that instance's chip (r % n) // cores. Links: between logical cores of a chip
(through HBM), NeuronLink between chips of an instance (shared by the chip's ranks), EFA between
instances (shared by the instance's ranks). Every number comes from the target description
(runtime/program/Target.cpp, with sources or ESTIMATE marks in runtime/HARDWARE.md).

Algorithms (collective_ns): hierarchical reduce-scatter / all-gather (all-reduce is both) by
recursive halving within each level, from the chip out to the instances, pipelined over chunks
so that the busiest level sets the pace; all-to-all limited by its busiest level; a pipelined
tree for broadcast; one hop for send/recv.
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

    def levels(self, ranks: list[int]) -> list[tuple[int, float, Link]]:
        """The group's hierarchy, innermost first: (members per unit at this level, the
        unit's bandwidth seen by one member's share of the data, link) for the logical cores
        of a chip, the chips of an instance and the instances. A level with one member is
        left out."""
        per_chip = Counter(self.chip_of(r) for r in ranks)
        per_node = Counter(self.node_of(r) for r in ranks)
        k = max(per_chip.values())  # ranks per chip
        c = max(len({self.chip_of(r) for r in ranks if self.node_of(r) == n}) for n in per_node)
        nodes = len(per_node)
        out = []
        if k > 1:
            out.append((k, self.on_chip.bytes_per_ns, self.on_chip))
        if c > 1:
            out.append((c, self.chip_link.bytes_per_ns, self.chip_link))
        if nodes > 1:
            out.append((nodes, self.node_link.bytes_per_ns, self.node_link))
        return out


def _transfer_ns(members: int, nbytes: float, bytes_per_ns: float) -> float:
    """Bandwidth time of one reduce-scatter or all-gather phase at one level: (m - 1) / m of
    the data crosses the level's link."""
    return (members - 1) / members * nbytes / bytes_per_ns


def _steps_ns(members: int, link: Link) -> float:
    """Latency of that phase by recursive halving / doubling: ceil(log2 m) steps."""
    return math.ceil(math.log2(members)) * link.latency_ns


def level_bound_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """The bandwidth bound of the collective on the group's busiest level: a ring over that
    level's link (2 (m-1)/m B / bw for all-reduce, half for the others), no latency."""
    factor = 2.0 if kind == ALL_REDUCE else 1.0
    levels = topology.levels(ranks)
    return max((factor * _transfer_ns(m, nbytes, bw) for m, bw, _ in levels), default=0.0)


def collective_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """Simulated time of one collective of `kind` over the global `ranks`.

    Hierarchical: a reduce-scatter goes from the innermost level (the logical cores of a chip)
    out to the instances, an all-gather back in; at each level the members' shares of the data
    cross that level's link together (so a chip's NeuronLink carries the full buffer once
    across its ranks), in recursive-halving steps of that link's latency; chunks pipeline
    through the levels."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective kind {kind!r}; known: {', '.join(KINDS)}")
    p = len(ranks)
    if p <= 1:
        return 0.0
    levels = topology.levels(ranks)
    outer = levels[-1][2]
    if kind == SEND_RECV:
        return nbytes / outer.bytes_per_ns + outer.latency_ns
    if kind == BARRIER:
        return 2 * math.ceil(math.log2(p)) * outer.latency_ns
    if kind == BROADCAST:  # pipelined tree: the data crosses the slowest link once
        slowest = min(bw for _, bw, _ in levels)
        return nbytes / slowest + math.ceil(math.log2(p)) * outer.latency_ns
    if kind == ALL_TO_ALL:  # each level carries the data leaving it; the busiest link decides
        inside = 1
        times = []
        for members, bw, _ in levels:
            inside *= members
            times.append((p - inside / members) / p * nbytes * (inside / members) / bw)
        return max(times) + (p - 1) * levels[0][2].latency_ns
    # The levels work on chunks in a pipeline: the busiest level's transfers set the pace,
    # every level's steps add their latency.
    one_way = max(_transfer_ns(m, nbytes, bw) for m, bw, _ in levels) + sum(
        _steps_ns(m, link) for m, _, link in levels
    )
    return 2 * one_way if kind == ALL_REDUCE else one_way
