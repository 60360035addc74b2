// Instruction cost formulas; every number comes from the Target.
//
// Vector / Scalar / GpSimd instructions cost formula(N) + accessOverheadCycles
// at the engine's clock, with N the free elements per partition. Every formula
// is floored at minII (HARDWARE.md: "MIN_II is about 64 cycles"), and doubled
// when an operand's innermost free stride exceeds 16 bytes (HARDWARE.md:
// such strides halve SBUF/PSUM bandwidth). Matmuls occupy the Tensor engine
// for their initiation interval and complete matmulLatencyCycles later.
//
// Broadcast operands: a source whose innermost free dim has stride 0 (a
// [P, 1] tile read along the row, as the compiler's fusion emits) reads one
// value per partition. A tensor_tensor with such an operand is what the
// hardware runs as a tensor_scalar with a per-partition scalar operand, so it
// costs N (tensor_scalar's formula) rather than 2N. Stride 0 never counts as
// a wide stride.
//
// Select (dst = cond ? a : b) has no documented cost; ESTIMATE: tensor_tensor's
// general formula, 2N (three source streams, no fast mode).
#include "runtime/simulator/timing/CostModel.h"

#include <algorithm>
#include <cmath>

namespace neuron::runtime {

namespace {

bool allBf16(const Instruction &inst) {
  if (inst.dst.dtype != DType::BF16)
    return false;
  for (const auto &s : inst.srcs)
    if (s.dtype != DType::BF16)
      return false;
  return true;
}

bool innerContiguous(const AccessPattern &ap) {
  return ap.dims.size() < 2 || ap.dims.back()[0] == 1 || ap.dims.back()[1] == 1;
}

bool wideInnerStride(const AccessPattern &ap) {
  if (ap.dims.size() < 2 || ap.dims.back()[1] == 1)
    return false;
  int64_t s = ap.dims.back()[0];
  return (s < 0 ? -s : s) * dtypeSize(ap.dtype) > 16;
}

/// The innermost free dim (size > 1) has stride 0: one value per partition.
bool broadcastRow(const AccessPattern &ap) {
  for (size_t i = ap.dims.size(); i-- > 1;)
    if (ap.dims[i][1] > 1)
      return ap.dims[i][0] == 0;
  return false;
}

double tensorTensorCycles(const Instruction &inst, double n) {
  bool psumInput = false, contiguous = true, broadcast = false;
  for (const auto &s : inst.srcs) {
    psumInput |= s.space == MemSpace::Psum;
    contiguous &= innerContiguous(s);
    broadcast |= broadcastRow(s);
  }
  if (broadcast) // runs as a tensor_scalar with a per-partition operand
    return n;
  bool fastAlu = inst.alu == AluOp::Add || inst.alu == AluOp::Sub ||
                 inst.alu == AluOp::Mul;
  if (psumInput || (allBf16(inst) && fastAlu && contiguous))
    return n;
  return 2 * n;
}

} // namespace

double engineGhz(const Target &t, Engine e) {
  switch (e) {
  case Engine::Tensor:
    return t.tensorGhz;
  case Engine::Vector:
    return t.vectorGhz;
  case Engine::Scalar:
    return t.scalarGhz;
  case Engine::GpSimd:
    return t.gpsimdGhz;
  case Engine::Dma:
  case Engine::Collective:
    return 0;
  }
  return 0;
}

double matmulCycles(const Target &t, int64_t m, int64_t n, bool fp32Inputs) {
  int64_t stationary = std::min<int64_t>(t.matmulStationaryCycles, m);
  double c = double(std::max<int64_t>(stationary, n));
  return fp32Inputs ? c * t.matmulFp32Factor : c;
}

namespace {

bool lowPrecision(DType d) { return d == DType::BF16 || d == DType::F16; }

bool allLowPrecision(const Instruction &inst) {
  if (!lowPrecision(inst.dst.dtype))
    return false;
  for (const auto &s : inst.srcs)
    if (!lowPrecision(s.dtype))
      return false;
  return true;
}

/// How many times faster than NC-v2 an instruction runs in the performance modes of NC-v3
/// and later (HARDWARE.md "Performance modes"): the Vector engine runs tensor_copy and
/// tensor_scalar 4x on bf16/fp16 SBUF operands with contiguous rows, 2x on such operands with
/// strided rows or with one operand in PSUM, and tensor_tensor 2x on bf16/fp16 SBUF inputs;
/// NC-v4's Scalar engine runs tensor_copy and tensor_scalar 2x on bf16/fp16 operands.
double performanceMode(const Target &t, const Instruction &inst, Engine e) {
  if (t.generation == Generation::Trn1 || !allLowPrecision(inst))
    return 1;
  const bool copyOrScalar =
      inst.opcode == Opcode::TensorCopy || inst.opcode == Opcode::TensorScalar;
  if (e == Engine::Scalar)
    return copyOrScalar && t.generation == Generation::Trn3 ? 2 : 1;
  if (e != Engine::Vector)
    return 1;
  int psum = inst.dst.space == MemSpace::Psum;
  bool contiguous = innerContiguous(inst.dst);
  for (const auto &s : inst.srcs) {
    psum += s.space == MemSpace::Psum;
    contiguous &= innerContiguous(s) || broadcastRow(s);
  }
  if (copyOrScalar) {
    if (psum == 0)
      return contiguous ? 4 : 2;
    return psum == 1 && contiguous ? 2 : 1;
  }
  if (inst.opcode == Opcode::TensorTensor) {
    for (const auto &s : inst.srcs)
      if (s.space != MemSpace::Sbuf)
        return 1;
    return 2;
  }
  return 1;
}

bool isZero(double v) { return v == 0; }

} // namespace

double sequencerCycles(const Target &t, const Instruction &inst) {
  // ESTIMATE (Isa.def, HARDWARE.md "Sequencer registers"): no documented cost; a register
  // op is a tiny instruction of the engine's sequencer, which HARDWARE.md's static overhead
  // prices; a load or store also makes one memory access (the access overhead), through the
  // DMA fabric for HBM (its start latency).
  const double tiny = t.staticOverheadCycles;
  switch (inst.opcode) {
  case Opcode::RegisterAlloc:
    return inst.regInit ? tiny : 0;
  case Opcode::RegisterMove:
    return tiny;
  case Opcode::RegisterLoad:
  case Opcode::RegisterStore: {
    const AccessPattern &mem =
        inst.opcode == Opcode::RegisterLoad ? inst.srcs[0] : inst.dst;
    const double hbm = mem.space == MemSpace::Hbm
                           ? t.dmaStartLatencyNs * engineGhz(t, engineOfQueue(inst.queue))
                           : 0;
    return tiny + t.accessOverheadCycles + hbm;
  }
  case Opcode::CoreBarrier: // a remote semaphore write and a local wait, after both arrive
    return 2 * tiny;
  default:
    return 0;
  }
}

double computeCycles(const Target &t, const Instruction &inst,
                     const InstrShape &shape) {
  const double n = double(shape.freeElems);
  const Engine e = engineOfQueue(inst.queue);
  double c = n;
  switch (inst.opcode) {
  case Opcode::Matmul:
    return matmulCycles(t, shape.matmulM, shape.matmulN,
                        inst.srcs[0].dtype == DType::F32 ||
                            inst.srcs[1].dtype == DType::F32);
  case Opcode::Transpose:
    if (e == Engine::Tensor) {
      // HARDWARE.md: max(P, min(64, F)); fp32 at the matmul's x4 on NC-v2, x2 in NC-v3's
      // transpose mode.
      double pe = double(std::max<int64_t>(shape.partitions,
                                           std::min<int64_t>(t.matmulStationaryCycles, n)));
      if (inst.srcs[0].dtype == DType::F32)
        pe *= t.generation == Generation::Trn1 ? t.matmulFp32Factor : t.matmulFp32Factor / 2;
      return pe;
    }
    c = n; // Vector: max(MIN_II, N)
    break;
  case Opcode::Activation:
    // HARDWARE.md: the reduce into the accumulator registers is free; reading them into a
    // reduce result costs MIN_II more (activation_reduce: an activation + MIN_II).
    c = optionalReduceResult(inst) ? std::max(n, double(t.minII)) + t.minII : n;
    break;
  case Opcode::Activate2:   // ESTIMATE (Isa.def): activation's
  case Opcode::Exponential: // ESTIMATE (Isa.def): tensor_scalar_reduce's
    c = optionalReduceResult(inst) ? std::max(n, double(t.minII)) + t.minII : n;
    break;
  case Opcode::TensorScalarReduce: // HARDWARE.md: max(MIN_II, N) + MIN_II
  case Opcode::RangeSelect:        // ESTIMATE (Isa.def): tensor_scalar_reduce's
    c = std::max(n, double(t.minII)) + t.minII;
    break;
  case Opcode::SelectReduce: { // ESTIMATE (Isa.def): tensor_copy_predicated's + MIN_II
    const bool split = inst.srcs[0].space != inst.srcs[1].space;
    c = std::max(split ? n : 2 * n, double(t.minII)) + t.minII;
    break;
  }
  case Opcode::TensorScalar: // two ops cost the same as one
  case Opcode::TensorCopy:
  case Opcode::Max8:
  case Opcode::FindIndex8:
  case Opcode::MatchReplace8:
  case Opcode::BnStats:
  case Opcode::StreamShuffle:
  case Opcode::TensorScalarCumulative: // ESTIMATE (Isa.def): tensor_scalar's
  case Opcode::Dropout:                // ESTIMATE (Isa.def)
    c = n;
    break;
  case Opcode::TensorTensor:
    c = tensorTensorCycles(inst, n);
    break;
  case Opcode::ScalarTensorTensor: {
    const bool fast = allBf16(inst) && inst.alu == AluOp::Sub && inst.alu2 == AluOp::Mul &&
                      shape.freeElems % 2 == 0;
    c = fast ? n : 2 * n;
    break;
  }
  case Opcode::Reciprocal:
    c = 8 * n;
    break;
  case Opcode::BnAggr:
    c = 13 * n / 3;
    break;
  case Opcode::TensorTensorScan:
    c = 2 * n;
    break;
  case Opcode::TensorPartitionReduce:
    // ESTIMATE (Isa.def): GpSimd start-up + P x N elements over 8 cores x 16 fp32 lanes.
    c = t.iotaFixedCycles + double(shape.partitions) * n / 128;
    break;
  case Opcode::CopyPredicated: {
    const bool split = inst.srcs[0].space != inst.srcs[1].space;
    c = split ? n : 2 * n;
    break;
  }
  case Opcode::TensorReduce: {
    bool half = inst.srcs[0].dtype == DType::BF16 &&
                (inst.alu == AluOp::Add || inst.alu == AluOp::Max);
    c = half ? n / 2 : n;
    break;
  }
  case Opcode::Memset:
    c = lowPrecision(inst.dst.dtype) && isZero(inst.imm[0]) ? n / 2 : n;
    break;
  case Opcode::Iota:
  case Opcode::AffineSelect:
  case Opcode::Random:
  case Opcode::NonzeroWithCount: // ESTIMATE (Isa.def): iota's 150 + N over the source row
  case Opcode::LocalGather:      // ESTIMATE (Isa.def): 150 + M over the gathered elements
    c = t.iotaFixedCycles + n;
    break;
  case Opcode::SequenceBounds: // ESTIMATE (Isa.def): 150 + 2N, a forward and a backward pass
    c = t.iotaFixedCycles + 2 * n;
    break;
  case Opcode::Select:
    c = 2 * n;
    break;
  case Opcode::Rng:          // ESTIMATE (Isa.def): one element a cycle; GpSimd's start
  case Opcode::RandSetState: // ESTIMATE (Isa.def): the state words, as rng
  case Opcode::RandGetState:
    c = e == Engine::GpSimd ? t.iotaFixedCycles + n : n;
    break;
  case Opcode::Rand2:      // ESTIMATE (Isa.def): one element a cycle
  case Opcode::SetRngSeed: // ESTIMATE (Isa.def): MIN_II (the floor below)
    c = n;
    break;
  case Opcode::NGather: // ESTIMATE (Isa.def): a GpSimd start per 512-element group + M
    c = t.iotaFixedCycles * std::ceil(n / 512) + n;
    break;
  case Opcode::DmaCopy:
  case Opcode::DmaGather:
  case Opcode::DmaScatter:
  case Opcode::DmaTranspose:
  case Opcode::Collective:
  case Opcode::SendRecv: // a DMA: dmaQueueNs
    return 0;
  case Opcode::RegisterAlloc:
  case Opcode::RegisterMove:
  case Opcode::RegisterLoad:
  case Opcode::RegisterStore:
  case Opcode::CoreBarrier:
    return sequencerCycles(t, inst);
  }
  c /= performanceMode(t, inst, e);
  bool wide = wideInnerStride(inst.dst);
  for (const auto &s : inst.srcs)
    wide |= wideInnerStride(s);
  if (wide)
    c *= 2;
  return std::max(c, double(t.minII));
}

Cost computeCost(const Target &t, const Instruction &inst,
                 const InstrShape &shape) {
  Engine e = engineOfQueue(inst.queue);
  double ghz = engineGhz(t, e);
  Cost cost;
  if (inst.opcode == Opcode::Matmul ||
      (inst.opcode == Opcode::Transpose && e == Engine::Tensor)) {
    cost.busyNs = computeCycles(t, inst, shape) / ghz;
    cost.latencyNs = t.matmulLatencyCycles / ghz;
    return cost;
  }
  if (isSequencerOp(inst.opcode)) { // their own overheads (sequencerCycles)
    cost.busyNs = sequencerCycles(t, inst) / ghz;
    return cost;
  }
  cost.busyNs = (computeCycles(t, inst, shape) + t.accessOverheadCycles) / ghz;
  return cost;
}

double stalledOverheadNs(const Target &t, Engine e) {
  double ghz = engineGhz(t, e);
  return ghz > 0 ? t.staticOverheadCycles / ghz : 0;
}

double dmaDescriptorNs(const Target &t, int64_t bytes) {
  const double b = double(bytes);
  if (b >= t.dmaShortRunBytes) // the curve's knee: full rate from dmaDescriptorMinBytes
    return std::max(b, t.dmaDescriptorMinBytes) / t.dmaBytesPerNsPerQueue;
  // a short run at the efficiency of a dmaShortRunBytes one, no faster than a packet's
  const double perByte = t.dmaShortRunBytes > 0
                             ? std::max(t.dmaDescriptorMinBytes, t.dmaShortRunBytes) /
                                   t.dmaShortRunBytes
                             : 1.0;
  return std::max(b, t.dmaPacketMinBytes) * perByte / t.dmaBytesPerNsPerQueue;
}

double dmaQueueNs(const Target &t, int64_t bytes, int64_t runBytes) {
  if (bytes <= 0)
    return 0;
  runBytes = std::clamp<int64_t>(runBytes, 1, bytes);
  const int64_t full = bytes / runBytes, rest = bytes % runBytes;
  return double(full) * dmaDescriptorNs(t, runBytes) + (rest ? dmaDescriptorNs(t, rest) : 0);
}

double dmaTransposeQueueNs(const Target &t, int64_t bytes, bool fromHbm) {
  const double share = fromHbm ? t.dmaTransposeFromHbm : t.dmaTransposeOnChip;
  return double(bytes) / (t.dmaBytesPerNsPerQueue * share);
}

double hbmNs(const Target &t, int64_t bytes) {
  return double(bytes) / t.hbmBytesPerNs;
}

} // namespace neuron::runtime
