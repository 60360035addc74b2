// NeuronCore descriptions of trn1/trn2/trn3: every number the cost model uses.
//
// Sources are cited next to each number; "HARDWARE.md" refers to
// runtime/HARDWARE.md, which records each fact with its public source (AWS's
// NKI architecture guides trainium_inferentia2_arch, trainium2_arch and
// trainium3_arch, the DMA guides and the nki.isa cost notes). Numbers marked
// ESTIMATE have no direct source; they are chosen here, once, and explained.
#include "runtime/program/Target.h"

namespace neuron::runtime {

namespace {

constexpr long kKiB = 1024;
constexpr long kGiB = kKiB * kKiB * kKiB;

// Fields shared by all three generations.
Target commonCore() {
  Target t;
  t.partitions = 128; // HARDWARE.md: SBUF is 128 partitions
  // HARDWARE.md: PSUM 2 MiB = 128 x 16 KiB (all gens)
  t.psumBytesPerPartition = 16 * kKiB;
  t.psumBanks = 8;            // HARDWARE.md: 8 banks x 2 KiB per partition
  t.psumBankBytes = 2 * kKiB; // HARDWARE.md: 2 KiB = 512 fp32
  t.matmulMaxM = 128;         // HARDWARE.md: nc_matmul M <= 128
  t.matmulMaxN = 512;         // HARDWARE.md: nc_matmul N <= 512 (one PSUM bank)
  t.minII = 64;               // HARDWARE.md: "MIN_II is about 64 cycles"
  // HARDWARE.md: ~60 cycles start-up per SBUF/PSUM access
  t.accessOverheadCycles = 60;
  // HARDWARE.md: ~100 cycles for back-to-back dependent ops
  t.staticOverheadCycles = 100;
  t.matmulFp32Factor = 4;     // HARDWARE.md: matmul cost x4 for fp32 inputs
  t.matmulLatencyCycles = 64; // HARDWARE.md: "initial latency about 64 cycles"
  t.matmulStationaryCycles = 64; // HARDWARE.md: matmul II max(min(64, M), N)
  t.iotaFixedCycles = 150;       // HARDWARE.md: iota on GpSimd 150 + N
  t.dmaQueues = 16;              // HARDWARE.md: 16 DMA engines per core
  // HARDWARE.md (DMA fixed cost): about 1.3 us from the semaphore to the transfer's start
  // across engines (nki-dma-bandwidth-guide). Paid when a DMA's start waits on another queue
  // (or on the start of the run); a DMA queued behind its queue's earlier transfers starts
  // when they end. The measured 32 KiB transfer in 1,416 ns is a queued one.
  t.dmaStartLatencyNs = 1300;
  // DMA runs (descriptors) against their bytes (HARDWARE.md, DMA efficiency):
  // - FITTED on the DMA overview's efficiency curve at 1 KiB (42%): a run of 1 KiB or more
  //   takes at least as long as 1024 / 0.42 = 2438 bytes at full rate (84% at 2 KiB, 100%
  //   from 2438 B, against the published 81% / 97% / 98% / 100% at 2 / 4 / 8 / 16 KiB);
  // - below 1 KiB the curve (one 128-partition transfer issued alone) is latency-bound: its
  //   times stay near the ~1.2 us that the documented per-transfer initiation cost
  //   (dmaStartLatencyNs) already charges, so it says nothing of a stream of short runs. The
  //   published matmul tutorial (K1, trn1) does: the tiled version's 30,720 extra
  //   [128, 128] bf16 loads (256-byte rows) over the hoisted one cost 8.84 ms, 288 ns each
  //   over 16 engines, i.e. 256-byte runs at 42% of full rate, not the curve's 10%. So a run
  //   shorter than 1 KiB moves at the 1 KiB run's 42% (per byte), checked on K1 (no number
  //   fitted on it);
  // - ESTIMATE: no run is faster than a 256-byte one (the bandwidth guide: "< 256 B per
  //   partition: severely overhead-bound"), so an element-strided transfer still pays a
  //   packet's time per element.
  t.dmaDescriptorMinBytes = 1024.0 / 0.42;
  t.dmaShortRunBytes = 1024;
  t.dmaPacketMinBytes = 256;
  // HARDWARE.md: dma_transpose reaches at most 90% of DMA throughput HBM -> SBUF and 50%
  // SBUF -> SBUF (trainium2_arch; trn3: ESTIMATE, as trn2).
  t.dmaTransposeFromHbm = 0.9;
  t.dmaTransposeOnChip = 0.5;
  // ESTIMATE: fixed cost of one host <-> device copy of the `neuron` device
  // (a DMA descriptor ring round trip over PCIe); no public figure.
  t.hostLinkLatencyNs = 2000;
  // Per-step link latencies of a collective (HARDWARE.md, Collectives): about 1-2 us per
  // NeuronLink hop of an intra-node ring (intranode-collective-comm), about 15 us per EFA hop
  // (internode-collective-comm; ib_write_lat between two servers' HBM, collectives page);
  // ESTIMATE: 1.5 us between the logical cores of one chip. The CC-cores' synchronisation of
  // each step comes on top (collectiveReduceStepNs / collectiveGatherStepNs, FITTED per target).
  t.onChipLatencyNs = 1500;
  t.chipLinkLatencyNs = 2000;
  t.nodeLinkLatencyNs = 15000;
  // Collective algorithm by message size (HARDWARE.md, Collectives; documented for trn2,
  // intranode-collective-comm, for a whole instance: mesh below "1MB", recursive
  // halving-doubling up to 56 MB, KangaRing above). ESTIMATE: mesh up to 1 MiB inclusive
  // (nccom-test's 64-rank all-gather, C7, rises smoothly to 1 MiB with no switch), and a
  // smaller group switching at the same bytes per rank (nccom-test's 16-rank all-reduce, C4,
  // names mesh at 128 KiB, halving-doubling at 2 MiB and KangaRing at 32 MiB, below 56 MB).
  // trn1 overrides this below.
  t.collectiveMeshMaxBytes = 1 << 20;
  t.collectiveRingMinBytes = 56 * 1000 * 1000;
  return t;
}

Target makeTrn1() {
  Target t = commonCore();
  t.name = "trn1";
  t.coreName = "NC-v2"; // HARDWARE.md: trainium_inferentia2_arch
  t.generation = Generation::Trn1;
  t.sbufBytesPerPartition = 192 * kKiB; // HARDWARE.md: 24 MiB = 128 x 192 KiB
  t.tensorGhz = 2.8;                    // HARDWARE.md: Tensor engine 2.8 GHz
  t.vectorGhz = 1.12;                   // HARDWARE.md: Vector engine 1.12 GHz
  t.scalarGhz = 1.4;                    // HARDWARE.md: Scalar engine 1.4 GHz
  t.gpsimdGhz = 1.4;                    // HARDWARE.md: GpSimd 1.4 GHz
  // HARDWARE.md: 92 TF bf16 (128*128*2*2.8 GHz = 91.8)
  t.tensorPeakBf16Tflops = 92;
  t.tensorPeakFp32Tflops = 23; // HARDWARE.md: 23 TF fp32
  // HARDWARE.md: DMA bandwidth guide, 17 B/ns (trn1)
  t.dmaBytesPerNsPerQueue = 17;
  t.hbmBytesPerNs = 820.0 / 2; // HARDWARE.md: 820 GB/s per chip / 2 cores
  t.hbmBytesPerCore = 32 * kGiB / 2; // HARDWARE.md: 32 GiB per chip / 2 cores
  // ESTIMATE: host link of one chip, PCIe Gen4 x16 (32 GB/s raw) at ~80%.
  t.hostLinkBytesPerNs = 25;
  t.logicalCoresPerChip = 2; // HARDWARE.md: 2 NeuronCore-v2 per chip, one rank each
  t.chipsPerNode = 16;       // HARDWARE.md: trn1.32xlarge, 16 chips (4-D hypercube)
  // ESTIMATE: between the two cores of a chip through HBM: half its bandwidth.
  t.onChipBytesPerNs = 820.0 / 2;
  // ESTIMATE: NeuronLink-v2, no per-chip figure published; 4 links x 96 GB/s.
  t.chipLinkBytesPerNs = 384;
  t.nodeLinkBytesPerNs = 800.0 / 8; // HARDWARE.md: trn1.32xlarge EFA 800 Gbps
  // FITTED (HARDWARE.md, Collectives) on nccom-test's trn1 fp32 all-reduces (SDK 2.10 era),
  // three points for three numbers (topology.py's model, arithmetic below):
  // - ring bandwidth: 2 ranks on one chip (C1), 1 KiB in 58 us and 1 GiB in 18,930 us: one
  //   ring step per phase, so the 1,047,552 more bytes per rank took 18,872 us: 56.9 B/ns;
  // - launch and step: C1's 1 KiB is the launch + 2 x (a step + the 1.5 us on-chip hop); the
  //   64-rank all-reduce of 1 MiB over two trn1.32xlarge (C3), 1,328 us, runs hierarchically:
  //   a 32-rank ring reduce-scatter in each instance (31 steps, 54.5 us of hops, 31/32 MiB per
  //   rank), an all-reduce of 32 KiB per rank between the two (2 x one step and a 15 us EFA
  //   hop, the instance's 32 ranks sharing its 100 B/ns of EFA), a ring all-gather back:
  //   64 steps, so 62 steps = 1,328 us - 55 us - the hops - the bytes.
  // No algorithm choice is documented for trn1: ring at every size (ESTIMATE); across
  // instances the flat ring where it beats the hierarchy ("Flat Ring on Trn1 for large message
  // sizes", internode-collective-comm). No trn1 all-gather point separates a gather step
  // from a reduce step: one value for both (ESTIMATE).
  t.collectiveRingBytesPerNs = (1073741824.0 - 1024) / (18930000 - 58000);
  t.collectiveRhdBytesPerNs = t.collectiveRingBytesPerNs;
  {
    const double bw = t.collectiveRingBytesPerNs;
    const double hops = 2 * (15 * 1500.0 + 16 * 2000.0) + 2 * 15000.0;
    const double bytes = 2 * (31.0 / 32 * 1048576 / bw) + 2 * (32 * 0.5 * 32768 / 100.0);
    t.collectiveReduceStepNs =
        (1328000.0 - (58000.0 - 2 * 1500 - 1024 / bw) - hops - bytes) / 62;
    t.collectiveGatherStepNs = t.collectiveReduceStepNs;
    t.collectiveLaunchNs = 58000.0 - 2 * (t.collectiveReduceStepNs + 1500) - 1024 / bw;
  }
  t.collectiveMeshMaxBytes = 0;
  t.collectiveRingMinBytes = 0;
  t.collectiveFlatRing = true;
  // HARDWARE.md: NC-v2 Vector/GpSimd SBUF, Vector/Scalar PSUM
  t.sharedSbufPsumPorts = true;
  return t;
}

Target makeTrn2() {
  Target t = commonCore();
  t.name = "trn2";
  t.coreName = "NC-v3";                 // HARDWARE.md: trainium2_arch
  t.generation = Generation::Trn2;
  t.sbufBytesPerPartition = 224 * kKiB; // HARDWARE.md: 28 MiB = 128 x 224 KiB
  t.tensorGhz = 2.4;                    // HARDWARE.md: Tensor engine 2.4 GHz
  t.vectorGhz = 0.96;                   // HARDWARE.md: Vector engine 0.96 GHz
  t.scalarGhz = 1.2;                    // HARDWARE.md: Scalar engine 1.2 GHz
  t.gpsimdGhz = 1.2;                    // HARDWARE.md: GpSimd 1.2 GHz
  // HARDWARE.md: 79 TF bf16 per core (128*128*2*2.4 GHz = 78.6). AWS's chip
  // figure (667 TF) is not 8 x 79; we model one core with the per-core number.
  t.tensorPeakBf16Tflops = 79;
  t.tensorPeakFp32Tflops = 20; // HARDWARE.md: 20 TF fp32
  // HARDWARE.md: DMA bandwidth guide, 23 B/ns (trn2)
  t.dmaBytesPerNsPerQueue = 23;
  // HARDWARE.md: 2.9 TB/s per chip (also 3.0) / 8 cores
  t.hbmBytesPerNs = 2900.0 / 8;
  t.hbmBytesPerCore = 96 * kGiB / 8; // HARDWARE.md: 96 GiB per chip / 8 cores
  // ESTIMATE: host link of one chip, PCIe Gen5 x16 (64 GB/s raw) at ~80%.
  t.hostLinkBytesPerNs = 50;
  // HARDWARE.md: LNC=2 (the default) pairs the 8 physical cores: 4 ranks per chip.
  t.logicalCoresPerChip = 4;
  t.chipsPerNode = 16; // HARDWARE.md: trn2.48xlarge, 16 chips on a 4x4 torus
  // ESTIMATE: between logical cores of a chip through HBM: a quarter of the
  // chip's bandwidth for each pair.
  t.onChipBytesPerNs = 2900.0 / 4;
  // HARDWARE.md: NeuronLink-v3, 1,024 GB/s per chip inside a trn2.48xlarge (trn2-arch;
  // the chip page's 1.28 TB/s counts UltraServer-only links).
  t.chipLinkBytesPerNs = 1024;
  // FITTED (HARDWARE.md, Collectives) on four nccom-test points for four numbers
  // (topology.py's model, arithmetic below); the step costs reproduce the other floors:
  // - gather step and mesh / halving-doubling bandwidth: trn2.48xlarge 64-rank bf16
  //   all-gathers (C7, SDK 2.32), mesh (one step across the chips, 2 us, one inside, 1.5 us):
  //   1 KiB in 101.1 us, 1 MiB in 117.7 us, so 63/64 x 1,047,552 bytes in 16.6 us;
  // - reduce step: 16-rank fp32 all-reduce (C4, SDK 2.28) of 4 B in 300 us, mesh: two reduce
  //   and two gather steps and their hops;
  // - ring (KangaRing) bandwidth: the same of 512 MiB in 9,690 us, 15 reduce and 15 gather
  //   steps (24.5 us of hops a phase) and 2 x 15/16 x 512 MiB.
  // No launch cost beyond the steps shows in C4: its mesh floor (4 steps) and the intercept of
  // its two KangaRing points (30 steps) give the same ~75 us a step (ESTIMATE: 0).
  t.collectiveLaunchNs = 0;
  t.collectiveRhdBytesPerNs = 63.0 / 64 * (1048576 - 1024) / (117700 - 101100);
  t.collectiveGatherStepNs = (101100 - 3500 - 63.0 / 64 * 1024 / t.collectiveRhdBytesPerNs) / 2;
  t.collectiveReduceStepNs = (300000 - 2 * 3500 - 2 * t.collectiveGatherStepNs -
                              2 * 15.0 / 16 * 4 / t.collectiveRhdBytesPerNs) / 2;
  t.collectiveRingBytesPerNs =
      2 * 15.0 / 16 * 536870912 /
      (9690000 - 15 * (t.collectiveReduceStepNs + t.collectiveGatherStepNs) - 2 * 24500);
  // HARDWARE.md: EFAv3 of a trn2.48xlarge, 3,200 Gbps (trn2-arch; 200 Gbps per chip, the
  // collectives page).
  t.nodeLinkBytesPerNs = 3200.0 / 8;
  t.sharedSbufPsumPorts = false; // HARDWARE.md: port sharing lifted in NC-v3
  return t;
}

// trn2's default Logical NeuronCore config LNC=2: one logical core of two physical
// NC-v3 cores (HARDWARE.md: "LNC=2 pairs physical cores: 4 logical cores per chip,
// about 24 GiB HBM each"). Each physical core keeps its engines, SBUF, PSUM and 16 DMA
// queues; the HBM capacity and bandwidth shares are two physical cores' shares.
Target makeTrn2Lnc2() {
  Target t = makeTrn2();
  t.name = "trn2-lnc2";
  t.physicalCores = 2;
  // ESTIMATE (HARDWARE.md): two physical cores' share of the chip's 2.9 TB/s.
  t.hbmBytesPerNs = 2900.0 / 4;
  t.hbmBytesPerCore = 96 * kGiB / 4; // HARDWARE.md: 96 GiB per chip / 4 logical cores
  return t;
}

Target makeTrn3() {
  Target t = commonCore();
  t.name = "trn3";
  t.coreName = "NC-v4"; // HARDWARE.md: trainium3_arch
  t.generation = Generation::Trn3;
  // HARDWARE.md gives 32 MiB of SBUF; ESTIMATE: 128 partitions x 256 KiB, as in
  // the earlier generations' layout.
  t.sbufBytesPerPartition = 256 * kKiB;
  t.tensorGhz = 2.4;           // HARDWARE.md: Tensor engine 2.4 GHz
  t.vectorGhz = 1.2;           // HARDWARE.md: Vector engine 1.2 GHz
  t.scalarGhz = 1.2;           // HARDWARE.md: Scalar engine 1.2 GHz
  t.gpsimdGhz = 1.2;           // HARDWARE.md: GpSimd 1.2 GHz
  t.tensorPeakBf16Tflops = 79; // HARDWARE.md: 79 TF bf16
  // ESTIMATE: no fp32 figure for NC-v4; bf16 peak / matmulFp32Factor.
  t.tensorPeakFp32Tflops = 79.0 / 4;
  // HARDWARE.md: DMA bandwidth guide, 33 B/ns (trn3)
  t.dmaBytesPerNsPerQueue = 33;
  // HARDWARE.md: 4.9 TB/s per chip (also 4.7) / 8 cores
  t.hbmBytesPerNs = 4900.0 / 8;
  t.hbmBytesPerCore = 144 * kGiB / 8; // HARDWARE.md: 144 GiB per chip / 8 cores
  // ESTIMATE: as trn2 (PCIe Gen5 x16 at ~80%).
  t.hostLinkBytesPerNs = 50;
  t.logicalCoresPerChip = 4; // ESTIMATE: LNC=2 as on trn2 (8 cores per chip)
  t.chipsPerNode = 16;       // ESTIMATE: as trn2.48xlarge
  t.onChipBytesPerNs = 4900.0 / 4; // ESTIMATE: as trn2, from HBM bandwidth
  // HARDWARE.md: NeuronLink-v4, 2.56 TB/s per chip
  t.chipLinkBytesPerNs = 2560;
  t.nodeLinkBytesPerNs = 3200.0 / 8; // ESTIMATE: as trn2
  // ESTIMATE: trn3's collective engines as trn2's (no published trn3 collective point).
  {
    const Target trn2 = makeTrn2();
    t.collectiveLaunchNs = trn2.collectiveLaunchNs;
    t.collectiveReduceStepNs = trn2.collectiveReduceStepNs;
    t.collectiveGatherStepNs = trn2.collectiveGatherStepNs;
    t.collectiveRingBytesPerNs = trn2.collectiveRingBytesPerNs;
    t.collectiveRhdBytesPerNs = trn2.collectiveRhdBytesPerNs;
  }
  t.sharedSbufPsumPorts = false; // HARDWARE.md: lifted since NC-v3
  return t;
}

// trn3's default LNC=2 (HARDWARE.md: "trn2 and trn3 both default to LNC=2"): one logical
// core of two physical NC-v4 cores, as trn2-lnc2.
Target makeTrn3Lnc2() {
  Target t = makeTrn3();
  t.name = "trn3-lnc2";
  t.physicalCores = 2;
  // ESTIMATE (HARDWARE.md): two physical cores' share of the chip's 4.9 TB/s.
  t.hbmBytesPerNs = 4900.0 / 4;
  t.hbmBytesPerCore = 144 * kGiB / 4; // HARDWARE.md: 144 GiB per chip / 4 logical cores
  return t;
}

const std::vector<Target> &allTargets() {
  static const std::vector<Target> targets = {
      makeTrn1(), makeTrn2(), makeTrn2Lnc2(), makeTrn3(), makeTrn3Lnc2()};
  return targets;
}

} // namespace

const char *partitionStartProblem(int64_t start, int64_t span) {
  if (span > 64 && start != 0)
    return "tiles of more than 64 partitions must start at partition 0";
  if (span > 32 && span <= 64 && start != 0 && start != 64)
    return "tiles of 33-64 partitions must start at partition 0 or 64";
  if (span <= 32 && start % 32 != 0)
    return "tiles of at most 32 partitions must start at partition 0, 32, 64 or 96";
  return nullptr;
}

const Target *findTarget(const std::string &name) {
  for (const Target &t : allTargets())
    if (t.name == name)
      return &t;
  return nullptr;
}

std::vector<std::string> targetNames() {
  std::vector<std::string> names;
  for (const Target &t : allTargets())
    names.push_back(t.name);
  return names;
}

const Target &defaultTarget() { return *findTarget("trn2"); }

} // namespace neuron::runtime
