// Verifiers of the nisa instructions: queues, access-pattern shapes, semaphore waits.
#include "dialects/NIsa/IR/NIsaOps.h"

#include "dialects/Common/IsaFields.h"
#include "dialects/Common/LoopTerms.h"
#include "runtime/program/Isa.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace neuron::nisa;
using neuron::ntile::MemSpace;

static constexpr int64_t kMaxPartitions = 128;

#include "dialects/NIsa/IR/NIsaInterfaces.cpp.inc"

/// Checks what every instruction shares: its queue is one of `queues`, waits are
/// (queue, count) pairs, and on-chip patterns respect the partition count.
static LogicalResult verifyInstruction(Operation *op, ArrayRef<int> queues) {
  auto inst = cast<InstructionOpInterface>(op);
  // `queues` are local queue numbers; the same engines of every physical core qualify.
  int q = inst.getQueueId();
  if (q < 0 || q >= kNumQueues || !llvm::is_contained(queues, neuron::runtime::localQueue(q))) {
    auto diag = op->emitOpError("cannot run on queue ") << q << "; allowed:";
    for (int allowed : queues)
      diag << " " << allowed;
    return diag << " (+ " << neuron::runtime::kQueuesPerCore << " per physical core)";
  }
  int core = neuron::runtime::coreOfQueue(q);
  if (auto waits = op->getAttrOfType<DenseI32ArrayAttr>("waits")) {
    if (waits.size() % 2 != 0)
      return op->emitOpError("waits must be [queue, count] pairs");
    bool affine = op->hasAttr("wait_terms"); // counts may start <= 0 inside loops
    for (size_t i = 0; i < (size_t)waits.size(); i += 2)
      if (waits[i] < 0 || waits[i] >= kNumQueues || (waits[i + 1] <= 0 && !affine))
        return op->emitOpError("wait [") << waits[i] << ", " << waits[i + 1] << "] is invalid";
  }
  if (auto terms = op->getAttrOfType<DenseI64ArrayAttr>("wait_terms")) {
    auto waits = op->getAttrOfType<DenseI32ArrayAttr>("waits");
    int64_t numWaits = waits ? waits.size() / 2 : 0;
    if (terms.size() % 4 != 0)
      return op->emitOpError("wait_terms must be (wait, level, coef, modulus) quadruples");
    SmallVector<int64_t> flat;
    for (size_t i = 0; i < (size_t)terms.size(); i += 4) {
      if (terms[i] < 0 || terms[i] >= numWaits)
        return op->emitOpError("wait term names wait ") << terms[i] << " of " << numWaits;
      flat.append({terms[i + 1], terms[i + 2], terms[i + 3]});
    }
    if (failed(neuron::verifyTerms(op, flat, "wait")))
      return failure();
  }
  SmallVector<AccessPatternAttr> aps = inst.getReadPatterns();
  aps.push_back(inst.getWritePattern());
  for (AccessPatternAttr ap : aps) {
    if (ap.getRank() == 0)
      return op->emitOpError("access pattern without dimensions");
    if (failed(neuron::verifyTerms(op, ap.getTerms(), "access pattern")))
      return failure();
    if (ap.getSpace() == MemSpace::hbm ? ap.getCore() != 0 : int(ap.getCore()) != core)
      return op->emitOpError("on queue ")
             << q << " (physical core " << core << ") accesses the "
             << neuron::ntile::stringifyMemSpace(ap.getSpace()) << " of core " << ap.getCore();
    if (ap.getSpace() != MemSpace::hbm &&
        (ap.getSize(0) > kMaxPartitions || ap.getIndex() + ap.getSize(0) > kMaxPartitions))
      return op->emitOpError("access pattern spans partitions ")
             << ap.getIndex() << ".." << ap.getIndex() + ap.getSize(0) << ", beyond 128";
  }
  return success();
}

static SmallVector<int> dmaQueues() {
  SmallVector<int> qs;
  for (int i = 0; i < kNumDmaQueues; ++i)
    qs.push_back(kQueueDma0 + i);
  return qs;
}

static LogicalResult verifyElementwise(Operation *op, ArrayRef<AccessPatternAttr> srcs) {
  AccessPatternAttr dst = cast<InstructionOpInterface>(op).getWritePattern();
  for (AccessPatternAttr src : srcs) {
    if (src.getSpace() == MemSpace::hbm || dst.getSpace() == MemSpace::hbm)
      return op->emitOpError("compute engines read and write SBUF/PSUM only");
    if (src.getSize(0) != dst.getSize(0) || src.getFreeSize() != dst.getFreeSize())
      return op->emitOpError("operand shape [") << src.getSize(0) << ", " << src.getFreeSize()
                                                << "] differs from dst [" << dst.getSize(0)
                                                << ", " << dst.getFreeSize() << "]";
  }
  return success();
}

void LoopOp::build(OpBuilder &builder, OperationState &state, int64_t count) {
  state.addAttribute("count", builder.getI64IntegerAttr(count));
  state.addRegion()->emplaceBlock();
}
ParseResult LoopOp::parse(OpAsmParser &parser, OperationState &result) {
  return neuron::parseLoopOp(parser, result);
}
void LoopOp::print(OpAsmPrinter &printer) { neuron::printLoopOp(printer, *this); }
LogicalResult LoopOp::verify() { return neuron::verifyLoopOp(*this); }

LogicalResult BufferOp::verify() {
  if (getValue() && getKind() != BufferKind::constant)
    return emitOpError("only constant buffers carry a value");
  if (!getValue() && getKind() == BufferKind::constant)
    return emitOpError("constant buffer without a value");
  return success();
}

LogicalResult DmaCopyOp::verify() {
  if (failed(verifyInstruction(*this, dmaQueues())))
    return failure();
  if (getDst().getNumElements() != getSrc().getNumElements())
    return emitOpError("copies ") << getSrc().getNumElements() << " elements into "
                                  << getDst().getNumElements();
  if (getDst().getElementType() != getSrc().getElementType())
    return emitOpError("DMA does not convert element types");
  return success();
}

LogicalResult DmaTransposeOp::verify() {
  if (failed(verifyInstruction(*this, dmaQueues())))
    return failure();
  auto src = getSrc(), dst = getDst();
  if (src.getRank() != 2 || dst.getRank() != 2)
    return emitOpError("transposes a 2-D source into a 2-D SBUF tile");
  if (dst.getSpace() != MemSpace::sbuf || src.getSpace() == MemSpace::psum)
    return emitOpError("moves HBM or SBUF into SBUF");
  if (dst.getSize(0) != src.getSize(1) || dst.getSize(1) != src.getSize(0))
    return emitOpError("dst must be [") << src.getSize(1) << ", " << src.getSize(0)
                                        << "], the source transposed";
  if (dst.getElementType() != src.getElementType())
    return emitOpError("DMA does not convert element types");
  unsigned bits = src.getElementType().getIntOrFloatBitWidth();
  if (bits != 16 && bits != 32)
    return emitOpError("moves 2- or 4-byte elements");
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueTensor})))
    return failure();
  auto st = getStationary(), mv = getMoving(), dst = getDst();
  if (st.getSpace() != MemSpace::sbuf || mv.getSpace() != MemSpace::sbuf ||
      dst.getSpace() != MemSpace::psum)
    return emitOpError("reads SBUF and writes PSUM");
  if (st.getSize(0) != mv.getSize(0) || dst.getSize(0) != st.getFreeSize() ||
      dst.getFreeSize() != mv.getFreeSize())
    return emitOpError("shapes do not form [K, M]^T @ [K, N] -> [M, N]");
  return success();
}

LogicalResult ActivationOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueScalar})))
    return failure();
  return verifyElementwise(*this, {getSrc()});
}

LogicalResult TensorTensorOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueGpSimd})))
    return failure();
  return verifyElementwise(*this, {getLhs(), getRhs()});
}

LogicalResult TensorScalarOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueGpSimd})))
    return failure();
  if (bool(getOp2()) != bool(getScalar2()) || (getReverse2() && !getOp2()))
    return emitOpError("a second op needs both op2 and scalar2");
  if (getOp2() && (!isa<FloatType>(getSrc().getElementType()) ||
                   !isa<FloatType>(getDst().getElementType())))
    return emitOpError("with two ops computes on float tiles only");
  return verifyElementwise(*this, {getSrc()});
}

LogicalResult ScalarTensorTensorOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueGpSimd})))
    return failure();
  for (AccessPatternAttr ap : getReadPatterns())
    if (!isa<FloatType>(ap.getElementType()))
      return emitOpError("computes on float tiles only");
  if (!isa<FloatType>(getDst().getElementType()))
    return emitOpError("computes on float tiles only");
  SmallVector<AccessPatternAttr> srcs = {getData(), getOther()};
  if (getScalarTileAttr())
    srcs.push_back(getScalarTileAttr());
  return verifyElementwise(*this, srcs);
}

LogicalResult TensorTensorScanOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector})))
    return failure();
  for (AccessPatternAttr ap : getReadPatterns())
    if (!isa<FloatType>(ap.getElementType()))
      return emitOpError("computes on float tiles only");
  if (!isa<FloatType>(getDst().getElementType()))
    return emitOpError("computes on float tiles only");
  return verifyElementwise(*this, getReadPatterns());
}

/// bn_stats / bn_aggr: float patterns on the Vector queue, dst [partitions of src, width].
static LogicalResult verifyStatistics(Operation *op, AccessPatternAttr src, AccessPatternAttr dst,
                                      int64_t width) {
  if (!isa<FloatType>(src.getElementType()) || !isa<FloatType>(dst.getElementType()))
    return op->emitOpError("computes on float tiles only");
  if (src.getSize(0) != dst.getSize(0) || dst.getFreeSize() != width)
    return op->emitOpError("dst must be [partitions of src, ") << width << "]";
  return success();
}

LogicalResult BnStatsOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector})))
    return failure();
  return verifyStatistics(*this, getSrc(), getDst(), 6);
}

LogicalResult BnAggrOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector})))
    return failure();
  return verifyStatistics(*this, getSrc(), getDst(), 2);
}

LogicalResult TransposeOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueTensor})))
    return failure();
  if (getSrc().getSpace() != MemSpace::sbuf || getDst().getSpace() != MemSpace::psum)
    return emitOpError("transposes an SBUF tile into PSUM");
  return success();
}

LogicalResult MemsetOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueScalar, kQueueGpSimd})))
    return failure();
  if (getDst().getSpace() == MemSpace::hbm)
    return emitOpError("compute engines read and write SBUF/PSUM only");
  return success();
}

LogicalResult TensorCopyOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueScalar, kQueueGpSimd})))
    return failure();
  return verifyElementwise(*this, {getSrc()});
}

LogicalResult TensorReduceOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueGpSimd})))
    return failure();
  if (getSrc().getSize(0) != getDst().getSize(0) || getDst().getFreeSize() != 1)
    return emitOpError("dst must be [partitions of src, 1]");
  return success();
}

LogicalResult SelectOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueVector, kQueueGpSimd})))
    return failure();
  return verifyElementwise(*this, {getCondition(), getOnTrue(), getOnFalse()});
}

LogicalResult DmaGatherOp::verify() {
  if (failed(verifyInstruction(*this, dmaQueues())))
    return failure();
  if (getTable().getSpace() != MemSpace::hbm || getIndices().getSpace() != MemSpace::sbuf)
    return emitOpError("gathers from an HBM table with SBUF indices");
  if (getIndices().getSize(0) != getDst().getSize(0) ||
      getTable().getNumElements() / getTable().getSize(0) != getDst().getFreeSize())
    return emitOpError("one index per dst partition, one row slice per index");
  return success();
}

LogicalResult DmaScatterOp::verify() {
  if (failed(verifyInstruction(*this, dmaQueues())))
    return failure();
  if (getDst().getSpace() != MemSpace::hbm || getSrc().getSpace() != MemSpace::sbuf ||
      getIndices().getSpace() != MemSpace::sbuf)
    return emitOpError("scatters SBUF rows into an HBM table with SBUF indices");
  if (getIndices().getSize(0) != getSrc().getSize(0) || getIndices().getFreeSize() != 1 ||
      getDst().getNumElements() / getDst().getSize(0) != getSrc().getFreeSize())
    return emitOpError("one index per src partition, one row slice per index");
  if (getSrc().getElementType() != getDst().getElementType())
    return emitOpError("does not convert element types");
  if (auto a = getAccumulate();
      a && *a != neuron::AluOp::add && *a != neuron::AluOp::mul &&
      *a != neuron::AluOp::max && *a != neuron::AluOp::min)
    return emitOpError("accumulates with add, mul, max or min, not ")
           << stringifyAluOp(*a);
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NIsa/IR/NIsaOps.cpp.inc"

LogicalResult CollectiveOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueCollective})))
    return failure();
  AccessPatternAttr src = getSrc(), dst = getDst();
  if (src.getSpace() != MemSpace::hbm || dst.getSpace() != MemSpace::hbm)
    return emitOpError("reads and writes HBM only");
  if (src.getElementType() != dst.getElementType())
    return emitOpError("does not convert element types");
  int64_t expected = runtime::collectiveDstElements(
      static_cast<runtime::CollectiveKind>(getKind()), src.getNumElements(), getGroupSize());
  if (expected != dst.getNumElements())
    return emitOpError("a ") << stringifyCollectiveKind(getKind()) << " over "
                             << getGroupSize() << " ranks of " << src.getNumElements()
                             << " elements cannot write " << dst.getNumElements();
  return success();
}

LogicalResult RandomOp::verify() {
  if (failed(verifyInstruction(*this, {kQueueGpSimd})))
    return failure();
  if (getDst().getSpace() == MemSpace::hbm)
    return emitOpError("compute engines read and write SBUF/PSUM only");
  return success();
}

neuron::runtime::Instruction InstOp::describe() {
  neuron::runtime::Instruction inst;
  inst.opcode = getOpcode();
  inst.srcs.resize(getSrcs().size()); // their count matters to writesLastSource
  (void)neuron::applyIsaFields(*this, getFields(), inst); // verified: cannot fail
  return inst;
}

llvm::SmallVector<AccessPatternAttr> InstOp::getReadPatterns() {
  neuron::runtime::Instruction inst = describe();
  llvm::SmallVector<AccessPatternAttr> reads(getSrcs().getAsRange<AccessPatternAttr>());
  if (neuron::runtime::writesLastSource(inst))
    reads.pop_back();
  if (neuron::runtime::readsDst(inst))
    reads.push_back(getDst());
  return reads;
}

llvm::SmallVector<AccessPatternAttr> InstOp::getExtraWritePatterns() {
  if (!neuron::runtime::writesLastSource(describe()))
    return {};
  return {cast<AccessPatternAttr>(getSrcs()[getSrcs().size() - 1])};
}

LogicalResult InstOp::verify() {
  neuron::runtime::Instruction inst;
  inst.opcode = getOpcode();
  if (failed(neuron::applyIsaFields(*this, getFields(), inst)))
    return failure();
  SmallVector<int> queues;
  for (int q = 0; q < runtime::kQueuesPerCore; ++q)
    if (runtime::runsOn(inst.opcode, runtime::engineOfQueue(q)))
      queues.push_back(q);
  return verifyInstruction(*this, queues);
}
