"""Where ranks sit on the simulated machine, and what a collective among them costs.

One rank is one logical NeuronCore. Ranks fill a chip (the target's logical cores per chip),
then the chips of an instance, then the next instance: with n ranks per instance (the target's
cores x chips, or fewer: torchrun's LOCAL_WORLD_SIZE), global rank r sits on instance r // n,
on that instance's chip (r % n) // cores. Links: between logical cores of a chip
(through HBM), NeuronLink between chips of an instance (shared by the chip's ranks), EFA between
instances (shared by the instance's ranks). Every number comes from the target description
(runtime/program/Target.cpp, with sources or ESTIMATE marks in runtime/HARDWARE.md).

Algorithms (collective_ns): like a collective library, the fastest of several for the message
size and the group's placement. All-reduce, reduce-scatter and all-gather (all-reduce is one
then the other): hierarchical (recursive halving / doubling within each level, from the chip
out to the instances, pipelined over chunks so that the busiest level sets the pace), a flat
ring over the group in rank order (ring_ns), and for all-reduce recursive doubling, which
exchanges the whole buffer in log2 steps (short messages); all-to-all limited by its busiest
level; a pipelined tree for broadcast; one hop for send/recv.
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
    """The bandwidth lower bound of the collective on the group's busiest level: a ring over
    that level's link (2 (m-1)/m B / bw for all-reduce, half for the others), no latency."""
    factor = 2.0 if kind == ALL_REDUCE else 1.0
    levels = topology.levels(ranks)
    return max((factor * _transfer_ns(m, nbytes, bw) for m, bw, _ in levels), default=0.0)


def ring_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """A flat ring over the group's ranks in the order given (the textbook ring algorithm).

    Every step each rank sends B / p to the next one. A hop between two logical cores of a
    chip uses the sender's on-chip bandwidth, a hop to another chip of the instance that chip's
    NeuronLink, a hop to another instance that instance's EFA (hops leaving the same chip or
    instance share its link). Reduce-scatter and all-gather take p - 1 steps, all-reduce
    2 (p - 1): for each phase, bandwidth (p - 1) B / p over the busiest link of a step, and
    latency along the ring (a chunk crosses every hop but one: the sum of the hops'
    latencies but the smallest). With one kind of link that is the textbook
    2 (p-1)/p B / bw + 2 (p - 1) latency for all-reduce."""
    p = len(ranks)
    if p <= 1:
        return 0.0
    chunk = nbytes / p
    load: Counter = Counter()  # (link, its owner) -> bytes per step
    latencies = []
    for i, src in enumerate(ranks):
        dst = ranks[(i + 1) % p]
        if topology.chip_of(src) == topology.chip_of(dst):
            link, owner = topology.on_chip, ("core", src)
        elif topology.node_of(src) == topology.node_of(dst):
            link, owner = topology.chip_link, ("chip", topology.chip_of(src))
        else:
            link, owner = topology.node_link, ("node", topology.node_of(src))
        load[(link, owner)] += chunk
        latencies.append(link.latency_ns)
    step = max(nbytes_ / link.bytes_per_ns for (link, _), nbytes_ in load.items())
    phase = (p - 1) * step + sum(latencies) - min(latencies)
    return 2 * phase if kind == ALL_REDUCE else phase


def hierarchical_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """Hierarchical reduce-scatter / all-gather (all-reduce: one, then the other): a
    reduce-scatter goes from the innermost level (the logical cores of a chip) out to the
    instances, an all-gather back in; at each level the members' shares of the data cross that
    level's link together (so a chip's NeuronLink carries the full buffer once across its
    ranks), in recursive-halving steps of that link's latency; chunks pipeline through the
    levels, so the busiest level's transfers set the pace and every level's steps add their
    latency."""
    levels = topology.levels(ranks)
    if not levels:
        return 0.0
    one_way = max(_transfer_ns(m, nbytes, bw) for m, bw, _ in levels) + sum(
        _steps_ns(m, link) for m, _, link in levels
    )
    return 2 * one_way if kind == ALL_REDUCE else one_way


def recursive_doubling_ns(topology: Topology, nbytes: int, ranks: list[int]) -> float:
    """All-reduce by recursive doubling: ceil(log2 m) steps at each level, from the chip
    out, each exchanging the whole buffer (every rank of a chip sends it over the chip's
    NeuronLink, every rank of an instance over its EFA). Half the steps of reduce-scatter +
    all-gather, but the whole buffer each time: the algorithm for short messages."""
    levels = topology.levels(ranks)
    inside = 1  # ranks of the group behind one link of this level
    total = 0.0
    for members, bw, link in levels:
        steps = math.ceil(math.log2(members))
        total += steps * (link.latency_ns + inside * nbytes / bw)
        inside *= members
    return total


def collective_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """Simulated time of one collective of `kind` over the global `ranks`: for all-reduce,
    reduce-scatter and all-gather the fastest of the hierarchical algorithm, a flat ring and
    (all-reduce) recursive doubling, as a collective library picks one by message size and
    placement."""
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
    candidates = [
        hierarchical_ns(topology, kind, nbytes, ranks),
        ring_ns(topology, kind, nbytes, ranks),
    ]
    if kind == ALL_REDUCE:
        candidates.append(recursive_doubling_ns(topology, nbytes, ranks))
    return min(candidates)
