"""Where ranks sit on the simulated machine, and what a collective among them costs.

One rank is one logical NeuronCore. Ranks fill a chip (the target's logical cores per chip),
then the chips of an instance, then the next instance: with n ranks per instance (the target's
cores x chips, or fewer: torchrun's LOCAL_WORLD_SIZE), global rank r sits on instance r // n,
on that instance's chip (r % n) // cores. Links: between logical cores of a chip
(through HBM), NeuronLink between chips of an instance (shared by the chip's ranks), EFA between
instances (shared by the instance's ranks). Every number comes from the target description
(runtime/program/Target.cpp, with sources, ESTIMATE or FITTED marks in runtime/HARDWARE.md).

How the Neuron runtime runs a collective (runtime/HARDWARE.md, Collectives, after AWS's
intra-node and inter-node collective pages) and what this model charges for it:
- a collective costs one launch, then its algorithm's steps: the CC-cores synchronise every
  step (a reduce-scatter step also reduces what it received, so its steps cost more than an
  all-gather's), each step also pays the latency of the link it crosses, and the data:
  (m - 1) / m of the buffer through each rank's collective engines at the bus bandwidth that
  algorithm reaches, or through the group's busiest link if that is slower;
- inside an instance the algorithm follows the message size (documented for trn2, for a whole
  instance: mesh up to 1 MiB, recursive halving-doubling to 56 MB, KangaRing above; a smaller
  group switches at the same bytes per rank): mesh takes one step across chips and one
  inside a chip per phase, halving-doubling one inside the chip and log2(chips) across,
  a ring p - 1; an all-reduce is a reduce-scatter phase then an all-gather phase;
- a group spanning instances runs hierarchically (documented): all-reduce = reduce-scatter
  inside each instance, all-reduce of 1/Y of the buffer between instances (Y ranks per
  instance, the Y groups sharing the instance's EFA), all-gather inside the instance;
  all-gather = between instances then inside; reduce-scatter = inside then between. Where the
  target says so (trn1, documented), a flat ring over all ranks is used instead when faster.
All-to-all is limited by its busiest level; broadcast is a pipelined tree; a barrier costs an
all-reduce of one element; send/recv is one DMA to the peer.
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
    """What the target's collective engines (CC-cores and their DMA rings) reach
    (runtime/program/Target.cpp)."""

    launch_ns: float  # once per collective
    reduce_step_ns: float  # synchronisation of one reduce-scatter step (receive, reduce, send)
    gather_step_ns: float  # synchronisation of one all-gather step (receive, send)
    ring_bytes_per_ns: float  # per-rank bus bandwidth, ring / KangaRing
    rhd_bytes_per_ns: float  # per-rank bus bandwidth, mesh and halving-doubling
    mesh_max_bytes: int  # a whole instance's messages up to this: mesh
    ring_min_bytes: int  # from here: ring; between: halving-doubling
    flat_ring: bool = False  # a flat ring across instances where it beats the hierarchy

    def step_ns(self, reduce: bool) -> float:
        return self.reduce_step_ns if reduce else self.gather_step_ns


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

        return cls.from_facts(target, native.lib().target_facts(target), ranks_per_node)

    @classmethod
    def from_facts(cls, target: str, f: dict, ranks_per_node: int | None = None) -> Topology:
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
                launch_ns=f["collective_launch_ns"],
                reduce_step_ns=f["collective_reduce_step_ns"],
                gather_step_ns=f["collective_gather_step_ns"],
                ring_bytes_per_ns=f["collective_ring_bytes_per_ns"],
                rhd_bytes_per_ns=f["collective_rhd_bytes_per_ns"],
                mesh_max_bytes=int(f["collective_mesh_max_bytes"]),
                ring_min_bytes=int(f["collective_ring_min_bytes"]),
                flat_ring=bool(f["collective_flat_ring"]),
            ),
            ranks_on_node=ranks_per_node or full,
        )

    @property
    def ranks_per_node(self) -> int:
        return self.ranks_on_node or self.cores_per_chip * self.chips_per_node

    @property
    def full_node(self) -> int:
        return self.cores_per_chip * self.chips_per_node

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


def algorithm(topology: Topology, nbytes: int, ranks: int | None = None) -> str:
    """The algorithm the runtime uses inside an instance for a message of `nbytes` among
    `ranks` ranks (default: a whole instance), by the target's documented size ranges for a
    whole instance, at the same bytes per rank for a smaller group."""
    engine = topology.engine
    share = (ranks or topology.full_node) / topology.full_node
    if nbytes <= engine.mesh_max_bytes * share:
        return MESH
    if nbytes < engine.ring_min_bytes * share:
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


def _engine_ns(topology: Topology, alg: str, nbytes: float, p: int) -> float:
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


def steps(topology: Topology, alg: str, ranks: list[int]) -> list[float]:
    """The link latency of each step of one phase of `alg` over `ranks` (inside one
    instance, or a flat ring)."""
    levels = topology.levels(ranks)
    if not levels:
        return []
    if alg == RING:  # a chunk crosses every hop but one
        _, latencies = _ring_hops(topology, ranks)
        return sorted(latencies)[1:]
    on_chip = [link for m, _, link in levels if link is topology.on_chip]
    across = [(m, link) for m, _, link in levels if link is not topology.on_chip]
    inside = [on_chip[0].latency_ns] if on_chip else []
    if alg == MESH:  # one step to every other chip (routed), one inside the chip
        return [link.latency_ns for _, link in across[:1]] + inside
    # halving-doubling: the chip's stage, then log2 of the chips, one axis a step
    return inside + [link.latency_ns for m, link in across for _ in range(math.ceil(math.log2(m)))]


def phase_ns(topology: Topology, alg: str, nbytes: float, ranks: list[int],
             reduce: bool = True) -> float:  # fmt: skip
    """One reduce-scatter (`reduce`) or all-gather phase of `nbytes` (the full buffer) over
    `ranks` with algorithm `alg`, without the launch: its steps (synchronisation + link
    latency each) and its bytes (the slower of the engines and the links)."""
    p = len(ranks)
    if p <= 1:
        return 0.0
    lat = steps(topology, alg, ranks)
    sync = topology.engine.step_ns(reduce)
    engine_ns = _engine_ns(topology, alg, nbytes, p)
    if alg == RING:
        per_byte, _ = _ring_hops(topology, ranks)
        links_ns = (p - 1) * nbytes / p * per_byte  # p - 1 steps of a chunk B / p each
    else:
        links_ns = max(_transfer_ns(m, nbytes, bw) for m, bw, _ in topology.levels(ranks))
    return len(lat) * sync + sum(lat) + max(engine_ns, links_ns)


def _inter_node_ns(topology: Topology, nbytes: float, nodes: int, per_node: int,
                   reduce: bool) -> float:  # fmt: skip
    """One phase between `nodes` instances of `nbytes` per rank's group, `per_node` such
    groups at once sharing each instance's EFA: halving-doubling steps (one for two
    instances), each a synchronisation and an EFA hop; the bytes at the engines' rate or the
    instance's EFA share, whichever is slower."""
    if nodes <= 1:
        return 0.0
    efa = topology.node_link
    n_steps = math.ceil(math.log2(nodes))
    engine_ns = _engine_ns(topology, HALVING_DOUBLING, nbytes, nodes)
    efa_ns = per_node * _transfer_ns(nodes, nbytes, efa.bytes_per_ns)
    return n_steps * (topology.engine.step_ns(reduce) + efa.latency_ns) + max(engine_ns, efa_ns)


def _by_node(topology: Topology, ranks: list[int]) -> list[list[int]]:
    groups: dict[int, list[int]] = {}
    for r in ranks:
        groups.setdefault(topology.node_of(r), []).append(r)
    return list(groups.values())


def _phases(kind: str) -> list[bool]:
    """The phases of a collective, each True for a reduce-scatter, False for an all-gather."""
    return {ALL_REDUCE: [True, False], REDUCE_SCATTER: [True], ALL_GATHER: [False]}[kind]


def _hierarchical_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """A collective over several instances, hierarchically (runtime/HARDWARE.md): the stages
    inside the instances (the biggest instance's group) and between them."""
    nodes = _by_node(topology, ranks)
    local = max(nodes, key=len)
    y, x = len(local), len(nodes)
    alg = algorithm(topology, nbytes, y)
    total = 0.0
    for reduce in _phases(kind):
        total += phase_ns(topology, alg, nbytes, local, reduce)
        total += _inter_node_ns(topology, nbytes / y, x, y, reduce)
    return total


def ring_ns(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> float:
    """The collective by a flat ring over all the ranks (whatever the message size)."""
    phases = _phases(kind) if kind in (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER) else [True, False]
    return topology.engine.launch_ns + sum(
        phase_ns(topology, RING, nbytes, ranks, reduce) for reduce in phases
    )


def describe(topology: Topology, kind: str, nbytes: int, ranks: list[int]) -> str:
    """How collective_ns runs this collective: its algorithm inside the instance, and
    "hierarchical" or "flat ring" across instances."""
    nodes = _by_node(topology, ranks)
    alg = algorithm(topology, nbytes, max(len(n) for n in nodes))
    if len(nodes) == 1 or kind not in (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER):
        return alg
    if topology.engine.flat_ring and ring_ns(topology, kind, nbytes, ranks) < (
        topology.engine.launch_ns + _hierarchical_ns(topology, kind, nbytes, ranks)
    ):
        return "flat ring"
    return f"hierarchical, {alg} + EFA"


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
    engine = topology.engine
    launch = engine.launch_ns
    if kind == SEND_RECV:  # one DMA to the peer: no collective launch
        return nbytes / outer.bytes_per_ns + outer.latency_ns
    if kind == BARRIER:  # an all-reduce of one element
        return collective_ns(topology, ALL_REDUCE, 4, ranks)
    tree = math.ceil(math.log2(p)) * (engine.gather_step_ns + outer.latency_ns)
    if kind == BROADCAST:  # pipelined tree: the data crosses the slowest link once
        slowest = min(min(bw for _, bw, _ in levels), engine.ring_bytes_per_ns)
        return launch + nbytes / slowest + tree
    if kind == ALL_TO_ALL:  # each level carries the data leaving it; the busiest link decides
        inside = 1
        times = [_engine_ns(topology, MESH, nbytes, p)]
        for members, bw, _ in levels:
            inside *= members
            times.append((p - inside / members) / p * nbytes * (inside / members) / bw)
        return launch + engine.gather_step_ns + outer.latency_ns + max(times)
    if len(_by_node(topology, ranks)) > 1:
        cost = launch + _hierarchical_ns(topology, kind, nbytes, ranks)
        if engine.flat_ring:
            cost = min(cost, ring_ns(topology, kind, nbytes, ranks))
        return cost
    alg = algorithm(topology, nbytes, p)
    return launch + sum(phase_ns(topology, alg, nbytes, ranks, r) for r in _phases(kind))
