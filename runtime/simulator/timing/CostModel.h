// The cost model: how long each instruction keeps its queue busy.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/Checks.h"

#include <cstdint>

namespace neuron::runtime {

/// Timing of one compute instruction. The queue can start its next
/// instruction after `busyNs`; the result (and the semaphore increment) is
/// visible after `busyNs + latencyNs`.
struct Cost {
  double busyNs = 0;
  double latencyNs = 0;
};

/// Clock of an engine in GHz (cycles per ns). Dma has no clock: returns 0.
double engineGhz(const Target &t, Engine e);

/// Tensor-engine cycles of one matmul (its initiation interval):
/// max(min(matmulStationaryCycles, M), N), x matmulFp32Factor for fp32 inputs.
double matmulCycles(const Target &t, int64_t m, int64_t n, bool fp32Inputs);

/// Engine cycles of a Vector/Scalar/GpSimd instruction, without the
/// per-instruction access overhead. `shape` comes from checkInstruction.
double computeCycles(const Target &t, const Instruction &inst,
                     const InstrShape &shape);

/// The register instructions and core_barrier: sequencer work, no data path pass.
inline bool isSequencerOp(Opcode op) {
  return op == Opcode::RegisterAlloc || op == Opcode::RegisterMove ||
         op == Opcode::RegisterLoad || op == Opcode::RegisterStore || op == Opcode::CoreBarrier;
}

/// Engine cycles of a sequencer op (ESTIMATE): register_alloc 0, or staticOverheadCycles with
/// an initial value; register_move staticOverheadCycles; register_load / register_store
/// staticOverheadCycles + accessOverheadCycles, + dmaStartLatencyNs of cycles from or to HBM;
/// core_barrier 2 x staticOverheadCycles after the later core arrives. computeCycles returns
/// these for them too (no MIN_II floor, no access overhead added by computeCost).
double sequencerCycles(const Target &t, const Instruction &inst);

/// Busy time and latency of a compute (non-DMA) instruction.
Cost computeCost(const Target &t, const Instruction &inst,
                 const InstrShape &shape);

/// Extra busy time of an instruction whose start waited on a semaphore
/// (HARDWARE.md: ~100 cycles static overhead for dependent instructions).
double stalledOverheadNs(const Target &t, Engine e);

/// Queue time of one DMA descriptor (a contiguous run) of `bytes` (HARDWARE.md, DMA
/// efficiency): from dmaShortRunBytes (1 KiB) bytes / queue bandwidth but no less than
/// dmaDescriptorMinBytes' worth (FITTED on the published curve's 1 KiB point); shorter runs
/// at the 1 KiB run's rate per byte, no less than dmaPacketMinBytes' worth.
double dmaDescriptorNs(const Target &t, int64_t bytes);

/// Time one DMA queue needs to move `bytes` in contiguous runs of `runBytes` (the shorter
/// of the source's and the destination's runs: a row of a partition, a gathered row).
double dmaQueueNs(const Target &t, int64_t bytes, int64_t runBytes);

/// Time one DMA queue needs for a dma_transpose of `bytes` (HARDWARE.md: at most 90% of the
/// DMA throughput from HBM, 50% from SBUF).
double dmaTransposeQueueNs(const Target &t, int64_t bytes, bool fromHbm);

/// Time the shared HBM channel needs for `bytes`.
double hbmNs(const Target &t, int64_t bytes);

} // namespace neuron::runtime
