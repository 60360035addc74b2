"""Where ranks sit on the simulated machine, and what a collective among them costs.

One rank is one logical NeuronCore. Ranks fill a chip (the target's logical cores per chip),
then the chips of an instance, then the next instance: with n ranks per instance (the target's
cores x chips, or fewer: torchrun's LOCAL_WORLD_SIZE), global rank r sits on instance r // n,
on that instance's chip (r % n) // cores. Links: between logical cores of a chip
(through HBM), NeuronLink between chips of an instance (shared by the chip's ranks), EFA between
instances (shared by the instance's ranks). Every number comes from the target description
(runtime/program/Target.cpp, with sources or ESTIMATE marks in runtime/HARDWARE.md).

Algorithms (collective_ns), as the Neuron runtime picks them by message size (documented for
trn2: mesh below 1 MB, recursive halving-doubling up to 56 MB, KangaRing above; trn1: ring):
all-reduce is a reduce-scatter phase then an all-gather phase. A phase costs the target's
launch and synchronisation (FITTED on nccom-test points, runtime/HARDWARE.md), its steps'
latencies (mesh: one step; halving-doubling: ceil(log2 m) steps at each level; ring: one hop
after another around the ring), and its bytes: (p - 1) / p of the data through each rank's
collective engines at the bus bandwidth they reach with that algorithm, or through the group's
busiest link if that is slower. All-to-all is limited by its busiest level; broadcast is a
pipelined tree; send/recv one hop.
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
class CollectiveEngine:
    """What the target's collective engines reach (runtime/program/Target.cpp)."""

    phase_ns: float  # launch and synchronisation of one phase
    ring_bytes_per_ns: float  # per-rank bus bandwidth, ring / KangaRing
    rhd_bytes_per_ns: float  # per-rank bus bandwidth, mesh and halving-doubling
    mesh_max_bytes: int  # messages below this: mesh
    ring_min_bytes: int  # messages from this: ring; between: halving-doubling


@dataclass(frozen=True)
class Topology:
    target: str
    cores_per_chip: int
    chips_per_node: int
    on_chip: Link
    chip_link: Link  # per chip
    node_link: Link  # per instance
    engine: CollectiveEngine
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
            engine=CollectiveEngine(
                phase_ns=f["collective_phase_ns"],
                ring_bytes_per_ns=f["collective_ring_bytes_per_ns"],
                rhd_bytes_per_ns=f["collective_rhd_bytes_per_ns"],
                mesh_max_bytes=int(f["collective_mesh_max_bytes"]),
                ring_min_bytes=int(f["collective_ring_min_bytes"]),
            ),
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


MESH = "mesh"
HALVING_DOUBLING = "halving_doubling"
RING = "ring"


def algorithm(topology: Topology, nbytes: int) -> str:
    """The algorithm the runtime uses for a message of `nbytes` (mesh, halving-doubling or
    ring), by the target's documented size ranges."""
    engine = topology.engine
    if nbytes < engine.mesh_max_bytes:
        return MESH
    if nbytes < engine.ring_min_bytes:
        return HALVING_DOUBLING
    return RING


def _transfer_ns(members: int, nbytes: float, bytes_per_ns: float) -> float:
    """Bandwidth time of one reduce-scatter or all-gather phase at one level: (m - 1) / m of
    the data crosses the level's link."""
    return (members - 1) / members * nbytes / bytes_per_ns


def level_bound_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """The link bound of the collective on the group's busiest level: 2 (m-1)/m B / bw for
    all-reduce, half for the others, no latency and no engine limit."""
    factor = 2.0 if kind == ALL_REDUCE else 1.0
    levels = topology.levels(ranks)
    return max((factor * _transfer_ns(m, nbytes, bw) for m, bw, _ in levels), default=0.0)


def _engine_ns(topology: Topology, alg: str, nbytes: int, p: int) -> float:
    """One phase's bytes through one rank's collective engines: (p - 1) / p of the data at the
    bus bandwidth of the algorithm."""
    engine = topology.engine
    bw = engine.ring_bytes_per_ns if alg == RING else engine.rhd_bytes_per_ns
    return (p - 1) / p * nbytes / bw


def _ring_hops(topology: Topology, ranks: list[int]) -> tuple[float, list[float]]:
    """A ring over the ranks in the order given: the busiest link's bandwidth time per byte of
    a step's chunk (hops leaving the same chip or instance share its link), and each hop's
    latency. A hop between two logical cores of a chip uses the sender's on-chip bandwidth, a
    hop to another chip of the instance that chip's NeuronLink, one to another instance that
    instance's EFA."""
    p = len(ranks)
    load: Counter = Counter()  # (link, its owner) -> chunks per step
    latencies = []
    for i, src in enumerate(ranks):
        dst = ranks[(i + 1) % p]
        if topology.chip_of(src) == topology.chip_of(dst):
            link, owner = topology.on_chip, ("core", src)
        elif topology.node_of(src) == topology.node_of(dst):
            link, owner = topology.chip_link, ("chip", topology.chip_of(src))
        else:
            link, owner = topology.node_link, ("node", topology.node_of(src))
        load[(link, owner)] += 1
        latencies.append(link.latency_ns)
    per_byte = max(chunks / link.bytes_per_ns for (link, _), chunks in load.items())
    return per_byte, latencies


def phase_ns(topology: Topology, alg: str, nbytes: int, ranks: list[int]) -> float:
    """One reduce-scatter or all-gather phase of `nbytes` (the full buffer) over the global
    `ranks` with algorithm `alg`: launch + steps + bytes (the slower of the engines and the
    links)."""
    p = len(ranks)
    if p <= 1:
        return 0.0
    levels = topology.levels(ranks)
    engine_ns = _engine_ns(topology, alg, nbytes, p)
    if alg == RING:
        per_byte, latencies = _ring_hops(topology, ranks)
        # p - 1 steps of a chunk B / p each; a chunk crosses every hop but one
        links_ns = (p - 1) * nbytes / p * per_byte
        steps_ns = sum(latencies) - min(latencies)
    else:
        links_ns = max(_transfer_ns(m, nbytes, bw) for m, bw, _ in levels)
        if alg == MESH:  # every rank exchanges with every peer at once: one step
            steps_ns = levels[-1][2].latency_ns
        else:  # recursive halving (or doubling) at each level, from the chip out
            steps_ns = sum(math.ceil(math.log2(m)) * link.latency_ns for m, _, link in levels)
    return topology.engine.phase_ns + steps_ns + max(engine_ns, links_ns)


def ring_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """The collective by the ring algorithm (whatever the message size)."""
    phases = 2 if kind == ALL_REDUCE else 1
    return phases * phase_ns(topology, RING, nbytes, ranks)


def collective_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """Simulated time of one collective of `kind` over the global `ranks` (`nbytes` as
    nccom-test counts them: the buffer of an all-reduce or broadcast, the gathered output of an
    all-gather, the full input of a reduce-scatter, what each rank sends of an all-to-all)."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective kind {kind!r}; known: {', '.join(KINDS)}")
    p = len(ranks)
    if p <= 1:
        return 0.0
    levels = topology.levels(ranks)
    outer = levels[-1][2]
    launch = topology.engine.phase_ns
    if kind == SEND_RECV:  # one DMA to the peer: no collective launch
        return nbytes / outer.bytes_per_ns + outer.latency_ns
    if kind == BARRIER:
        return launch + 2 * math.ceil(math.log2(p)) * outer.latency_ns
    if kind == BROADCAST:  # pipelined tree: the data crosses the slowest link once
        slowest = min(min(bw for _, bw, _ in levels), topology.engine.ring_bytes_per_ns)
        return launch + nbytes / slowest + math.ceil(math.log2(p)) * outer.latency_ns
    if kind == ALL_TO_ALL:  # each level carries the data leaving it; the busiest link decides
        inside = 1
        times = [_engine_ns(topology, MESH, nbytes, p)]
        for members, bw, _ in levels:
            inside *= members
            times.append((p - inside / members) / p * nbytes * (inside / members) / bw)
        return launch + max(times) + outer.latency_ns
    phases = 2 if kind == ALL_REDUCE else 1
    return phases * phase_ns(topology, algorithm(topology, nbytes), nbytes, ranks)
