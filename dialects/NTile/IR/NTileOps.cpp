// Verifiers of the ntile ops: memory spaces, tile shapes and access-pattern bounds.
#include "dialects/NTile/IR/NTileOps.h"

#include "dialects/Common/IsaFields.h"
#include "dialects/Common/LoopTerms.h"
#include "mlir/IR/Builders.h"
#include "runtime/program/Program.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace neuron::ntile;

static constexpr int64_t kMaxPartitions = 128;
static constexpr int64_t kMaxMatmulMoving = 512;

static MemRefType bufferType(Value v) { return cast<MemRefType>(v.getType()); }

static const char *spaceName(std::optional<MemSpace> s) {
  return s ? stringifyMemSpace(*s).data() : "no memory space";
}

/// A tile lives in SBUF or PSUM, is rank 2 and uses at most 128 partitions.
static LogicalResult verifyTile(Operation *op, Value v, StringRef what) {
  MemRefType t = bufferType(v);
  auto space = getMemSpace(t);
  if (!space || *space == MemSpace::hbm)
    return op->emitOpError() << what << " must be an SBUF or PSUM tile, got "
                             << spaceName(space);
  if (t.getRank() != 2)
    return op->emitOpError() << what << " must be a rank-2 tile [partitions, free], got rank "
                             << t.getRank();
  if (t.getDimSize(0) > kMaxPartitions)
    return op->emitOpError() << what << " spans " << t.getDimSize(0)
                             << " partitions; at most 128 exist";
  return success();
}

/// Operands match the target tile, or are [P, 1] tiles broadcast along the free dimension.
static LogicalResult verifyBroadcastOperands(Operation *op, ValueRange operands, Value target) {
  ArrayRef<int64_t> t = bufferType(target).getShape();
  for (Value v : operands) {
    ArrayRef<int64_t> s = bufferType(v).getShape();
    if (s != t && !(s[0] == t[0] && s[1] == 1))
      return op->emitOpError("operand tile [")
             << s[0] << ", " << s[1] << "] neither matches the target [" << t[0] << ", " << t[1]
             << "] nor broadcasts to it as [" << t[0] << ", 1]";
  }
  return success();
}

static LogicalResult verifySameShape(Operation *op, ValueRange values) {
  for (Value v : values)
    if (bufferType(v).getShape() != bufferType(values.front()).getShape())
      return op->emitOpError("tile shapes differ");
  return success();
}

LogicalResult ConstantOp::verify() {
  auto value = cast<ShapedType>(cast<TypedAttr>(getValue()).getType());
  MemRefType t = getType();
  if (getMemSpace(t) != MemSpace::hbm)
    return emitOpError("constants live in HBM");
  if (value.getShape() != t.getShape() || value.getElementType() != t.getElementType())
    return emitOpError("value type ") << value << " does not match " << t;
  return success();
}

LogicalResult ReinterpretOp::verify() {
  MemRefType in = getSource().getType(), out = getType();
  if (getMemSpace(in) != MemSpace::hbm || getMemSpace(out) != MemSpace::hbm)
    return emitOpError("reinterprets HBM buffers only");
  if (in.getNumElements() != out.getNumElements() || in.getElementType() != out.getElementType())
    return emitOpError("changes the number or type of elements");
  return success();
}

/// The access pattern stays inside the buffer in every loop iteration; tiles put
/// partitions first and keep each row inside its partition.
static LogicalResult verifyPattern(Operation *op, Value buffer, AccessPatternAttr ap,
                                   StringRef what) {
  MemRefType t = bufferType(buffer);
  for (size_t i = 0; i < ap.getRank(); ++i)
    if (ap.getSize(i) <= 0)
      return op->emitOpError() << what << " pattern has a non-positive size";
  if (failed(neuron::verifyTerms(op, ap.getTerms(), what)))
    return failure();
  auto [termLo, termHi] = neuron::termRange(ap.getTerms(), neuron::enclosingLoopCounts(op));
  auto [lo, hi] = ap.getExtent();
  if (lo + termLo < 0 || hi + termHi > t.getNumElements())
    return op->emitOpError() << what << " pattern touches elements [" << lo + termLo << ", "
                             << hi + termHi << ") of a buffer of " << t.getNumElements();
  if (getMemSpace(t) != MemSpace::hbm) {
    if (failed(verifyTile(op, buffer, what)))
      return failure();
    int64_t free = t.getDimSize(1);
    if (ap.getRank() < 1 || (ap.getSize(0) > 1 && ap.getStride(0) % free != 0))
      return op->emitOpError() << what << " pattern must put the partition dimension first";
    int64_t column = ap.getOffset() % free, rowLo = 0, rowHi = 0;
    for (size_t i = 1; i < ap.getRank(); ++i) {
      int64_t span = ap.getStride(i) * (ap.getSize(i) - 1);
      (span < 0 ? rowLo : rowHi) += span;
    }
    if (column + rowLo + termLo < 0 || column + rowHi + termHi >= free)
      return op->emitOpError() << what << " pattern crosses a partition in a free dimension";
  }
  return success();
}

LogicalResult DmaOp::verify() {
  if (failed(verifyPattern(*this, getSource(), getSourceAp(), "source")) ||
      failed(verifyPattern(*this, getTarget(), getTargetAp(), "target")))
    return failure();
  if (getSourceAp().getNumElements() != getTargetAp().getNumElements())
    return emitOpError("source pattern has ") << getSourceAp().getNumElements()
                                              << " elements, target pattern has "
                                              << getTargetAp().getNumElements();
  if (bufferType(getSource()).getElementType() != bufferType(getTarget()).getElementType())
    return emitOpError("DMA does not convert element types");
  return success();
}

LogicalResult MatmulOp::verify() {
  for (auto [v, name] : {std::pair{getStationary(), "stationary"}, {getMoving(), "moving"}}) {
    if (failed(verifyTile(*this, v, name)))
      return failure();
    if (getMemSpace(bufferType(v)) != MemSpace::sbuf)
      return emitOpError() << name << " must be in SBUF";
  }
  if (failed(verifyTile(*this, getResult(), "result")))
    return failure();
  MemRefType st = bufferType(getStationary()), mv = bufferType(getMoving()),
             ps = bufferType(getResult());
  if (getMemSpace(ps) != MemSpace::psum || !ps.getElementType().isF32())
    return emitOpError("result must be an fp32 PSUM tile");
  if (st.getDimSize(0) != mv.getDimSize(0))
    return emitOpError("stationary and moving contract over different partition counts (")
           << st.getDimSize(0) << " vs " << mv.getDimSize(0) << ")";
  if (ps.getDimSize(0) != st.getDimSize(1) || ps.getDimSize(1) != mv.getDimSize(1))
    return emitOpError("result tile must be [") << st.getDimSize(1) << ", "
                                                << mv.getDimSize(1) << "]";
  if (mv.getDimSize(1) > kMaxMatmulMoving)
    return emitOpError("moving free size ") << mv.getDimSize(1)
                                            << " exceeds one PSUM bank (512 fp32)";
  return success();
}

LogicalResult ActivationOp::verify() {
  if (failed(verifyTile(*this, getSource(), "source")) ||
      failed(verifyTile(*this, getTarget(), "target")) ||
      failed(verifySameShape(*this, {getSource(), getTarget()})))
    return failure();
  ArrayRef<int64_t> t = bufferType(getTarget()).getShape();
  for (auto [v, name] : {std::pair{getScaleTile(), "scale tile"}, {getBiasTile(), "bias tile"}}) {
    if (!v)
      continue;
    if (failed(verifyTile(*this, v, name)))
      return failure();
    ArrayRef<int64_t> s = bufferType(v).getShape();
    if (s[0] != t[0] || s[1] != 1)
      return emitOpError() << name << " [" << s[0] << ", " << s[1] << "] is not one value per "
                           << "partition of the target [" << t[0] << ", 1]";
    if (!isa<FloatType>(bufferType(v).getElementType()) ||
        !isa<FloatType>(bufferType(getSource()).getElementType()))
      return emitOpError() << "with a " << name << " computes on float tiles only";
  }
  if (Value sums = getAccum()) {
    if (failed(verifyTile(*this, sums, "sum tile")))
      return failure();
    MemRefType s = bufferType(sums);
    if (s.getDimSize(0) != t[0] || s.getDimSize(1) != 1 || !s.getElementType().isF32() ||
        !isa<FloatType>(bufferType(getTarget()).getElementType()))
      return emitOpError("sum tile must be [") << t[0] << ", 1] f32 of a float activation";
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  MemRefType s = bufferType(getSource()), t = bufferType(getTarget());
  if (ntile::getMemSpace(s) != MemSpace::sbuf || ntile::getMemSpace(t) != MemSpace::psum)
    return emitOpError("transposes an SBUF tile into a PSUM tile");
  if (s.getElementType() != t.getElementType())
    return emitOpError("keeps the element type (a transpose is bit-exact)");
  if (t.getDimSize(0) != s.getDimSize(1) || t.getDimSize(1) != s.getDimSize(0))
    return emitOpError("target must be [") << s.getDimSize(1) << ", " << s.getDimSize(0) << "]";
  if (s.getDimSize(0) > 128 || s.getDimSize(1) > 128)
    return emitOpError("transposes at most 128 x 128 elements");
  return success();
}

LogicalResult TensorTensorOp::verify() {
  for (auto [v, name] : {std::pair{getLhs(), "lhs"}, {getRhs(), "rhs"}, {getTarget(), "target"}})
    if (failed(verifyTile(*this, v, name)))
      return failure();
  return verifyBroadcastOperands(*this, {getLhs(), getRhs()}, getTarget());
}

LogicalResult TensorScalarOp::verify() {
  if (failed(verifyTile(*this, getSource(), "source")) ||
      failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  if (bool(getOp2()) != bool(getScalar2()) || (getReverse2() && !getOp2()))
    return emitOpError("a second op needs both op2 and scalar2");
  // The engine computes two ops in fp32: integer tiles would lose exactness above 2^24.
  if (getOp2() && (!isa<FloatType>(bufferType(getSource()).getElementType()) ||
                   !isa<FloatType>(bufferType(getTarget()).getElementType())))
    return emitOpError("with two ops computes on float tiles only");
  return verifySameShape(*this, {getSource(), getTarget()});
}

LogicalResult ScalarTensorTensorOp::verify() {
  for (auto [v, name] : {std::pair{getData(), "data"}, {getOther(), "other"}, {getTarget(), "target"}})
    if (failed(verifyTile(*this, v, name)))
      return failure();
  if (failed(verifySameShape(*this, {getData(), getOther(), getTarget()})))
    return failure();
  SmallVector<Value> tiles = {getData(), getOther(), getTarget()};
  if (Value s = getScalarTile()) {
    if (failed(verifyTile(*this, s, "scalar tile")))
      return failure();
    MemRefType st = bufferType(s);
    if (st.getDimSize(0) != bufferType(getTarget()).getDimSize(0) || st.getDimSize(1) != 1)
      return emitOpError("scalar tile must be one value per partition of the target");
    tiles.push_back(s);
  }
  for (Value v : tiles)
    if (!isa<FloatType>(bufferType(v).getElementType()))
      return emitOpError("computes on float tiles only");
  return success();
}

LogicalResult TensorTensorScanOp::verify() {
  for (auto [v, name] : {std::pair{getData0(), "data0"}, {getData1(), "data1"}, {getTarget(), "target"}}) {
    if (failed(verifyTile(*this, v, name)))
      return failure();
    if (!isa<FloatType>(bufferType(v).getElementType()))
      return emitOpError("computes on float tiles only");
  }
  if (Value s = getInitialTile()) {
    if (failed(verifyTile(*this, s, "initial tile")))
      return failure();
    MemRefType st = bufferType(s);
    if (st.getDimSize(0) != bufferType(getTarget()).getDimSize(0) || st.getDimSize(1) != 1)
      return emitOpError("initial tile must be one value per partition of the target");
    if (!isa<FloatType>(st.getElementType()))
      return emitOpError("computes on float tiles only");
  }
  return verifySameShape(*this, {getData0(), getData1(), getTarget()});
}

/// bn_stats / bn_aggr: float tiles, target [partitions of source, `width`].
static LogicalResult verifyStatistics(Operation *op, Value source, Value target, int64_t width) {
  if (failed(verifyTile(op, source, "source")) || failed(verifyTile(op, target, "target")))
    return failure();
  MemRefType s = bufferType(source), t = bufferType(target);
  if (!isa<FloatType>(s.getElementType()) || !isa<FloatType>(t.getElementType()))
    return op->emitOpError("computes on float tiles only");
  if (t.getDimSize(0) != s.getDimSize(0) || t.getDimSize(1) != width)
    return op->emitOpError("target must be [partitions of source, ") << width << "]";
  return success();
}

LogicalResult BnStatsOp::verify() {
  if (bufferType(getSource()).getDimSize(1) > 512)
    return emitOpError("source has more than 512 elements per partition (bn_stats_fmax)");
  return verifyStatistics(*this, getSource(), getTarget(), 6);
}

LogicalResult BnAggrOp::verify() {
  if (bufferType(getSource()).getDimSize(1) % 6 != 0)
    return emitOpError("source must hold bn_stats groups of 6 values per partition");
  return verifyStatistics(*this, getSource(), getTarget(), 2);
}

LogicalResult CopyOp::verify() {
  if (failed(verifyTile(*this, getSource(), "source")) ||
      failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  return verifySameShape(*this, {getSource(), getTarget()});
}

LogicalResult ReduceOp::verify() {
  if (failed(verifyTile(*this, getSource(), "source")) ||
      failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  if (bufferType(getTarget()).getDimSize(0) != bufferType(getSource()).getDimSize(0) ||
      bufferType(getTarget()).getDimSize(1) != 1)
    return emitOpError("target must be [partitions, 1]");
  return success();
}

LogicalResult SelectOp::verify() {
  for (auto [v, name] : {std::pair{getCondition(), "condition"}, {getOnTrue(), "on_true"},
                         {getOnFalse(), "on_false"}, {getTarget(), "target"}})
    if (failed(verifyTile(*this, v, name)))
      return failure();
  return verifyBroadcastOperands(*this, {getCondition(), getOnTrue(), getOnFalse()}, getTarget());
}

LogicalResult GatherOp::verify() {
  MemRefType table = bufferType(getTable()), idx = bufferType(getIndices()),
             target = bufferType(getTarget());
  if (getMemSpace(table) != MemSpace::hbm || table.getRank() != 2)
    return emitOpError("table must be a rank-2 HBM buffer");
  if (failed(verifyTile(*this, getIndices(), "indices")) ||
      failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  if (!isa<IntegerType>(idx.getElementType()) || idx.getDimSize(1) != 1 ||
      idx.getDimSize(0) != target.getDimSize(0))
    return emitOpError("indices must be an integer tile [P, 1] matching the target");
  if (getColumn() < 0 || getColumn() + target.getDimSize(1) > table.getDimSize(1))
    return emitOpError("columns exceed the table");
  if (table.getElementType() != target.getElementType())
    return emitOpError("gather does not convert element types");
  return success();
}

LogicalResult ScatterOp::verify() {
  MemRefType table = bufferType(getTable()), idx = bufferType(getIndices()),
             source = bufferType(getSource());
  if (getMemSpace(table) != MemSpace::hbm || table.getRank() != 2)
    return emitOpError("table must be a rank-2 HBM buffer");
  if (failed(verifyTile(*this, getIndices(), "indices")) ||
      failed(verifyTile(*this, getSource(), "source")))
    return failure();
  if (!isa<IntegerType>(idx.getElementType()) || idx.getDimSize(1) != 1 ||
      idx.getDimSize(0) != source.getDimSize(0))
    return emitOpError("indices must be an integer tile [P, 1] matching the source");
  if (getColumn() < 0 || getColumn() + source.getDimSize(1) > table.getDimSize(1))
    return emitOpError("columns exceed the table");
  if (table.getElementType() != source.getElementType())
    return emitOpError("scatter does not convert element types");
  if (auto a = getAccumulate();
      a && *a != neuron::AluOp::add && *a != neuron::AluOp::mul &&
      *a != neuron::AluOp::max && *a != neuron::AluOp::min)
    return emitOpError("accumulates with add, mul, max or min, not ")
           << stringifyAluOp(*a);
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

LogicalResult ViewOp::verify() {
  MemRefType in = getSource().getType(), out = getType();
  if (getMemSpace(in) == MemSpace::hbm || getMemSpace(in) != getMemSpace(out) ||
      in.getElementType() != out.getElementType())
    return emitOpError("views a tile as a tile of the same memory and element type");
  if (failed(verifyTile(*this, getResult(), "result")))
    return failure();
  AccessPatternAttr ap = getAp();
  // The offset's whole rows are the view's first partition (engine accesses may start at
  // partitions 0/32/64/96, which the kernel front end checks).
  int64_t free = in.getDimSize(1), column = ap.getOffset() % free,
          partition = ap.getOffset() / free;
  if (ap.getRank() != 2 || ap.getOffset() < 0 ||
      (ap.getSize(0) > 1 && ap.getStride(0) != free) ||
      (ap.getSize(1) > 1 && ap.getStride(1) != 1) || ap.getSize(0) != out.getDimSize(0) ||
      ap.getSize(1) != out.getDimSize(1))
    return emitOpError("pattern must select [")
           << out.getDimSize(0) << ", " << out.getDimSize(1)
           << "] contiguous columns of whole partitions";
  if (failed(neuron::verifyTerms(*this, ap.getTerms(), "view")))
    return failure();
  auto [termLo, termHi] = neuron::termRange(ap.getTerms(), neuron::enclosingLoopCounts(*this));
  if (partition + out.getDimSize(0) > in.getDimSize(0) || column + termLo < 0 ||
      column + termHi + out.getDimSize(1) > free)
    return emitOpError("view exceeds the tile");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NTile/IR/NTileOps.cpp.inc"

LogicalResult CollectiveOp::verify() {
  MemRefType src = bufferType(getSource()), dst = bufferType(getTarget());
  if (getMemSpace(src) != MemSpace::hbm || getMemSpace(dst) != MemSpace::hbm)
    return emitOpError("reads and writes HBM buffers only");
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
  if (failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  if (!isa<FloatType>(bufferType(getTarget()).getElementType()))
    return emitOpError("random numbers are floats");
  if (getStream() < 0 || getStream() >= (int64_t(1) << 53))
    return emitOpError("stream must be in [0, 2^53)");
  return success();
}

Value neuron::ntile::getRootBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto r = dyn_cast<ReinterpretOp>(def))
      v = r.getSource();
    else if (auto view = dyn_cast<ViewOp>(def))
      v = view.getSource();
    else
      break;
  }
  return v;
}

LogicalResult IsaOp::verify() {
  for (auto [i, v] : llvm::enumerate(getSources()))
    if (failed(verifyTile(*this, v, "source " + std::to_string(i))))
      return failure();
  if (failed(verifyTile(*this, getTarget(), "target")))
    return failure();
  if (auto broadcast = getBroadcast())
    for (int64_t i : *broadcast) {
      if (i < 0 || i >= int64_t(getSources().size()))
        return emitOpError() << "broadcast names source " << i << " of "
                             << getSources().size();
      if (bufferType(getSources()[i]).getDimSize(1) != 1)
        return emitOpError() << "broadcast source " << i << " must be a [P, 1] tile";
    }
  neuron::runtime::Instruction inst;
  inst.opcode = neuron::toRuntime(getOpcode());
  return neuron::applyIsaFields(*this, getFields(), inst);
}
