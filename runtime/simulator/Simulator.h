// The NeuronCore simulator: runs a Program functionally and times it.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/program/Target.h"

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace neuron::runtime {

/// An illegal program (capacity, partition rules, deadlock, bad operands).
struct SimulationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// When and where one instruction instance ran (RunOptions::timeline).
struct InstructionTiming {
  uint32_t instruction = 0;       // index into Program::instructions (static)
  uint16_t queue = 0;
  double startNs = 0;             // the queue starts the instruction
  double endNs = 0;               // the queue can start its next instruction
  double completeNs = 0;          // result visible, semaphore incremented
};

/// One instance of a Collective instruction, handed to RunOptions::collective.
struct CollectiveCall {
  size_t instruction = 0;
  CollectiveKind kind = CollectiveKind::AllReduce;
  AluOp reduce = AluOp::Add;
  const CollectiveGroup *group = nullptr;
  DType dtype = DType::F32;
  // This rank's HBM bytes: src is read, dst written. Null in timing-only runs.
  const void *src = nullptr;
  void *dst = nullptr;
  int64_t srcElements = 0, dstElements = 0;
  /// When the collective engine can start it: its queue is free and its
  /// semaphore waits hold (ns since the program started).
  double readyNs = 0;
};

/// Runs a collective across the ranks of its group (in functional runs, moving
/// the data: every rank's program calls it at the same instruction) and
/// returns when it completes on this rank, in ns since the program started
/// (>= readyNs: the ranks start together when the last one is ready).
using CollectiveHook = std::function<double(const CollectiveCall &)>;

/// The instructions of one origin (an ATen node), summed over the run.
struct OriginCost {
  double busyNs = 0; // queue time (end - start), over all queues
  /// Busy time per engine, indexed by Engine (DMA: summed over its queues).
  double engineNs[kNumEngines] = {};
  double hbmBytes = 0; // bytes its DMAs moved to/from HBM
  double flops = 0;    // its matmuls' FLOPs
};

struct RunOptions {
  /// Skip functional execution: outputs are not written (their contents are
  /// whatever the caller's memory held) and data-dependent errors, such as a
  /// DmaGather index out of range, are not detected. Timing does not depend
  /// on data, so stats are identical.
  bool timingOnly = false;
  /// Fill SBUF, PSUM and internal HBM buffers with 0xFF bytes (NaN in float
  /// dtypes) instead of zeros, to expose reads of memory never written.
  bool poisonMemory = false;
  /// Functional runs: check that the simulated schedule orders every pair of
  /// conflicting accesses on different queues as the program does, and that
  /// no instruction reads SBUF/PSUM bytes never written (Hazards.h); a
  /// violation throws SimulationError naming both instructions.
  bool checkHazards = true;
  /// If set, receives one entry per executed instruction instance, in
  /// program order with the loops expanded (Trace.h writes it as a Chrome
  /// trace / Perfetto timeline).
  std::vector<InstructionTiming> *timeline = nullptr;
  /// If set, receives what each origin's instructions cost (Program::origins;
  /// the last entry for instructions without one), without keeping a timeline.
  std::vector<OriginCost> *originCosts = nullptr;
  /// Runs Collective instructions (see CollectiveHook). Without it, a
  /// collective over a group of one rank copies src to dst in no time, and
  /// any other one is a SimulationError.
  CollectiveHook collective;
  /// Keys the numbers of Random instructions and starts the engines' generators (rng, rand2):
  /// the same seed, the same numbers.
  uint64_t seed = 0;
  /// If set, called from the run loop about every kPollIntervalMs of wall time; it
  /// may throw to stop the run (the Python bridge raises KeyboardInterrupt on Ctrl-C).
  std::function<void()> poll;
};

/// Wall time between two RunOptions::poll calls.
constexpr int kPollIntervalMs = 50;

struct RunStats {
  double simNs = 0;               // simulated device time
  uint64_t flops = 0;
  uint64_t hbmBytes = 0;          // bytes moved to/from HBM by DMA
  uint64_t instructions = 0;     // executed instruction instances
  std::map<std::string, double> engineBusyNs; // tensor, vector, scalar, gpsimd, dma
  // Added members. "dma" above is the time at least one DMA queue is active.
  std::vector<double> queueBusyNs;   // per queue (kNumQueues entries)
  uint64_t dmaTransfers = 0;         // DmaCopy and DmaGather instances
  uint64_t dmaBytes = 0;             // bytes they moved, any spaces
  uint64_t matmuls = 0;
  // Collective instructions: how many ran, their time from ready to complete
  // (waiting for the other ranks included), and the part of it during which
  // no other queue of this core was busy: communication that compute did not
  // hide (measured at BusyCoverage's resolution).
  uint64_t collectives = 0;
  double collectiveNs = 0;
  double exposedCollectiveNs = 0;
  // Report (issue 5). Peaks come from the Target (HARDWARE.md).
  /// Peak Tensor-engine FLOPs per ns used for `mfu` and `rooflineNs`: the fp32
  /// peak if the program has matmuls and every one of them has an fp32
  /// operand (the x4 rate), else the bf16 peak (fp16 runs at the bf16 rate).
  double peakFlopsPerNs = 0;
  /// Achieved / peak Tensor-engine FLOPs: flops / (simNs * peakFlopsPerNs).
  double mfu = 0;
  /// Bytes a perfect implementation moves to/from HBM: the sizes of all
  /// Input, Output and Constant buffers (each once).
  uint64_t minimalHbmBytes = 0;
  /// max(flops / peakFlopsPerNs, minimalHbmBytes / hbmBytesPerNs): the time
  /// the graph needs when bound only by Tensor-engine FLOPs or HBM bandwidth.
  double rooflineNs = 0;
  /// engineBusyNs[e] / simNs, same keys (tensor, vector, scalar, gpsimd, dma).
  std::map<std::string, double> engineUtilization;
};

/// Runs `program` on one simulated core of `target`.
/// `inputs[i]` / `outputs[i]` point to contiguous host memory laid out like the
/// buffer whose kind is Input / Output and whose index is i.
RunStats simulate(const Program &program, const Target &target,
                  const std::vector<const void *> &inputs,
                  const std::vector<void *> &outputs, const RunOptions &options = {});

} // namespace neuron::runtime
