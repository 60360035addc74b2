// The convert-ntile-to-nisa pass: physical addresses for every buffer, one instruction per tile op.
#include "compiler/Conversion/NTileToNIsa/TileAllocator.h"
#include "compiler/Passes.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_CONVERTNTILETONISA
#include "compiler/Passes.h.inc"

namespace {

/// Alignment of SBUF ranges, in bytes.
constexpr int64_t kSbufAlignment = 64;
/// Transfers above this many bytes are split over DMA queues (HARDWARE.md: >= 2 KiB per
/// partition approaches a queue's peak; 32 KiB keeps the fixed cost small).
constexpr int64_t kDmaSplitBytes = 32 * 1024;

class FuncLowering {
public:
  FuncLowering(func::FuncOp func, const runtime::Target &target)
      : func(func), target(target), b(func),
        sbuf(target.sbufBytesPerPartition, kSbufAlignment),
        psum(target.psumBytesPerPartition, target.psumBankBytes) {}

  LogicalResult run();

private:
  LogicalResult lower(Operation *op, int64_t index);
  LogicalResult allocate(memref::AllocOp alloc, int64_t index);
  void declareBuffer(Value v, nisa::BufferKind kind, int32_t index, ElementsAttr value = {});

  nisa::AccessPatternAttr physical(Value buffer, ntile::AccessPatternAttr ap);
  nisa::AccessPatternAttr wholeTile(Value tile);
  void emitDma(Location loc, nisa::AccessPatternAttr dst, nisa::AccessPatternAttr src);
  nisa::AccessPatternAttr operandTile(Value tile, Value target);
  IntegerAttr queue(int q) { return b.getI32IntegerAttr(q); }
  UnitAttr unit(bool set) { return set ? b.getUnitAttr() : nullptr; }
  /// DMA queues are used round-robin.
  int nextDma() {
    int q = nisa::kQueueDma0 + nextDmaQueue;
    nextDmaQueue = (nextDmaQueue + 1) % nisa::kNumDmaQueues;
    return q;
  }
  MLIRContext *ctx() { return b.getContext(); }

  func::FuncOp func;
  const runtime::Target &target;
  OpBuilder b;
  TileAllocator sbuf, psum;
  DenseMap<Value, int64_t> lastUse;
  DenseMap<Value, uint32_t> hbmBuffer; // HBM memref -> buffer id
  DenseMap<Value, int64_t> tileAddress; // SBUF/PSUM memref -> byte offset
  uint32_t nextBufferId = 0;
  int nextDmaQueue = 0;
};

MemRefType memrefType(Value v) { return cast<MemRefType>(v.getType()); }

void FuncLowering::declareBuffer(Value v, nisa::BufferKind kind, int32_t index,
                                 ElementsAttr value) {
  MemRefType t = memrefType(v);
  uint32_t id = nextBufferId++;
  b.create<nisa::BufferOp>(v.getLoc(), id, kind, index,
                           RankedTensorType::get(t.getShape(), t.getElementType()), value);
  hbmBuffer[v] = id;
}

nisa::AccessPatternAttr FuncLowering::physical(Value buffer, ntile::AccessPatternAttr ap) {
  MemRefType t = memrefType(buffer);
  MemSpace space = *ntile::getMemSpace(t);
  SmallVector<int64_t> dims(ap.getDims());
  if (space == MemSpace::hbm)
    return nisa::AccessPatternAttr::get(b.getContext(), space, hbmBuffer.lookup(buffer),
                                        ap.getOffset(), dims, t.getElementType());
  // Tiles are [partitions, free]: element offsets in whole rows select partitions.
  int64_t free = t.getDimSize(1);
  dims[0] = ap.getSize(0) > 1 ? ap.getStride(0) / free : 1;
  return nisa::AccessPatternAttr::get(b.getContext(), space, ap.getOffset() / free,
                                      tileAddress.lookup(buffer), dims, t.getElementType());
}

nisa::AccessPatternAttr FuncLowering::operandTile(Value tile, Value target) {
  MemRefType t = memrefType(tile);
  int64_t free = memrefType(target).getDimSize(1);
  if (t.getDimSize(1) != 1 || free == 1)
    return wholeTile(tile);
  // A [P, 1] operand is read with a free stride of 0: broadcast along the row.
  return nisa::AccessPatternAttr::get(b.getContext(), *ntile::getMemSpace(t), 0,
                                      tileAddress.lookup(tile), {1, t.getDimSize(0), 0, free},
                                      t.getElementType());
}

nisa::AccessPatternAttr FuncLowering::wholeTile(Value tile) {
  MemRefType t = memrefType(tile);
  return nisa::AccessPatternAttr::get(b.getContext(), *ntile::getMemSpace(t), 0,
                                      tileAddress.lookup(tile),
                                      {1, t.getDimSize(0), 1, t.getDimSize(1)},
                                      t.getElementType());
}

/// Rows [first, first + count) of the outermost dimension of a pattern.
static nisa::AccessPatternAttr outerRows(nisa::AccessPatternAttr ap, int64_t first, int64_t count) {
  SmallVector<int64_t> dims(ap.getDims());
  dims[1] = count;
  bool onChip = ap.getSpace() != MemSpace::hbm;
  int64_t index = ap.getIndex(), offset = ap.getOffset();
  if (onChip)
    index += first * ap.getStride(0); // partitions
  else
    offset += first * ap.getStride(0); // elements
  return nisa::AccessPatternAttr::get(ap.getContext(), ap.getSpace(), index, offset, dims,
                                      ap.getElementType());
}

/// A large transfer is split by its outer rows over several DMA queues (at least 8
/// rows and kDmaSplitBytes each), as the hardware spreads one transfer over engines.
void FuncLowering::emitDma(Location loc, nisa::AccessPatternAttr dst, nisa::AccessPatternAttr src) {
  int64_t bytes = src.getNumElements() * std::max<int64_t>(1, src.getElementType().getIntOrFloatBitWidth() / 8);
  int64_t rows = src.getSize(0);
  int64_t parts = std::min<int64_t>({nisa::kNumDmaQueues, bytes / kDmaSplitBytes, rows / 8});
  if (parts < 2 || dst.getSize(0) != rows) {
    b.create<nisa::DmaCopyOp>(loc, queue(nextDma()), dst, src, nullptr);
    return;
  }
  int64_t per = (rows + parts - 1) / parts;
  for (int64_t first = 0; first < rows; first += per) {
    int64_t count = std::min(per, rows - first);
    b.create<nisa::DmaCopyOp>(loc, queue(nextDma()), outerRows(dst, first, count),
                              outerRows(src, first, count), nullptr);
  }
}

LogicalResult FuncLowering::allocate(memref::AllocOp alloc, int64_t index) {
  MemRefType t = alloc.getType();
  MemSpace space = *ntile::getMemSpace(t);
  if (space == MemSpace::hbm) {
    declareBuffer(alloc, nisa::BufferKind::internal, -1);
    return success();
  }
  TileAllocator &pool = space == MemSpace::sbuf ? sbuf : psum;
  int64_t bytes = t.getDimSize(1) * ntile::getElementBytes(t.getElementType());
  if (space == MemSpace::psum && bytes > target.psumBankBytes)
    return alloc.emitError("PSUM tile of ") << bytes << " bytes per partition exceeds a bank ("
                                            << target.psumBankBytes << " bytes)";
  pool.release(index);
  std::optional<int64_t> at = pool.allocate(bytes, lastUse.lookup(alloc.getResult()));
  if (!at)
    return alloc.emitError() << stringifyMemSpace(space) << " overflow: a tile of " << bytes
                             << " bytes per partition does not fit while " << pool.liveBytes()
                             << " of " << pool.getCapacity() << " bytes per partition are live";
  tileAddress[alloc] = *at;
  return success();
}

LogicalResult FuncLowering::lower(Operation *op, int64_t index) {
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](memref::AllocOp a) { return allocate(a, index); })
      .Case([&](ntile::ConstantOp c) {
        declareBuffer(c, nisa::BufferKind::constant, -1, c.getValue());
        return success();
      })
      .Case([&](ntile::ReinterpretOp r) {
        hbmBuffer[r] = hbmBuffer.lookup(r.getSource());
        return success();
      })
      .Case([&](ntile::DmaOp d) {
        emitDma(loc, physical(d.getTarget(), d.getTargetAp()),
                physical(d.getSource(), d.getSourceAp()));
        return success();
      })
      .Case([&](ntile::MatmulOp m) {
        b.create<nisa::MatmulOp>(loc, queue(nisa::kQueueTensor), wholeTile(m.getResult()),
                                 wholeTile(m.getStationary()), wholeTile(m.getMoving()),
                                 unit(m.getAccumulate()), nullptr);
        return success();
      })
      .Case([&](ntile::ActivationOp a) {
        b.create<nisa::ActivationOp>(loc, queue(nisa::kQueueScalar), wholeTile(a.getTarget()),
                                     a.getFnAttr(),
                                     wholeTile(a.getSource()), a.getScaleAttr(), a.getBiasAttr(),
                                     nullptr);
        return success();
      })
      .Case([&](ntile::TensorTensorOp t) {
        b.create<nisa::TensorTensorOp>(loc, queue(nisa::kQueueVector), wholeTile(t.getTarget()),
                                       t.getOpAttr(), operandTile(t.getLhs(), t.getTarget()),
                                       operandTile(t.getRhs(), t.getTarget()), nullptr);
        return success();
      })
      .Case([&](ntile::TensorScalarOp t) {
        b.create<nisa::TensorScalarOp>(loc, queue(nisa::kQueueVector), wholeTile(t.getTarget()),
                                       t.getOpAttr(),
                                       wholeTile(t.getSource()), t.getScalarAttr(),
                                       unit(t.getReverse()), nullptr);
        return success();
      })
      .Case([&](ntile::CopyOp c) {
        b.create<nisa::TensorCopyOp>(loc, queue(nisa::kQueueVector), wholeTile(c.getTarget()),
                                     wholeTile(c.getSource()), nullptr);
        return success();
      })
      .Case([&](ntile::ReduceOp r) {
        b.create<nisa::TensorReduceOp>(loc, queue(nisa::kQueueVector), wholeTile(r.getTarget()),
                                       r.getOpAttr(), wholeTile(r.getSource()), nullptr);
        return success();
      })
      .Case([&](ntile::SelectOp s) {
        b.create<nisa::SelectOp>(loc, queue(nisa::kQueueVector), wholeTile(s.getTarget()),
                                 operandTile(s.getCondition(), s.getTarget()),
                                 operandTile(s.getOnTrue(), s.getTarget()),
                                 operandTile(s.getOnFalse(), s.getTarget()), nullptr);
        return success();
      })
      .Case([&](ntile::GatherOp g) {
        MemRefType table = memrefType(g.getTable()), target = memrefType(g.getTarget());
        int64_t width = table.getDimSize(1);
        auto tableAp = nisa::AccessPatternAttr::get(
            ctx(), MemSpace::hbm, hbmBuffer.lookup(g.getTable()), g.getColumn(),
            {width, table.getDimSize(0), 1, target.getDimSize(1)}, table.getElementType());
        b.create<nisa::DmaGatherOp>(loc, queue(nextDma()), wholeTile(g.getTarget()), tableAp,
                                    wholeTile(g.getIndices()), nullptr);
        return success();
      })
      .Case([&](func::ReturnOp) { return success(); })
      .Default([](Operation *op) { return op->emitOpError("has no lowering to nisa"); });
}

LogicalResult FuncLowering::run() {
  Block &body = func.getBody().front();
  int64_t index = 0;
  for (Operation &op : body) {
    for (Value operand : op.getOperands())
      lastUse[operand] = index;
    ++index;
  }

  auto lowered = b.create<func::FuncOp>(func.getLoc(), func.getName(),
                                        b.getFunctionType({}, {}));
  b.setInsertionPointToEnd(lowered.addEntryBlock());
  for (BlockArgument arg : func.getArguments()) {
    if (auto in = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "ntile.input"))
      declareBuffer(arg, nisa::BufferKind::input, in.getInt());
    else if (auto out = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "ntile.output"))
      declareBuffer(arg, nisa::BufferKind::output, out.getInt());
    else
      return func.emitError("argument ") << arg.getArgNumber()
                                         << " is neither an ntile.input nor an ntile.output";
  }
  index = 0;
  for (Operation &op : body)
    if (failed(lower(&op, index++))) {
      lowered.erase();
      return failure();
    }
  b.create<func::ReturnOp>(func.getLoc());
  func.erase();
  return success();
}

struct ConvertNTileToNIsaPass : impl::ConvertNTileToNIsaBase<ConvertNTileToNIsaPass> {
  using ConvertNTileToNIsaBase::ConvertNTileToNIsaBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.getBody().empty() && func.getNumArguments() > 0)
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(FuncLowering(func, *t).run()))
        return signalPassFailure();
  }
};

} // namespace
} // namespace neuron::compiler
