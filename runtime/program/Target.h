// Target descriptions: the one place that holds NeuronCore numbers (see HARDWARE.md).
#pragma once

#include "runtime/program/Isa.h"

#include <cstdint>
#include <string>
#include <vector>

namespace neuron::runtime {

struct Target {
  std::string name;               // "trn1", "trn2", "trn2-lnc2", "trn3", "trn3-lnc2"
  std::string coreName;           // "NC-v2", ...
  Generation generation = Generation::Trn2; // which rows of Isa.def exist
  /// Physical NeuronCores of the simulated logical core (LNC): each has its own engines,
  /// SBUF, PSUM and DMA queues; HBM is shared. Numbers below are per physical core,
  /// except the HBM ones, which are the logical core's share.
  int physicalCores = 1;
  int partitions = 128;
  long sbufBytesPerPartition = 0;
  long psumBytesPerPartition = 0;
  int psumBanks = 8;
  long psumBankBytes = 2048;      // per partition
  int matmulMaxM = 128;           // stationary free size
  int matmulMaxN = 512;           // moving free size (one PSUM bank of fp32)
  double tensorGhz = 0, vectorGhz = 0, scalarGhz = 0, gpsimdGhz = 0;
  double tensorPeakBf16Tflops = 0, tensorPeakFp32Tflops = 0;
  int minII = 64;                 // cycles
  int accessOverheadCycles = 60;  // per SBUF/PSUM access start-up
  int staticOverheadCycles = 100; // tiny / dependent instruction overhead
  int matmulFp32Factor = 4;
  int matmulLatencyCycles = 64;   // added: fill latency of one matmul (tensor cycles)
  int matmulStationaryCycles = 64; // added: the 64 of max(min(64, M), N)
  int iotaFixedCycles = 150;      // added: the 150 of iota's 150 + N
  int dmaQueues = 16;
  double dmaBytesPerNsPerQueue = 0;
  /// From the semaphore (or the start of the run) that lets a DMA go to its first byte
  /// moving; hidden when the DMA queues behind earlier transfers of its queue.
  double dmaStartLatencyNs = 0;
  /// A descriptor (contiguous run) of dmaShortRunBytes or more moves no faster than one of
  /// this many bytes (the DMA efficiency curve's knee: full rate from here).
  double dmaDescriptorMinBytes = 0;
  /// Shorter runs move at the efficiency of a run of this many bytes (per byte), each no
  /// faster than one of dmaPacketMinBytes (the packet rate of tiny descriptors).
  double dmaShortRunBytes = 0;
  double dmaPacketMinBytes = 0;
  double dmaTransposeFromHbm = 1; // dma_transpose throughput share, HBM -> SBUF
  double dmaTransposeOnChip = 1;  // dma_transpose throughput share, SBUF -> SBUF
  double hbmBytesPerNs = 0;       // per (logical) core
  long hbmBytesPerCore = 0;       // HBM capacity of one (logical) core (the chip's / cores)
  double hostLinkBytesPerNs = 0;  // host <-> device copies (the `neuron` device's .to())
  double hostLinkLatencyNs = 0;   // fixed cost of one host <-> device copy
  // Collectives between ranks (one rank = one logical core; see neuronsim/distributed).
  int logicalCoresPerChip = 1;    // ranks per chip in the default logical-core config
  int chipsPerNode = 1;           // chips of one instance
  double onChipBytesPerNs = 0;    // between logical cores of one chip (through HBM)
  double onChipLatencyNs = 0;     // per ring step on the chip
  double chipLinkBytesPerNs = 0;  // NeuronLink, per chip, between chips of an instance
  double chipLinkLatencyNs = 0;   // per ring step over NeuronLink
  double nodeLinkBytesPerNs = 0;  // EFA, per instance, between instances
  double nodeLinkLatencyNs = 0;   // per ring step over EFA
  // The collective engines (neuronsim/distributed/topology.py): a collective's launch, the
  // synchronisation of each step of its algorithm (a reduce-scatter step receives, reduces and
  // sends; an all-gather step receives and sends), the bus bandwidth one rank's collective
  // engines and DMA rings reach with each algorithm, and the message sizes (of a whole
  // instance's group; a smaller group switches at the same bytes per rank) at which the runtime
  // switches algorithm (0: never).
  double collectiveLaunchNs = 0;       // once per collective
  double collectiveReduceStepNs = 0;   // per reduce-scatter step
  double collectiveGatherStepNs = 0;   // per all-gather step
  double collectiveRingBytesPerNs = 0; // per-rank bus bandwidth, ring / KangaRing
  double collectiveRhdBytesPerNs = 0;  // per-rank bus bandwidth, mesh and halving-doubling
  long collectiveMeshMaxBytes = 0;     // up to: mesh
  long collectiveRingMinBytes = 0;     // from here: ring; between: recursive halving-doubling
  bool collectiveFlatRing = false;     // across instances: a flat ring where it beats the
                                       // hierarchical algorithm
  bool sharedSbufPsumPorts = false; // NC-v2: Vector/GpSimd share SBUF, Vector/Scalar share PSUM
};

/// The partition start rule of the compute engines (HARDWARE.md, Memory layout rules) that a
/// tile of `span` partitions from partition `start` breaks, or nullptr if it holds.
const char *partitionStartProblem(int64_t start, int64_t span);

/// The target named `name`, or nullptr if unknown.
const Target *findTarget(const std::string &name);
/// Names of all known targets.
std::vector<std::string> targetNames();
/// The default target ("trn2").
const Target &defaultTarget();

} // namespace neuron::runtime
