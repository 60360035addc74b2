// Legality checks of instructions: engines, operands, capacity, partitions.
//
// Covers engine/opcode pairing, operand spaces and dtypes, SBUF/PSUM capacity,
// partition start rules (HARDWARE.md "Memory layout rules"), PSUM banks,
// matmul limits, HBM buffer bounds, loop terms and semaphore waits.
//
// An instruction inside loops is checked once for all its iterations: an
// offset with loop terms ranges over [base + lo, base + hi] (Loops.h
// loopTermsRange), and the bounds are checked at both ends, which reports the
// access of an iteration that is out of bounds. Nothing else an operand's
// legality depends on varies with the loops, except where a matmul's dst sits
// in its PSUM bank (psumBankVaries).
#include "runtime/simulator/Checks.h"

#include "runtime/program/Loops.h"
#include "runtime/simulator/Simulator.h"
#include "runtime/simulator/functional/StridedView.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace neuron::runtime {

void failInstruction(size_t index, const Instruction &inst,
                     const std::string &problem) {
  throw SimulationError("instruction " + std::to_string(index) + " (" +
                        opcodeName(inst.opcode) + "): " + problem);
}

int64_t contiguousRunBytes(const AccessPattern &ap) {
  const int64_t eb = dtypeSize(ap.dtype);
  const size_t first = ap.space == MemSpace::Hbm ? 0 : 1; // on chip: within a partition
  int64_t run = 1;                                        // elements
  for (size_t i = ap.dims.size(); i-- > first;) {
    const int64_t stride = ap.dims[i][0], size = ap.dims[i][1];
    if (size == 1)
      continue;
    if (stride != run)
      break;
    run *= size;
  }
  return run * eb;
}

namespace {
/// The contiguous run of one row of a gather's or scatter's HBM table (dims[0] is the row dim).
int64_t rowRunBytes(const AccessPattern &table) {
  AccessPattern row = table;
  row.dims.erase(row.dims.begin());
  return row.dims.empty() ? dtypeSize(row.dtype) : contiguousRunBytes(row);
}
} // namespace

const char *spaceName(MemSpace s) {
  switch (s) {
  case MemSpace::Hbm:
    return "HBM";
  case MemSpace::Sbuf:
    return "SBUF";
  case MemSpace::Psum:
    return "PSUM";
  }
  return "<invalid space>";
}

namespace {

/// "vector, gpsimd": the engines that run `op`.
std::string engineList(Opcode op) {
  std::string out;
  for (int e = 0; e < kNumEngines; ++e)
    if (runsOn(op, Engine(e)))
      out += (out.empty() ? "" : ", ") + std::string(engineName(Engine(e)));
  return out;
}

/// "trn2, trn3": the generations that have `op`.
std::string generationList(Opcode op) {
  std::string out;
  for (Generation g : {Generation::Trn1, Generation::Trn2, Generation::Trn3})
    if (existsOn(op, g))
      out += (out.empty() ? "" : ", ") + std::string(generationName(g));
  return out;
}

/// Largest magnitude of an offset, a stride or a dim size.
constexpr int64_t kLimit = int64_t(1) << 40;
/// Largest magnitude of a wait value with loop terms (evaluated per instance:
/// int64 arithmetic must not overflow).
constexpr int64_t kWaitLimit = int64_t(1) << 62;

std::string toString(__int128 v) {
  if (v >= INT64_MIN && v <= INT64_MAX)
    return std::to_string(int64_t(v));
  std::string digits;
  const bool negative = v < 0;
  for (; v != 0; v /= 10)
    digits.insert(digits.begin(),
                  char('0' + int(negative ? -(v % 10) : v % 10)));
  return negative ? "-" + digits : digits;
}

/// An immediate as a user wrote it: "4", "0.5".
std::string numberText(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool isFloatDType(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F8E4M3FN ||
         t == DType::F8E5M2;
}

/// Facts about one checked access pattern.
struct ApFacts {
  int64_t partitions = 1;
  int64_t freeElems = 1;
  int64_t byteLo = 0, byteHi = 0; // SBUF/PSUM: byte range inside a partition
};

class Checker {
public:
  Checker(const Program &p, const Target &t, size_t index,
          const int64_t *loopCounts, int loopDepth)
      : prog_(p), tgt_(t), index_(index), inst_(p.instructions[index]),
        loopCounts_(loopCounts), loopDepth_(loopDepth) {}

  InstrShape run();

private:
  [[noreturn]] void fail(const std::string &problem) const {
    failInstruction(index_, inst_, problem);
  }
  std::string operandName(int src) const {
    return src < 0 ? "dst" : "srcs[" + std::to_string(src) + "]";
  }
  std::string where(int src) const {
    return " (operand " + operandName(src) + ")";
  }
  void offsetRange(const AccessPattern &ap, int src, int64_t &lo,
                   int64_t &hi) const;
  /// Checks operand `src` (-1: dst); remembers the byte range of an on-chip
  /// dst.
  ApFacts checkAp(const AccessPattern &ap, int src, bool compute);
  void checkQueue();
  void expectSrcs(size_t n) const;
  void expectSpace(const AccessPattern &ap, int src, MemSpace s) const;
  void expectSameShape(const ApFacts &a, const ApFacts &b, int src) const;
  InstrShape checkDma();
  InstrShape checkRegister();
  InstrShape checkPeer();
  void checkDynamicOffset(const AccessPattern &ap, int src) const;
  InstrShape checkGather();
  InstrShape checkScatter();
  InstrShape checkMatmul();
  InstrShape checkCollective();
  InstrShape checkCompute();
  InstrShape checkIsaCompute();
  InstrShape checkTranspose();
  InstrShape checkOperands();
  void expectFloats() const;
  void expectPerPartition(int src, const std::string &what) const;
  void expectTile(const ApFacts &f, int src, int64_t partitions, int64_t freeElems) const;

  const Program &prog_;
  const Target &tgt_;
  size_t index_;
  const Instruction &inst_;
  const int64_t *loopCounts_; // trip counts of the loops around inst_
  int loopDepth_;
  int64_t dstByteLo_ = 0, dstByteHi_ = 0; // byteLo/Hi of an on-chip dst
};

void Checker::checkQueue() {
  if (inst_.queue >= kNumQueues)
    fail("queue " + std::to_string(inst_.queue) + " does not exist (" +
         std::to_string(kNumQueues) + " queues)");
  if (coreOfQueue(inst_.queue) >= tgt_.physicalCores)
    fail("queue " + std::to_string(inst_.queue) + " (" + queueName(inst_.queue) +
         ") is on physical core " + std::to_string(coreOfQueue(inst_.queue)) +
         ", but " + tgt_.name + " has " + std::to_string(tgt_.physicalCores) +
         " physical core(s) per logical core");
  Engine e = engineOfQueue(inst_.queue);
  if (e == Engine::Dma && localQueue(inst_.queue) - kQueueDma0 >= tgt_.dmaQueues)
    fail("DMA queue " + std::to_string(localQueue(inst_.queue) - kQueueDma0) +
         " does not exist on " + tgt_.name + " (" +
         std::to_string(tgt_.dmaQueues) + " DMA queues)");
  if (size_t(inst_.opcode) >= size_t(kNumOpcodes))
    fail("unknown opcode " + std::to_string(int(inst_.opcode)));
  if (!existsOn(inst_.opcode, tgt_.generation))
    fail(std::string("is not an instruction of ") + tgt_.name + " (" + tgt_.coreName +
         "); it exists on " + generationList(inst_.opcode));
  const bool ok = runsOn(inst_.opcode, e);
  if (!ok)
    fail(std::string("cannot run on the ") + engineName(e) + " engine (queue " +
         std::to_string(inst_.queue) + "); it runs on " + engineList(inst_.opcode));
  if (inst_.biasTile && inst_.opcode != Opcode::Activation && inst_.opcode != Opcode::Activate2)
    fail("only an activation or activate2 has a per-partition bias source");
  auto activate2Op = [](AluOp a) {
    return a == AluOp::Bypass || a == AluOp::AbsMax || a == AluOp::AbsMin;
  };
  // abs_max with 0 is nl.abs as a Vector-engine op0 (nki-library's rmsnorm_quant and MoE
  // kernels quantize with tensor_scalar_reduce(op0=nl.abs, operand0=0.0)).
  const bool vectorAbs = inst_.alu == AluOp::AbsMax && (inst_.opcode == Opcode::TensorScalar ||
                                                        inst_.opcode == Opcode::TensorScalarReduce);
  if (inst_.opcode != Opcode::Activate2 &&
      ((activate2Op(inst_.alu) && !vectorAbs) || activate2Op(inst_.alu2)))
    fail(std::string("takes no ") + aluOpName(activate2Op(inst_.alu) ? inst_.alu : inst_.alu2) +
         " (bypass, abs_max and abs_min are activate2's)");
  if (inst_.scaleTile && inst_.opcode != Opcode::Activation && inst_.opcode != Opcode::Activate2 &&
      inst_.opcode != Opcode::Exponential &&
      inst_.opcode != Opcode::TensorScalar && inst_.opcode != Opcode::ScalarTensorTensor &&
      inst_.opcode != Opcode::TensorTensorScan && inst_.opcode != Opcode::TensorScalarReduce &&
      inst_.opcode != Opcode::SelectReduce && inst_.opcode != Opcode::Dropout)
    fail("only activation, activate2, exponential, tensor_scalar, tensor_scalar_reduce, "
         "select_reduce, dropout, scalar_tensor_tensor and tensor_tensor_scan have a "
         "per-partition scalar source");
  if (inst_.twoOps && inst_.opcode != Opcode::TensorScalar)
    fail("only a tensor_scalar has two ops");
  if (inst_.opcode == Opcode::Activation && inst_.accumulate) {
    bool floats = isFloatDType(inst_.dst.dtype);
    for (const auto &s : inst_.srcs)
      floats &= isFloatDType(s.dtype);
    if (!floats)
      fail("an activation that sums its rows computes on floats only");
  }
  if (inst_.opcode == Opcode::Activation && (inst_.scaleTile || inst_.biasTile)) {
    bool floats = isFloatDType(inst_.dst.dtype);
    for (const auto &s : inst_.srcs)
      floats &= isFloatDType(s.dtype);
    if (!floats)
      fail("an activation with per-partition scale or bias computes on floats only");
  }
  // HARDWARE.md: the GpSimd engine cannot access PSUM.
  if (e == Engine::GpSimd) {
    bool psum = inst_.dst.space == MemSpace::Psum;
    for (const auto &s : inst_.srcs)
      psum |= s.space == MemSpace::Psum;
    if (psum)
      fail("the GpSimd engine cannot access PSUM");
  }
}

void Checker::expectSrcs(size_t n) const {
  if (inst_.srcs.size() != n)
    fail("expects " + std::to_string(n) + " source operand(s), got " +
         std::to_string(inst_.srcs.size()));
}

void Checker::expectSpace(const AccessPattern &ap, int src, MemSpace s) const {
  if (ap.space != s)
    fail(operandName(src) + " must be in " + spaceName(s) + ", not " +
         spaceName(ap.space));
}

void Checker::expectSameShape(const ApFacts &a, const ApFacts &b,
                              int src) const {
  if (a.partitions != b.partitions)
    fail(operandName(src) + " spans " + std::to_string(b.partitions) +
         " partitions but dst spans " + std::to_string(a.partitions));
  if (a.freeElems != b.freeElems)
    fail(operandName(src) + " has " + std::to_string(b.freeElems) +
         " elements per partition but dst has " + std::to_string(a.freeElems));
}

/// The lowest and highest offset of `ap` (which has offset terms) over the
/// loops around the instruction; checks its terms and that both ends are in
/// range.
void Checker::offsetRange(const AccessPattern &ap, int src, int64_t &lo,
                          int64_t &hi) const {
  const std::string problem =
      loopTermsProblem(ap.offsetTerms, loopDepth_, kLimit, "offset");
  if (!problem.empty())
    fail(problem + where(src));
  __int128 tlo, thi;
  loopTermsRange(ap.offsetTerms, loopCounts_, tlo, thi);
  for (__int128 o : {ap.offset + tlo, ap.offset + thi})
    if (o > kLimit || o < -kLimit)
      fail("access pattern offset " + toString(o) + " is out of range" +
           where(src));
  lo = int64_t(ap.offset + tlo);
  hi = int64_t(ap.offset + thi);
}

ApFacts Checker::checkAp(const AccessPattern &ap, int src, bool compute) {
  // Built only on failure: this runs for every operand of every instruction.
  auto where = [&] { return this->where(src); };
  if (ap.offsetReg.valid() && inst_.opcode != Opcode::DmaCopy)
    fail("only a dma_copy's HBM access patterns take a dynamic (register) offset" + where());
  const int64_t eb = dtypeSize(ap.dtype);
  if (eb == 0)
    fail("invalid dtype" + where());
  bool onChip = ap.space == MemSpace::Sbuf || ap.space == MemSpace::Psum;
  if (!onChip && ap.space != MemSpace::Hbm)
    fail("invalid memory space" + where());
  if (compute && !onChip)
    fail(std::string("compute engines cannot access ") + spaceName(ap.space) +
         where());
  if (!onChip && ap.core != 0)
    fail("an HBM access pattern names core " + std::to_string(ap.core) +
         " (HBM is shared; core must be 0)" + where());
  // Each physical core's engines and DMA queues reach only its own SBUF and PSUM.
  if (onChip && ap.core != coreOfQueue(inst_.queue))
    fail("queue " + queueName(inst_.queue) + " of physical core " +
         std::to_string(coreOfQueue(inst_.queue)) + " cannot access the " +
         spaceName(ap.space) + " of physical core " + std::to_string(ap.core) + where());
  if (ap.dims.size() > size_t(kMaxApDims))
    fail("access pattern has " + std::to_string(ap.dims.size()) +
         " dims, at most " + std::to_string(kMaxApDims) + " supported" +
         where());
  if (onChip && ap.dims.empty())
    fail(std::string(spaceName(ap.space)) +
         " access pattern needs a partition dim" + where());
  if (onChip && ap.dims.size() > 5)
    fail(std::string(spaceName(ap.space)) + " access pattern has " +
         std::to_string(ap.dims.size() - 1) + " free dims, at most 4" +
         where());
  for (const auto &d : ap.dims)
    if (d[1] < 1 || d[1] > kLimit || d[0] > kLimit || d[0] < -kLimit)
      fail("access pattern dim {" + std::to_string(d[0]) + ", " +
           std::to_string(d[1]) + "} is out of range" + where());
  if (ap.offset > kLimit || ap.offset < -kLimit)
    fail("access pattern offset " + std::to_string(ap.offset) +
         " is out of range" + where());
  int64_t offLo = ap.offset, offHi = ap.offset; // over all iterations
  if (!ap.offsetTerms.empty())
    offsetRange(ap, src, offLo, offHi);

  // Range of element offsets touched by the free dims (all dims for HBM),
  // relative to `offset`.
  __int128 lo = 0, hi = 0;
  ApFacts f;
  for (size_t i = onChip ? 1 : 0; i < ap.dims.size(); ++i) {
    __int128 ext = __int128(ap.dims[i][0]) * (ap.dims[i][1] - 1);
    (ext < 0 ? lo : hi) += ext;
    f.freeElems *= ap.dims[i][1];
  }

  if (!onChip) {
    if (ap.buffer >= prog_.buffers.size())
      fail("HBM buffer " + std::to_string(ap.buffer) + " does not exist (" +
           std::to_string(prog_.buffers.size()) + " buffers)" + where());
    const BufferDecl &b = prog_.buffers[ap.buffer];
    if (b.dtype != ap.dtype)
      fail("HBM access as " + std::string(dtypeName(ap.dtype)) + " to buffer " +
           std::to_string(ap.buffer) + " (\"" + b.name + "\") of dtype " +
           dtypeName(b.dtype) + where());
    int64_t n = b.numElements();
    if (lo + offLo < 0 || hi + offHi >= n) {
      const int64_t at = lo + offLo < 0 ? offLo : offHi; // a bad iteration
      fail("HBM access [elements " + std::to_string(int64_t(lo + at)) + ".." +
           std::to_string(int64_t(hi + at)) + "] is outside buffer " +
           std::to_string(ap.buffer) + " (\"" + b.name + "\") of " +
           std::to_string(n) + " elements" + where());
    }
    if (src < 0 && (b.kind == BufferDecl::Kind::Input ||
                    b.kind == BufferDecl::Kind::Constant))
      fail(std::string("writes to ") +
           (b.kind == BufferDecl::Kind::Input ? "input" : "constant") +
           " buffer " + std::to_string(ap.buffer) + " (\"" + b.name + "\")" +
           where());
    return f;
  }

  // SBUF / PSUM: byte range inside one partition.
  const long partBytes = ap.space == MemSpace::Sbuf
                             ? tgt_.sbufBytesPerPartition
                             : tgt_.psumBytesPerPartition;
  const __int128 blo = lo * eb, bhi = hi * eb + eb; // relative to offset
  if (offLo + blo < 0 || offHi + bhi > partBytes) {
    const int64_t at = offLo + blo < 0 ? offLo : offHi; // a bad iteration
    fail(std::string(spaceName(ap.space)) + " access [offset " +
         std::to_string(int64_t(at + blo)) + ", " +
         std::to_string(int64_t(bhi - blo)) +
         " bytes] exceeds the partition size " + std::to_string(partBytes) +
         where());
  }
  f.byteLo = int64_t(ap.offset + blo);
  f.byteHi = int64_t(ap.offset + bhi);

  // Partition dim.
  const int64_t pstride = ap.dims[0][0], parts = ap.dims[0][1];
  f.partitions = parts;
  // A DMA may read one partition for many (a partition broadcast: stride 0); engines and
  // writes go partition by partition.
  const bool dmaRead = src >= 0 && !compute;
  if (parts > 1 && (pstride < 0 || (pstride == 0 && !dmaRead)))
    fail("partition stride " + std::to_string(pstride) + " must be positive" +
         (dmaRead ? std::string(" or 0 (a DMA reading one partition for many)") : "") +
         where());
  const int64_t start = ap.partition;
  const int64_t last = start + (parts - 1) * (parts > 1 ? pstride : 0);
  if (last >= tgt_.partitions)
    fail(std::string(spaceName(ap.space)) + " access to partitions " +
         std::to_string(start) + ".." + std::to_string(last) + " exceeds the " +
         std::to_string(tgt_.partitions) + " partitions" + where());
  if (compute) {
    const int64_t span = last - start + 1;
    if (const char *rule = partitionStartProblem(start, span))
      fail(std::string(spaceName(ap.space)) + " access spanning " +
           std::to_string(span) + " partitions starts at partition " +
           std::to_string(start) + "; " + rule + where());
  }
  if (src < 0) { // scalar copies: a struct copy stalls on store forwarding
    dstByteLo_ = f.byteLo;
    dstByteHi_ = f.byteHi;
  }
  return f;
}

InstrShape Checker::checkDma() {
  expectSrcs(1);
  ApFacts d = checkAp(inst_.dst, -1, false);
  ApFacts s = checkAp(inst_.srcs[0], 0, false);
  checkDynamicOffset(inst_.dst, -1);
  checkDynamicOffset(inst_.srcs[0], 0);
  (void)d;
  (void)s;
  if (inst_.dst.dtype != inst_.srcs[0].dtype)
    fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) +
         " differs from source dtype " + dtypeName(inst_.srcs[0].dtype) +
         " (DMA does not convert)");
  int64_t n = inst_.dst.numElements();
  if (n != inst_.srcs[0].numElements())
    fail("dst has " + std::to_string(n) + " elements but srcs[0] has " +
         std::to_string(inst_.srcs[0].numElements()));
  InstrShape sh;
  sh.bytes = n * dtypeSize(inst_.dst.dtype);
  sh.hbmSides = int(inst_.dst.space == MemSpace::Hbm) +
                int(inst_.srcs[0].space == MemSpace::Hbm);
  sh.runBytes = std::min(contiguousRunBytes(inst_.dst), contiguousRunBytes(inst_.srcs[0]));
  return sh;
}

InstrShape Checker::checkGather() {
  expectSrcs(2);
  const AccessPattern &table = inst_.srcs[0], &idx = inst_.srcs[1];
  expectSpace(inst_.dst, -1, MemSpace::Sbuf);
  expectSpace(table, 0, MemSpace::Hbm);
  expectSpace(idx, 1, MemSpace::Sbuf);
  if (table.dims.empty())
    fail("srcs[0] needs a row dim {row stride, rows} first");
  ApFacts d = checkAp(inst_.dst, -1, false);
  checkAp(table, 0, false); // every row of the table lies inside its buffer
  ApFacts ix = checkAp(idx, 1, false);
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    fail(std::string("index dtype ") + dtypeName(idx.dtype) +
         " is not supported (i32, i64)");
  if (ix.partitions != d.partitions || ix.freeElems != 1)
    fail("srcs[1] must be a [" + std::to_string(d.partitions) +
         ", 1] index tile, got [" + std::to_string(ix.partitions) + ", " +
         std::to_string(ix.freeElems) + "]");
  if (inst_.dst.dtype != table.dtype)
    fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) +
         " differs from the table dtype " + dtypeName(table.dtype) +
         " (DMA does not convert)");
  int64_t row = 1;
  for (size_t k = 1; k < table.dims.size(); ++k)
    row *= table.dims[k][1];
  if (row != d.freeElems)
    fail("dst has " + std::to_string(d.freeElems) +
         " elements per partition but a table row has " + std::to_string(row));
  InstrShape sh;
  sh.partitions = d.partitions;
  sh.freeElems = d.freeElems;
  sh.bytes = d.partitions * d.freeElems * dtypeSize(table.dtype);
  sh.hbmSides = 1;
  sh.gatherRows = d.partitions;
  sh.tableRows = table.dims[0][1];
  sh.runBytes = std::min(contiguousRunBytes(inst_.dst), rowRunBytes(table));
  return sh;
}

InstrShape Checker::checkScatter() {
  expectSrcs(2);
  const AccessPattern &table = inst_.dst, &src = inst_.srcs[0], &idx = inst_.srcs[1];
  expectSpace(table, -1, MemSpace::Hbm);
  expectSpace(src, 0, MemSpace::Sbuf);
  expectSpace(idx, 1, MemSpace::Sbuf);
  if (table.dims.empty())
    fail("dst needs a row dim {row stride, rows} first");
  checkAp(table, -1, false); // every row of the table lies inside its buffer
  ApFacts s = checkAp(src, 0, false);
  ApFacts ix = checkAp(idx, 1, false);
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64)
    fail(std::string("index dtype ") + dtypeName(idx.dtype) +
         " is not supported (i32, i64)");
  if (ix.partitions != s.partitions || ix.freeElems != 1)
    fail("srcs[1] must be a [" + std::to_string(s.partitions) +
         ", 1] index tile, got [" + std::to_string(ix.partitions) + ", " +
         std::to_string(ix.freeElems) + "]");
  if (src.dtype != table.dtype)
    fail(std::string("srcs[0] dtype ") + dtypeName(src.dtype) +
         " differs from the table dtype " + dtypeName(table.dtype) +
         " (DMA does not convert)");
  if (inst_.accumulate && inst_.alu != AluOp::Add && inst_.alu != AluOp::Mul &&
      inst_.alu != AluOp::Max && inst_.alu != AluOp::Min)
    fail(std::string("accumulates with ") + aluOpName(inst_.alu) +
         "; a scatter combines with add, mul, max or min");
  int64_t row = 1;
  for (size_t k = 1; k < table.dims.size(); ++k)
    row *= table.dims[k][1];
  if (row != s.freeElems)
    fail("srcs[0] has " + std::to_string(s.freeElems) +
         " elements per partition but a table row has " + std::to_string(row));
  InstrShape sh;
  sh.partitions = s.partitions;
  sh.freeElems = s.freeElems;
  sh.bytes = s.partitions * s.freeElems * dtypeSize(table.dtype);
  sh.hbmSides = inst_.accumulate ? 2 : 1; // an accumulate reads the rows too
  sh.gatherRows = s.partitions;
  sh.tableRows = table.dims[0][1];
  sh.runBytes = std::min(contiguousRunBytes(inst_.srcs[0]), rowRunBytes(table));
  return sh;
}

InstrShape Checker::checkMatmul() {
  expectSrcs(2);
  const AccessPattern &stat = inst_.srcs[0], &mov = inst_.srcs[1];
  expectSpace(inst_.dst, -1, MemSpace::Psum);
  expectSpace(stat, 0, MemSpace::Sbuf);
  expectSpace(mov, 1, MemSpace::Sbuf);
  if (inst_.dst.dtype != DType::F32)
    fail(std::string("dst must be f32 in PSUM, not ") +
         dtypeName(inst_.dst.dtype));
  for (int i = 0; i < 2; ++i)
    if (!isFloatDType(inst_.srcs[i].dtype))
      fail(operandName(i) + " dtype " + dtypeName(inst_.srcs[i].dtype) +
           " is not supported by the Tensor engine");
  ApFacts d = checkAp(inst_.dst, -1, true);
  ApFacts a = checkAp(stat, 0, true);
  ApFacts b = checkAp(mov, 1, true);
  if (a.partitions != b.partitions)
    fail("contraction dims differ: srcs[0] spans " +
         std::to_string(a.partitions) + " partitions, srcs[1] " +
         std::to_string(b.partitions));
  if (a.freeElems > tgt_.matmulMaxM)
    fail("stationary free size M = " + std::to_string(a.freeElems) +
         " exceeds " + std::to_string(tgt_.matmulMaxM));
  if (b.freeElems > tgt_.matmulMaxN)
    fail("moving free size N = " + std::to_string(b.freeElems) + " exceeds " +
         std::to_string(tgt_.matmulMaxN));
  if (d.partitions != a.freeElems || d.freeElems != b.freeElems)
    fail("dst is [" + std::to_string(d.partitions) + ", " +
         std::to_string(d.freeElems) + "] but the product is [" +
         std::to_string(a.freeElems) + ", " + std::to_string(b.freeElems) +
         "]");
  checkPsumBank(index_, inst_, tgt_, d.byteLo, d.byteHi);
  InstrShape sh;
  sh.partitions = d.partitions;
  sh.matmulK = a.partitions;
  sh.matmulM = a.freeElems;
  sh.matmulN = b.freeElems;
  sh.freeElems = b.freeElems;
  sh.touchesSbuf = sh.touchesPsum = true;
  return sh;
}

InstrShape Checker::checkCompute() {
  size_t nsrc = 0;
  switch (inst_.opcode) {
  case Opcode::TensorTensor:
    nsrc = 2;
    break;
  case Opcode::Select:
    nsrc = 3;
    break;
  case Opcode::Activation: {
    // data, the scale and bias tiles, and with `accumulate` an optional reduce result.
    nsrc = 1 + size_t(inst_.scaleTile) + size_t(inst_.biasTile);
    if (optionalReduceResult(inst_))
      ++nsrc;
    else if (inst_.accumulate && inst_.srcs.size() != nsrc)
      fail("expects " + std::to_string(nsrc) + " source operand(s) (" +
           std::to_string(nsrc + 1) + " with a reduce result), got " +
           std::to_string(inst_.srcs.size()));
    const ReduceCmd c = inst_.reduceCmd;
    if (!inst_.accumulate && c != ReduceCmd::ResetReduce && c != ReduceCmd::Idle)
      fail(std::string("reduce_cmd ") + reduceCmdName(c) +
           " drives the Scalar engine's accumulator registers, which only an activation that "
           "reduces (accumulate, reduce_op add) uses");
    if (c == ReduceCmd::LoadReduce)
      fail("the Scalar engine's accumulator registers have no load_reduce (nki.isa.activation "
           "documents idle, reset, reduce and reset_reduce)");
    break;
  }
  case Opcode::Memset:
  case Opcode::Iota:
  case Opcode::Random:
    nsrc = 0;
    break;
  default:
    nsrc = 1;
  }
  expectSrcs(nsrc);
  if (inst_.opcode == Opcode::Iota && !inst_.affine.empty() &&
      inst_.affine.size() != inst_.dst.dims.size() + 1)
    fail("needs " + std::to_string(inst_.dst.dims.size() + 1) +
         " affine coefficients (offset, partition, one per free dim of dst), got " +
         std::to_string(inst_.affine.size()));
  if (inst_.opcode == Opcode::Random) {
    if (!isFloatDType(inst_.dst.dtype))
      fail(std::string("random numbers are floats, not ") + dtypeName(inst_.dst.dtype));
    if (!(inst_.imm[0] >= 0 && inst_.imm[0] < 9007199254740992.0 &&
          inst_.imm[0] == double(int64_t(inst_.imm[0]))))
      fail("the stream id imm[0] must be an integer in [0, 2^53)");
  }
  InstrShape sh;
  ApFacts d = checkAp(inst_.dst, -1, true);
  sh.partitions = d.partitions;
  sh.freeElems = d.freeElems;
  auto note = [&](MemSpace s) {
    (s == MemSpace::Sbuf ? sh.touchesSbuf : sh.touchesPsum) = true;
  };
  note(inst_.dst.space);
  for (size_t i = 0; i < nsrc; ++i) {
    ApFacts s = checkAp(inst_.srcs[i], int(i), true);
    note(inst_.srcs[i].space);
    if (optionalReduceResult(inst_) && i + 1 == nsrc) {
      // The reduce result: one fp32 value per partition of dst.
      if (s.partitions != d.partitions || s.freeElems != 1 ||
          inst_.srcs[i].dtype != DType::F32)
        fail(operandName(int(i)) + " receives the reduce result (the accumulator registers): "
             "it must be [" + std::to_string(d.partitions) + ", 1] f32");
      continue;
    }
    if (inst_.opcode == Opcode::Activation && i > 0) {
      // A per-partition scale or bias: one value per partition, read along the row.
      expectSameShape(d, s, int(i));
      expectPerPartition(int(i), i == 1 && inst_.scaleTile ? "scale" : "bias");
      continue;
    }
    if (inst_.opcode != Opcode::TensorReduce) {
      expectSameShape(d, s, int(i));
      continue;
    }
    // TensorReduce: dst keeps the outer free dims of the source.
    AluOp op = inst_.alu;
    if (op != AluOp::Add && op != AluOp::Max && op != AluOp::Min &&
        op != AluOp::Mul)
      fail(std::string("cannot reduce with ") + aluOpName(op) +
           " (add, max, min, mul)");
    size_t freeDims = inst_.srcs[0].dims.size() - 1;
    if (inst_.axes < 1 || inst_.axes > freeDims)
      fail("reduces " + std::to_string(inst_.axes) +
           " innermost free dims but srcs[0] has " + std::to_string(freeDims));
    int64_t kept = 1;
    for (size_t k = 1; k < inst_.srcs[0].dims.size() - inst_.axes; ++k)
      kept *= inst_.srcs[0].dims[k][1];
    if (s.partitions != d.partitions || kept != d.freeElems)
      fail("dst is [" + std::to_string(d.partitions) + ", " +
           std::to_string(d.freeElems) + "] but the reduction gives [" +
           std::to_string(s.partitions) + ", " + std::to_string(kept) + "]");
    sh.freeElems = s.freeElems;
  }
  return sh;
}

/// srcs[src] holds one value per partition, read along the row: its free dims have stride 0.
void Checker::expectPerPartition(int src, const std::string &what) const {
  const auto &dims = inst_.srcs[size_t(src)].dims;
  for (size_t k = 1; k < dims.size(); ++k)
    if (dims[k][1] > 1 && dims[k][0] != 0)
      fail(operandName(src) + " is a per-partition " + what + ": its free dims must have stride 0");
}

void Checker::expectFloats() const {
  bool floats = isFloatDType(inst_.dst.dtype);
  for (const auto &s : inst_.srcs)
    floats &= isFloatDType(s.dtype);
  if (!floats)
    fail("computes on floats only (f32, bf16, f16)");
}

void Checker::expectTile(const ApFacts &f, int src, int64_t partitions,
                         int64_t freeElems) const {
  if (f.partitions != partitions || f.freeElems != freeElems)
    fail(operandName(src) + " must be [" + std::to_string(partitions) + ", " +
         std::to_string(freeElems) + "], got [" + std::to_string(f.partitions) + ", " +
         std::to_string(f.freeElems) + "]");
}

/// The compute instructions of Isa.def beyond the elementwise core (and tensor_scalar with
/// two ops or a per-partition scalar): operand counts and shapes, as Isa.def describes them.
InstrShape Checker::checkIsaCompute() {
  const Opcode op = inst_.opcode;
  size_t nsrc = 1;
  switch (op) {
  case Opcode::TensorScalar:
    nsrc = 1 + size_t(inst_.scaleTile);
    break;
  case Opcode::ScalarTensorTensor:
  case Opcode::TensorTensorScan:
    nsrc = 2 + size_t(inst_.scaleTile);
    break;
  case Opcode::TensorScalarReduce:
    nsrc = 2 + size_t(inst_.scaleTile);
    break;
  case Opcode::RangeSelect:
    nsrc = 4;
    break;
  case Opcode::Dropout:
    nsrc = 1 + size_t(inst_.scaleTile);
    break;
  case Opcode::SelectReduce:
    nsrc = 3 + size_t(inst_.scaleTile);
    break;
  case Opcode::Rng:
  case Opcode::Rand2:
  case Opcode::RandSetState:
  case Opcode::RandGetState:
  case Opcode::SetRngSeed:
    nsrc = 0;
    break;
  case Opcode::Activate2:
    nsrc = 1 + size_t(inst_.scaleTile) + size_t(inst_.biasTile) +
           size_t(optionalReduceResult(inst_));
    break;
  case Opcode::Exponential:
    nsrc = 1 + size_t(inst_.scaleTile) + size_t(optionalReduceResult(inst_));
    break;
  case Opcode::FindIndex8:
  case Opcode::MatchReplace8:
  case Opcode::CopyPredicated:
  case Opcode::NGather:
  case Opcode::LocalGather:
    nsrc = 2;
    break;
  default:
    nsrc = 1;
  }
  expectSrcs(nsrc);
  if (op == Opcode::AffineSelect) {
    const AluOp a = inst_.alu;
    if (a != AluOp::Eq && a != AluOp::Ne && a != AluOp::Lt && a != AluOp::Le && a != AluOp::Gt &&
        a != AluOp::Ge)
      fail(std::string("compares its affine value with 0 by eq, ne, lt, le, gt or ge, not ") +
           aluOpName(a));
    if (inst_.affine.size() != inst_.dst.dims.size() + 1)
      fail("needs " + std::to_string(inst_.dst.dims.size() + 1) +
           " affine coefficients (offset, partition, one per free dim of dst), got " +
           std::to_string(inst_.affine.size()));
  }
  InstrShape sh;
  ApFacts d = checkAp(inst_.dst, -1, true);
  std::vector<ApFacts> s;
  for (size_t i = 0; i < nsrc; ++i)
    s.push_back(checkAp(inst_.srcs[i], int(i), true));
  auto note = [&](MemSpace m) { (m == MemSpace::Sbuf ? sh.touchesSbuf : sh.touchesPsum) = true; };
  note(inst_.dst.space);
  for (const auto &a : inst_.srcs)
    note(a.space);
  sh.partitions = d.partitions;
  sh.freeElems = nsrc > 0 ? s[0].freeElems : d.freeElems;
  // A per-partition scalar: dst's shape read with stride 0 along the free dims (one value per
  // partition), as activation's scale and bias tiles.
  auto perPartitionScalar = [&](size_t i) {
    expectSameShape(d, s[i], int(i));
    expectPerPartition(int(i), "scalar");
  };
  switch (op) {
  case Opcode::TensorScalar:
  case Opcode::ScalarTensorTensor:
    expectFloats();
    expectSameShape(d, s[0], 0);
    if (op == Opcode::ScalarTensorTensor)
      expectSameShape(d, s[1], 1);
    if (inst_.scaleTile)
      perPartitionScalar(nsrc - 1);
    break;
  case Opcode::Reciprocal:
  case Opcode::TensorTensorScan:
    expectFloats();
    for (size_t i = 0; i < nsrc; ++i)
      expectSameShape(d, s[i], int(i));
    if (op == Opcode::TensorTensorScan && inst_.scaleTile)
      expectPerPartition(2, "initial value");
    break;
  case Opcode::BnStats:
    expectFloats();
    if (s[0].freeElems > 512)
      fail("bn_stats takes at most 512 elements per partition (nl.tile_size.bn_stats_fmax), got " +
           std::to_string(s[0].freeElems));
    expectTile(d, -1, s[0].partitions, 6);
    break;
  case Opcode::BnAggr:
    expectFloats();
    if (s[0].freeElems % 6 != 0)
      fail("srcs[0] holds bn_stats results, 6 values each, but has " +
           std::to_string(s[0].freeElems) + " per partition");
    expectTile(d, -1, s[0].partitions, 2);
    break;
  case Opcode::TensorPartitionReduce: {
    AluOp a = inst_.alu;
    if (a != AluOp::Add && a != AluOp::Max && a != AluOp::Min && a != AluOp::And &&
        a != AluOp::Or)
      fail(std::string("cannot reduce partitions with ") + aluOpName(a) +
           " (add, max, min, and, or)");
    expectFloats();
    expectTile(d, -1, 1, s[0].freeElems);
    sh.partitions = s[0].partitions;
    break;
  }
  case Opcode::Max8:
    expectFloats();
    if (s[0].freeElems < 8)
      fail("max8 needs at least 8 elements per partition, got " +
           std::to_string(s[0].freeElems));
    expectTile(d, -1, s[0].partitions, 8);
    break;
  case Opcode::FindIndex8:
    if (!isFloatDType(inst_.srcs[0].dtype) || !isFloatDType(inst_.srcs[1].dtype))
      fail("searches float data for float values");
    if (inst_.dst.dtype != DType::I32 && inst_.dst.dtype != DType::U32)
      fail(std::string("writes u32 (or i32) indices, not ") + dtypeName(inst_.dst.dtype));
    expectTile(s[1], 1, s[0].partitions, 8);
    expectTile(d, -1, s[0].partitions, 8);
    break;
  case Opcode::MatchReplace8:
    expectFloats();
    expectSameShape(d, s[0], 0);
    expectTile(s[1], 1, s[0].partitions, 8);
    break;
  case Opcode::AffineSelect:
    expectSameShape(d, s[0], 0);
    break;
  case Opcode::TensorScalarReduce: {
    expectFloats();
    expectSameShape(d, s[0], 0);
    if (inst_.scaleTile)
      perPartitionScalar(1);
    const AluOp a = inst_.alu, r = inst_.alu2;
    if (a == AluOp::And || a == AluOp::Or || a == AluOp::Xor)
      fail(std::string("applies one arithmetic op, not the bitvec op ") + aluOpName(a));
    if (r != AluOp::Add && r != AluOp::Mul && r != AluOp::Max && r != AluOp::Min)
      fail(std::string("cannot reduce with ") + aluOpName(r) + " (add, mul, max, min)");
    expectTile(s[nsrc - 1], int(nsrc - 1), d.partitions, 1);
    const ReduceCmd c = inst_.reduceCmd;
    if (c != ReduceCmd::ResetReduce && c != ReduceCmd::Reduce && c != ReduceCmd::LoadReduce)
      fail(std::string("writes a reduce result: reduce_cmd reset_reduce, reduce or load_reduce, "
                       "not ") + reduceCmdName(c));
    break;
  }
  case Opcode::Dropout: {
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype) + " (dropout keeps or zeroes elements)");
    expectSameShape(d, s[0], 0);
    if (inst_.scaleTile) {
      if (!isFloatDType(inst_.srcs[1].dtype))
        fail("the drop probabilities (srcs[1]) are floats");
      expectTile(s[1], 1, d.partitions, 1);
    } else if (!(inst_.imm[0] >= 0 && inst_.imm[0] <= 1)) {
      fail("the drop probability imm[0] must be in [0, 1]");
    }
    if (!(inst_.imm[1] >= 0 && inst_.imm[1] < 9007199254740992.0 &&
          inst_.imm[1] == double(int64_t(inst_.imm[1]))))
      fail("the stream id imm[1] must be an integer in [0, 2^53)");
    break;
  }
  case Opcode::RangeSelect: {
    expectFloats();
    expectSameShape(d, s[0], 0);
    auto comparison = [](AluOp a) {
      return a == AluOp::Eq || a == AluOp::Ne || a == AluOp::Lt || a == AluOp::Le ||
             a == AluOp::Gt || a == AluOp::Ge;
    };
    if (!comparison(inst_.alu) || !comparison(inst_.alu2))
      fail(std::string("compares the index with its bounds by eq, ne, lt, le, gt or ge, not ") +
           aluOpName(comparison(inst_.alu) ? inst_.alu2 : inst_.alu));
    expectTile(s[1], 1, d.partitions, 1);
    expectTile(s[2], 2, d.partitions, 1);
    expectTile(s[3], 3, d.partitions, 1);
    break;
  }
  case Opcode::SelectReduce: {
    const DType pt = inst_.srcs[0].dtype;
    if (pt != DType::I8 && pt != DType::U8)
      fail(std::string("takes an i8 or u8 predicate (srcs[0]), not ") + dtypeName(pt));
    bool floats = isFloatDType(inst_.dst.dtype);
    for (size_t i = 1; i < nsrc; ++i)
      floats &= isFloatDType(inst_.srcs[i].dtype);
    if (!floats)
      fail("selects and reduces floats only (dst, on_true, on_false, reduce result)");
    if (inst_.srcs[0].space == MemSpace::Psum && inst_.srcs[1].space == MemSpace::Psum)
      fail("the predicate and on_true cannot both be in PSUM");
    expectSameShape(d, s[0], 0);
    expectSameShape(d, s[1], 1);
    if (inst_.scaleTile)
      expectTile(s[2], 2, d.partitions, 1);
    expectTile(s[nsrc - 1], int(nsrc - 1), d.partitions, 1);
    break;
  }
  case Opcode::TensorScalarCumulative: {
    expectFloats();
    expectSameShape(d, s[0], 0);
    const AluOp a = inst_.alu, r = inst_.alu2;
    if (a == AluOp::And || a == AluOp::Or || a == AluOp::Xor)
      fail(std::string("applies one arithmetic op, not the bitvec op ") + aluOpName(a));
    if (r != AluOp::Add && r != AluOp::Sub && r != AluOp::Mul && r != AluOp::Max &&
        r != AluOp::Min)
      fail(std::string("cannot accumulate with ") + aluOpName(r) + " (add, sub, mul, max, min)");
    const ReduceCmd c = inst_.reduceCmd;
    if (c != ReduceCmd::ResetReduce && c != ReduceCmd::Reduce && c != ReduceCmd::LoadReduce)
      fail(std::string("accumulates: reduce_cmd reset_reduce, reduce or load_reduce, not ") +
           reduceCmdName(c));
    break;
  }
  case Opcode::NGather:
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype) + " (a gather is bit-exact)");
    if (inst_.srcs[1].dtype != DType::I32 && inst_.srcs[1].dtype != DType::U32)
      fail(std::string("takes u32 (or i32) indices (srcs[1]), not ") +
           dtypeName(inst_.srcs[1].dtype));
    for (int k = -1; k < 2; ++k)
      expectSpace(k < 0 ? inst_.dst : inst_.srcs[size_t(k)], k, MemSpace::Sbuf);
    expectSameShape(d, s[1], 1);
    if (s[0].partitions != d.partitions)
      fail("srcs[0] spans " + std::to_string(s[0].partitions) + " partitions but dst " +
           std::to_string(d.partitions));
    sh.freeElems = d.freeElems;
    break;
  case Opcode::LocalGather: {
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype) + " (a gather is bit-exact)");
    if (inst_.srcs[1].dtype != DType::U16)
      fail(std::string("takes u16 indices (srcs[1]), not ") + dtypeName(inst_.srcs[1].dtype));
    for (int k = -1; k < 2; ++k)
      expectSpace(k < 0 ? inst_.dst : inst_.srcs[size_t(k)], k, MemSpace::Sbuf);
    if (s[0].partitions % 16 != 0 || s[1].partitions != s[0].partitions)
      fail("srcs[0] and the indices srcs[1] must span the same multiple of 16 partitions (16 per "
           "GpSimd core), got " + std::to_string(s[0].partitions) + " and " +
           std::to_string(s[1].partitions));
    const double e = inst_.imm[0], v = inst_.imm[1];
    if (e != 1 && e != 2 && e != 4 && e != 8 && e != 16 && e != 32)
      fail("num_elem_per_idx imm[0] must be 1, 2, 4, 8, 16 or 32, got " + numberText(e));
    const int64_t perCore = 16 * s[1].freeElems;
    if (!(v >= 1 && v <= double(std::min<int64_t>(perCore, 4096)) && v == double(int64_t(v))))
      fail("num_valid_indices imm[1] must be an integer in [1, " +
           std::to_string(std::min<int64_t>(perCore, 4096)) + "] (at most the " +
           std::to_string(perCore) + " indices of a core's 16 partitions, and 4096), got " +
           numberText(v));
    expectTile(d, -1, s[0].partitions, int64_t(v) * int64_t(e));
    sh.freeElems = d.freeElems;
    break;
  }
  case Opcode::SequenceBounds:
    if (inst_.srcs[0].dtype != DType::F32 && inst_.srcs[0].dtype != DType::I32)
      fail(std::string("takes f32 or i32 segment ids, not ") + dtypeName(inst_.srcs[0].dtype));
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype));
    expectSpace(inst_.dst, -1, MemSpace::Sbuf);
    expectSpace(inst_.srcs[0], 0, MemSpace::Sbuf);
    if (s[0].partitions != 1)
      fail("takes one partition of segment ids, got " + std::to_string(s[0].partitions));
    expectTile(d, -1, 1, 2 * s[0].freeElems);
    break;
  case Opcode::NonzeroWithCount: {
    if (inst_.dst.dtype != DType::I32)
      fail(std::string("writes i32 indices and a count, not ") + dtypeName(inst_.dst.dtype));
    if (d.partitions != s[0].partitions || d.freeElems != s[0].freeElems + 1)
      fail("dst must be [" + std::to_string(s[0].partitions) + ", " +
           std::to_string(s[0].freeElems + 1) + "] (the indices, padding and the count), got [" +
           std::to_string(d.partitions) + ", " + std::to_string(d.freeElems) + "]");
    for (int k = 0; k < 2; ++k)
      if (!(std::abs(inst_.imm[k]) < 2147483648.0 && inst_.imm[k] == double(int64_t(inst_.imm[k]))))
        fail(std::string(k == 0 ? "index_offset imm[0]" : "padding_val imm[1]") +
             " must be a 32-bit integer");
    break;
  }
  case Opcode::StreamShuffle: {
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype) + " (a shuffle is bit-exact)");
    expectSameShape(d, s[0], 0);
    if (d.partitions % 32 != 0)
      fail("shuffles whole 32-partition quadrants: src and dst span 32, 64, 96 or 128 "
           "partitions, not " + std::to_string(d.partitions));
    if (inst_.affine.size() != 32)
      fail("needs a 32-entry shuffle mask (affine), got " + std::to_string(inst_.affine.size()));
    for (int64_t m : inst_.affine)
      if ((m < 0 || m > 31) && m != 255)
        fail("shuffle mask entry " + std::to_string(m) +
             " is neither a partition of the quadrant (0-31) nor 255 (keep dst)");
    break;
  }
  case Opcode::Activate2: {
    expectFloats();
    expectSameShape(d, s[0], 0);
    size_t k = 1;
    if (inst_.scaleTile)
      expectTile(s[k], int(k), d.partitions, 1), ++k;
    if (inst_.biasTile)
      expectTile(s[k], int(k), d.partitions, 1), ++k;
    const AluOp a = inst_.alu, b = inst_.alu2;
    const bool pair = (a == AluOp::Mul && (b == AluOp::Add || b == AluOp::Sub || b == AluOp::Bypass)) ||
                      ((a == AluOp::Add || a == AluOp::Sub) && b == AluOp::Bypass) ||
                      (a == AluOp::Bypass && b == AluOp::Bypass);
    if (!pair)
      fail(std::string("takes the op pairs (mul, add), (mul, sub), (mul, bypass), (add, bypass), "
                       "(sub, bypass) or (bypass, bypass), not (") + aluOpName(a) + ", " +
           aluOpName(b) + ")");
    if (inst_.reverse && a == AluOp::Bypass)
      fail("reverse (reverse0) needs op0 (alu is bypass)");
    if (inst_.reverse2 && b == AluOp::Bypass)
      fail("reverse2 (reverse1) needs op1 (alu2 is bypass)");
    const AluOp r = inst_.reduceOp;
    if (r != AluOp::Add && r != AluOp::Max && r != AluOp::Min && r != AluOp::AbsMax &&
        r != AluOp::AbsMin)
      fail(std::string("cannot reduce with ") + aluOpName(r) +
           " (add, max, min, abs_max, abs_min)");
    const ReduceCmd c = inst_.reduceCmd;
    if (!inst_.accumulate && c != ReduceCmd::ResetReduce && c != ReduceCmd::Idle)
      fail(std::string("reduce_cmd ") + reduceCmdName(c) +
           " drives the Scalar engine's accumulator registers, which only an activate2 that "
           "reduces (accumulate) uses");
    if (c == ReduceCmd::LoadReduce)
      fail("the Scalar engine's accumulator registers have no load_reduce (nki.isa.activate2 "
           "documents idle, reset, reduce and reset_reduce)");
    if (optionalReduceResult(inst_)) {
      if (inst_.srcs.back().dtype != DType::F32)
        fail(operandName(int(nsrc - 1)) + " receives the reduce result: it must be f32");
      expectTile(s[nsrc - 1], int(nsrc - 1), d.partitions, 1);
    }
    break;
  }
  case Opcode::Rng: {
    const DType t = inst_.dst.dtype;
    if (t != DType::I32 && t != DType::I8 && t != DType::U8)
      fail(std::string("writes random bits into an integer dst (i32, i8, u8), not ") +
           dtypeName(t));
    if (engineOfQueue(inst_.queue) == Engine::GpSimd && tgt_.generation == Generation::Trn1)
      fail("the GpSimd engine draws random numbers from NC-v3 on (trn2, trn3); on trn1 (NC-v2) rng "
           "runs on the Vector engine");
    if (engineOfQueue(inst_.queue) == Engine::GpSimd)
      expectSpace(inst_.dst, -1, MemSpace::Sbuf);
    break;
  }
  case Opcode::Rand2:
    if (!(inst_.imm[0] < inst_.imm[1]))
      fail("min imm[0] must be below max imm[1]");
    break;
  case Opcode::RandSetState:
  case Opcode::RandGetState: {
    const Engine e = engineOfQueue(inst_.queue);
    if (e == Engine::Vector && tgt_.generation != Generation::Trn3)
      fail(std::string("the Vector engine's generator state moves from NC-v4 on (trn3); on ") +
           tgt_.name + " " + opcodeName(inst_.opcode) + " runs on the GpSimd engine");
    if (inst_.dst.dtype != DType::I32)
      fail(std::string("moves the generators' uint32 words as i32, not ") +
           dtypeName(inst_.dst.dtype));
    if (op == Opcode::RandSetState || e == Engine::GpSimd)
      expectSpace(inst_.dst, -1, MemSpace::Sbuf);
    const int64_t words = e == Engine::GpSimd ? 6 : 24;
    if (d.freeElems != words)
      fail("a " + std::string(engineName(e)) + " lane's XORWOW state is " +
           std::to_string(words) + " words, but dst has " + std::to_string(d.freeElems) +
           " per partition");
    break;
  }
  case Opcode::SetRngSeed:
    if (inst_.dst.dtype != DType::I32)
      fail(std::string("reads a 32-bit seed as i32, not ") + dtypeName(inst_.dst.dtype));
    expectTile(d, -1, 1, 1);
    break;
  case Opcode::Exponential: {
    expectFloats();
    expectSameShape(d, s[0], 0);
    if (inst_.scaleTile)
      expectTile(s[1], 1, d.partitions, 1);
    const ReduceCmd c = inst_.reduceCmd;
    if (c == ReduceCmd::Reset)
      fail("reduce_cmd reset is not one of exponential's (idle, reset_reduce, reduce, "
           "load_reduce)");
    if (c != ReduceCmd::LoadReduce && inst_.imm[1] != 0)
      fail(std::string("reduce_init imm[1] is load_reduce's: it must be 0 with reduce_cmd ") +
           reduceCmdName(c));
    if (optionalReduceResult(inst_)) {
      if (c == ReduceCmd::Idle)
        fail("a reduce result needs reduce_cmd reset_reduce, reduce or load_reduce (with idle "
             "the registers are undefined)");
      expectTile(s[nsrc - 1], int(nsrc - 1), d.partitions, 1);
    }
    break;
  }
  case Opcode::CopyPredicated:
    if (inst_.dst.dtype != inst_.srcs[0].dtype)
      fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
           dtypeName(inst_.srcs[0].dtype) + " (a predicated copy does not convert)");
    expectSameShape(d, s[0], 0);
    expectSameShape(d, s[1], 1);
    break;
  default:
    fail("no operand rules for this opcode");
  }
  return sh;
}

/// nc_transpose (Tensor: SBUF -> PSUM, up to 128 x 128; Vector: up to 32 x 32) and
/// dma_transpose (HBM or SBUF -> SBUF, 2- or 4-byte elements): dst[f, p] = src[p, f] of a 2-D
/// source; an HBM source is [rows, cols] with cols becoming the partitions.
InstrShape Checker::checkTranspose() {
  expectSrcs(1);
  const AccessPattern &src = inst_.srcs[0];
  const bool dma = inst_.opcode == Opcode::DmaTranspose;
  const Engine e = engineOfQueue(inst_.queue);
  if (src.dims.size() != 2 || inst_.dst.dims.size() != 2)
    fail("transposes a 2-D tile: src and dst need 2 dims (partitions and one free dim)");
  if (inst_.dst.dtype != src.dtype)
    fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
         dtypeName(src.dtype) + " (a transpose is bit-exact)");
  ApFacts d = checkAp(inst_.dst, -1, !dma);
  ApFacts s = checkAp(src, 0, !dma && src.space != MemSpace::Hbm);
  const int64_t rows = src.dims[0][1], cols = src.dims[1][1];
  expectTile(d, -1, cols, rows);
  InstrShape sh;
  sh.partitions = rows;
  sh.freeElems = cols;
  (void)s;
  if (dma) {
    expectSpace(inst_.dst, -1, MemSpace::Sbuf);
    if (src.space == MemSpace::Psum)
      fail("dma_transpose reads HBM or SBUF, not PSUM");
    const int64_t eb = dtypeSize(src.dtype);
    if (eb != 2 && eb != 4)
      fail(std::string("dma_transpose moves 2- or 4-byte elements, not ") +
           dtypeName(src.dtype));
    sh.bytes = rows * cols * eb;
    sh.hbmSides = src.space == MemSpace::Hbm ? 1 : 0;
    return sh;
  }
  sh.touchesSbuf = src.space == MemSpace::Sbuf || inst_.dst.space == MemSpace::Sbuf;
  sh.touchesPsum = src.space == MemSpace::Psum || inst_.dst.space == MemSpace::Psum;
  if (e == Engine::Tensor) {
    expectSpace(src, 0, MemSpace::Sbuf);
    expectSpace(inst_.dst, -1, MemSpace::Psum);
  } else if (rows > 32 || cols > 32) {
    fail("the Vector engine transposes tiles of at most 32 x 32, got " + std::to_string(rows) +
         " x " + std::to_string(cols) + " (use the Tensor engine or dma_transpose)");
  }
  return sh;
}

/// A collective reads and writes whole contiguous HBM ranges outside loops;
/// the element counts follow its kind and its group's size.
InstrShape Checker::checkCollective() {
  expectSrcs(1);
  if (loopDepth_ > 0)
    fail("a collective cannot run inside a loop");
  const AccessPattern &src = inst_.srcs[0];
  expectSpace(inst_.dst, -1, MemSpace::Hbm);
  expectSpace(src, 0, MemSpace::Hbm);
  checkAp(inst_.dst, -1, false);
  checkAp(src, 0, false);
  if (!inst_.dst.offsetTerms.empty() || !src.offsetTerms.empty())
    fail("collective operands cannot vary with loops");
  for (int k = -1; k < 1; ++k) {
    const AccessPattern &ap = k < 0 ? inst_.dst : src;
    if (ap.dims.size() != 1 || ap.dims[0][0] != 1)
      fail(operandName(k) + " must be one contiguous run [[1, n]]");
  }
  if (inst_.dst.dtype != src.dtype)
    fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) +
         " differs from source dtype " + dtypeName(src.dtype));
  if (inst_.group >= prog_.groups.size())
    fail("group " + std::to_string(inst_.group) + " does not exist (" +
         std::to_string(prog_.groups.size()) + " groups)");
  const AluOp op = inst_.alu;
  if (op != AluOp::Add && op != AluOp::Max && op != AluOp::Min &&
      op != AluOp::Mul)
    fail(std::string("cannot reduce with ") + aluOpName(op) +
         " (add, max, min, mul)");
  const int64_t ranks = prog_.groups[inst_.group].size;
  const int64_t n = src.numElements(), m = inst_.dst.numElements();
  const int64_t expected = collectiveDstElements(inst_.collective, n, ranks);
  if (expected < 0)
    fail(std::string(collectiveKindName(inst_.collective)) + " of " + std::to_string(n) +
         " elements does not split over " + std::to_string(ranks) + " ranks");
  if (m != expected)
    fail(std::string(collectiveKindName(inst_.collective)) + " over " +
         std::to_string(ranks) + " ranks of " + std::to_string(n) +
         " elements gives " + std::to_string(expected) + ", but dst has " +
         std::to_string(m));
  InstrShape sh;
  sh.bytes = std::max(n, m) * dtypeSize(src.dtype);
  sh.hbmSides = 2;
  return sh;
}

/// A dynamic offset (AccessPattern::offsetReg): an HBM pattern of a dma_copy, a register of a
/// compute queue of the instruction's physical core. The pattern at register value 0 is checked
/// like any other; each instance's offset is checked at run time (Simulator.cpp).
void Checker::checkDynamicOffset(const AccessPattern &ap, int src) const {
  if (!ap.offsetReg.valid())
    return;
  if (ap.space != MemSpace::Hbm)
    fail("a dynamic (register) offset applies to an HBM access pattern, not " +
         std::string(spaceName(ap.space)) + where(src));
  const int q = ap.offsetReg.queue;
  if (q >= kNumQueues || engineOfQueue(q) == Engine::Dma ||
      engineOfQueue(q) == Engine::Collective || coreOfQueue(q) != coreOfQueue(inst_.queue))
    fail("the dynamic offset's register is on queue " + std::to_string(q) + " (" + queueName(q) +
         "): it must be a compute engine's of physical core " +
         std::to_string(coreOfQueue(inst_.queue)) + where(src));
  if (ap.offsetReg.index >= kRegistersPerQueue)
    fail("register " + std::to_string(ap.offsetReg.index) + " does not exist (" +
         std::to_string(kRegistersPerQueue) + " per queue)" + where(src));
  if (ap.offsetRegScale < -kLimit || ap.offsetRegScale > kLimit)
    fail("dynamic offset scale " + std::to_string(ap.offsetRegScale) + " is out of range" +
         where(src));
}

/// register_alloc / move / load / store: a register of the instruction's own queue; load and
/// store move one integer element (up to 32 bits) from or to SBUF or HBM.
InstrShape Checker::checkRegister() {
  const Opcode op = inst_.opcode;
  if (inst_.reg >= kRegistersPerQueue)
    fail("register " + std::to_string(inst_.reg) + " does not exist (" +
         std::to_string(kRegistersPerQueue) + " per queue)");
  auto int32Imm = [&] {
    const double v = inst_.imm[0];
    if (!(v == std::floor(v)) || v < -2147483648.0 || v > 2147483647.0)
      fail("the immediate " + std::to_string(v) + " is no int32 value (registers hold int32)");
  };
  InstrShape sh;
  auto oneElement = [&](const AccessPattern &ap, int src) {
    if (ap.space == MemSpace::Psum)
      fail(operandName(src) + " must be in SBUF or HBM, not PSUM");
    checkAp(ap, src, false);
    if (ap.numElements() != 1)
      fail(operandName(src) + " must hold exactly one element, got " +
           std::to_string(ap.numElements()));
    if (ap.dtype != DType::I32 && ap.dtype != DType::I8 && ap.dtype != DType::U8)
      fail(operandName(src) + " must be an integer of up to 32 bits (i32, i8, u8), not " +
           dtypeName(ap.dtype));
    sh.hbmSides = ap.space == MemSpace::Hbm ? 1 : 0;
    sh.touchesSbuf = ap.space == MemSpace::Sbuf;
    sh.bytes = dtypeSize(ap.dtype);
  };
  switch (op) {
  case Opcode::RegisterAlloc:
    expectSrcs(0);
    if (inst_.regInit)
      int32Imm();
    break;
  case Opcode::RegisterMove:
    expectSrcs(0);
    if (inst_.regSrc >= kRegistersPerQueue)
      fail("source register " + std::to_string(inst_.regSrc) + " does not exist (" +
           std::to_string(kRegistersPerQueue) + " per queue)");
    if (inst_.regSrc < 0)
      int32Imm();
    break;
  case Opcode::RegisterLoad:
    expectSrcs(1);
    oneElement(inst_.srcs[0], 0);
    break;
  default: // RegisterStore
    expectSrcs(0);
    oneElement(inst_.dst, -1);
    break;
  }
  return sh;
}

/// sendrecv (a DMA queue; SBUF src and dst of one dtype and shape, on its own core) and
/// core_barrier (a compute engine; dst the shared HBM tensor, not accessed), on targets whose
/// logical core has two physical cores.
InstrShape Checker::checkPeer() {
  const bool send = inst_.opcode == Opcode::SendRecv;
  if (tgt_.physicalCores < 2)
    fail(tgt_.name + " has one physical core per logical core: " +
         opcodeName(inst_.opcode) +
         " runs between the physical cores of a logical core (trn2-lnc2, trn3-lnc2)");
  InstrShape sh;
  if (!send) {
    expectSrcs(0);
    expectSpace(inst_.dst, -1, MemSpace::Hbm);
    checkAp(inst_.dst, -1, false);
    return sh;
  }
  expectSrcs(1);
  const AccessPattern &src = inst_.srcs[0];
  expectSpace(inst_.dst, -1, MemSpace::Sbuf);
  expectSpace(src, 0, MemSpace::Sbuf);
  ApFacts d = checkAp(inst_.dst, -1, false);
  ApFacts s = checkAp(src, 0, false);
  expectSameShape(d, s, 0);
  if (inst_.dst.dtype != src.dtype)
    fail(std::string("dst dtype ") + dtypeName(inst_.dst.dtype) + " differs from srcs[0] " +
         dtypeName(src.dtype) + " (sendrecv does not convert)");
  sh.partitions = d.partitions;
  sh.freeElems = d.freeElems;
  sh.bytes = inst_.dst.numBytes();
  sh.runBytes = std::min(contiguousRunBytes(inst_.dst), contiguousRunBytes(src));
  sh.touchesSbuf = true;
  return sh;
}

InstrShape Checker::checkOperands() {
  switch (inst_.opcode) {
  case Opcode::RegisterAlloc:
  case Opcode::RegisterMove:
  case Opcode::RegisterLoad:
  case Opcode::RegisterStore:
    return checkRegister();
  case Opcode::SendRecv:
  case Opcode::CoreBarrier:
    return checkPeer();
  case Opcode::Collective:
    return checkCollective();
  case Opcode::DmaCopy:
    return checkDma();
  case Opcode::DmaGather:
    return checkGather();
  case Opcode::DmaScatter:
    return checkScatter();
  case Opcode::Matmul:
    return checkMatmul();
  case Opcode::Transpose:
  case Opcode::DmaTranspose:
    return checkTranspose();
  case Opcode::TensorScalar:
    return inst_.twoOps || inst_.scaleTile ? checkIsaCompute() : checkCompute();
  case Opcode::ScalarTensorTensor:
  case Opcode::Reciprocal:
  case Opcode::BnStats:
  case Opcode::BnAggr:
  case Opcode::TensorTensorScan:
  case Opcode::TensorPartitionReduce:
  case Opcode::Max8:
  case Opcode::FindIndex8:
  case Opcode::MatchReplace8:
  case Opcode::CopyPredicated:
  case Opcode::AffineSelect:
  case Opcode::TensorScalarReduce:
  case Opcode::RangeSelect:
  case Opcode::SelectReduce:
  case Opcode::StreamShuffle:
  case Opcode::TensorScalarCumulative:
  case Opcode::NGather:
  case Opcode::Dropout:
  case Opcode::NonzeroWithCount:
  case Opcode::LocalGather:
  case Opcode::SequenceBounds:
  case Opcode::Activate2:
  case Opcode::Exponential:
  case Opcode::Rng:
  case Opcode::Rand2:
  case Opcode::RandSetState:
  case Opcode::RandGetState:
  case Opcode::SetRngSeed:
    return checkIsaCompute();
  default:
    return checkCompute();
  }
}

InstrShape Checker::run() {
  checkQueue();
  InstrShape sh = checkOperands(); // built in place: no copy
  sh.dstByteLo = dstByteLo_;
  sh.dstByteHi = dstByteHi_;
  return sh;
}

} // namespace

InstrShape checkInstruction(const Program &program, const Target &target,
                            size_t index, const int64_t *loopCounts,
                            int loopDepth) {
  return Checker(program, target, index, loopCounts, loopDepth).run();
}

InstrShape checkInstruction(const Program &program, const Target &target,
                            size_t index) {
  int64_t counts[kMaxLoopDepth];
  const int depth = enclosingLoopCounts(program.loops, index, counts);
  return checkInstruction(program, target, index, counts, depth);
}

void checkWaits(const Program &program, size_t index, const int64_t *loopCounts,
                int loopDepth) {
  const Instruction &inst = program.instructions[index];
  for (const SemWait &w : inst.waits) {
    // Built only on failure: this runs for every instruction.
    auto queue = [&] { return std::to_string(w.queue); };
    if (w.queue >= kNumQueues)
      failInstruction(index, inst,
                      "waits on queue " + queue() + ", which does not exist");
    if (w.valueTerms.empty())
      continue;
    const std::string problem =
        loopTermsProblem(w.valueTerms, loopDepth, kWaitLimit, "wait value");
    if (!problem.empty())
      failInstruction(index, inst,
                      problem + " (wait on queue " + queue() + ")");
    __int128 lo, hi;
    loopTermsRange(w.valueTerms, loopCounts, lo, hi);
    lo += w.value;
    hi += w.value;
    if (lo < -kWaitLimit || hi > kWaitLimit)
      failInstruction(index, inst,
                      "waits on queue " + queue() + " for values " +
                          toString(lo) + ".." + toString(hi) +
                          ", which are out of range");
  }
}

bool psumBankVaries(const Instruction &inst, const Target &target) {
  if (inst.opcode != Opcode::Matmul)
    return false;
  for (const LoopTerm &t : inst.dst.offsetTerms)
    if (t.coef % target.psumBankBytes != 0)
      return true;
  return false;
}

void failPsumBank(size_t index, const Instruction &inst, const Target &target,
                  int64_t byteLo, int64_t byteHi) {
  failInstruction(index, inst,
                  "dst PSUM access [offset " + std::to_string(byteLo) + ", " +
                      std::to_string(byteHi - byteLo) + " bytes] crosses a " +
                      std::to_string(target.psumBankBytes) +
                      "-byte PSUM bank boundary");
}

} // namespace neuron::runtime
