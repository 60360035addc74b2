// The convert-ntile-to-nisa pass: physical addresses for every buffer, one instruction per
// tile op (DMAs on the first DMA queue until neuron-assign-dma-queues), ntile.loop -> nisa.loop. A tile allocated in a loop body keeps its address in
// every iteration, or rotates over the `buffers` copies the multi-buffering pass gave it.
#include "compiler/Conversion/NTileToNIsa/TileAllocator.h"
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
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

/// Where a tile lives in every partition: a byte offset plus loop terms (in bytes).
struct TileAddress {
  int64_t bytes = 0;
  SmallVector<int64_t> terms;
};

/// `terms` with every coefficient multiplied by `scale`, appended to `out`.
void appendScaled(SmallVectorImpl<int64_t> &out, ArrayRef<int64_t> terms, int64_t scale) {
  for (const LoopTerm &t : unpackTerms(terms))
    out.append({t.level, t.coef * scale, t.modulus});
}

class FuncLowering {
public:
  FuncLowering(func::FuncOp func, const runtime::Target &target)
      : func(func), target(target), b(func),
        sbuf(target.sbufBytesPerPartition, kSbufAlignment),
        psum(target.psumBytesPerPartition, target.psumBankBytes) {}

  LogicalResult run();

private:
  LogicalResult lower(Operation *op);
  LogicalResult lowerBlock(Block &block);
  void computeLiveness(Block &block);
  LogicalResult allocate(memref::AllocOp alloc);
  nisa::AccessPatternAttr tilePattern(Value tile, int64_t partition, int64_t column,
                                      ArrayRef<int64_t> columnTerms, ArrayRef<int64_t> dims);
  void declareBuffer(Value v, nisa::BufferKind kind, int32_t index, ElementsAttr value = {});

  nisa::AccessPatternAttr physical(Value buffer, ntile::AccessPatternAttr ap);
  nisa::AccessPatternAttr wholeTile(Value tile);
  nisa::AccessPatternAttr operandTile(Value tile, Value target);
  IntegerAttr queue(int q) { return b.getI32IntegerAttr(q); }
  UnitAttr unit(bool set) { return set ? b.getUnitAttr() : nullptr; }
  /// DMAs go to the first DMA queue; neuron-assign-dma-queues spreads them.
  IntegerAttr dmaQueue() { return queue(nisa::kQueueDma0); }
  MLIRContext *ctx() { return b.getContext(); }

  func::FuncOp func;
  const runtime::Target &target;
  OpBuilder b;
  TileAllocator sbuf, psum;
  DenseMap<Value, int64_t> lastUse;     // index of the last op (loop end) using a value
  DenseMap<Operation *, int64_t> order; // pre-order index of every op
  int64_t numOps = 0;
  DenseMap<Value, uint32_t> hbmBuffer;  // HBM memref -> buffer id
  DenseMap<Value, TileAddress> tileAddress; // SBUF/PSUM memref or view -> address
  uint32_t nextBufferId = 0;
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

nisa::AccessPatternAttr FuncLowering::tilePattern(Value tile, int64_t partition, int64_t column,
                                                  ArrayRef<int64_t> columnTerms,
                                                  ArrayRef<int64_t> dims) {
  MemRefType t = memrefType(tile);
  int64_t elementBytes = ntile::getElementBytes(t.getElementType());
  const TileAddress &address = tileAddress.find(tile)->second;
  SmallVector<int64_t> terms(address.terms);
  appendScaled(terms, columnTerms, elementBytes);
  return nisa::AccessPatternAttr::get(b.getContext(), *ntile::getMemSpace(t), partition,
                                      address.bytes + column * elementBytes, dims,
                                      t.getElementType(), terms);
}

nisa::AccessPatternAttr FuncLowering::physical(Value buffer, ntile::AccessPatternAttr ap) {
  MemRefType t = memrefType(buffer);
  MemSpace space = *ntile::getMemSpace(t);
  SmallVector<int64_t> dims(ap.getDims());
  if (space == MemSpace::hbm)
    return nisa::AccessPatternAttr::get(b.getContext(), space, hbmBuffer.lookup(buffer),
                                        ap.getOffset(), dims, t.getElementType(),
                                        ap.getTerms());
  // Tiles are [partitions, free]: element offsets in whole rows select partitions.
  int64_t free = t.getDimSize(1);
  dims[0] = ap.getSize(0) > 1 ? ap.getStride(0) / free : 1;
  return tilePattern(buffer, ap.getOffset() / free, ap.getOffset() % free, ap.getTerms(), dims);
}

nisa::AccessPatternAttr FuncLowering::operandTile(Value tile, Value target) {
  MemRefType t = memrefType(tile);
  int64_t free = memrefType(target).getDimSize(1);
  if (t.getDimSize(1) != 1 || free == 1)
    return wholeTile(tile);
  // A [P, 1] operand is read with a free stride of 0: broadcast along the row.
  return tilePattern(tile, 0, 0, {}, {1, t.getDimSize(0), 0, free});
}

nisa::AccessPatternAttr FuncLowering::wholeTile(Value tile) {
  MemRefType t = memrefType(tile);
  return tilePattern(tile, 0, 0, {}, {1, t.getDimSize(0), 1, t.getDimSize(1)});
}

LogicalResult FuncLowering::allocate(memref::AllocOp alloc) {
  MemRefType t = alloc.getType();
  MemSpace space = *ntile::getMemSpace(t);
  if (space == MemSpace::hbm) {
    if (!enclosingLoopCounts(alloc).empty())
      return alloc.emitError("HBM buffers are allocated outside loops");
    declareBuffer(alloc, nisa::BufferKind::internal, -1);
    return success();
  }
  TileAllocator &pool = space == MemSpace::sbuf ? sbuf : psum;
  int64_t bytes = t.getDimSize(1) * ntile::getElementBytes(t.getElementType());
  if (space == MemSpace::psum && bytes > target.psumBankBytes)
    return alloc.emitError("PSUM tile of ") << bytes << " bytes per partition exceeds a bank ("
                                            << target.psumBankBytes << " bytes)";
  // A tile in a loop body rotates over `buffers` copies, one per iteration.
  int64_t buffers = 1;
  if (auto attr = alloc->getAttrOfType<IntegerAttr>("buffers"))
    buffers = attr.getInt();
  int64_t alignment = space == MemSpace::sbuf ? kSbufAlignment : target.psumBankBytes;
  int64_t stride = (bytes + alignment - 1) / alignment * alignment;
  int64_t index = order.lookup(alloc);
  pool.release(index);
  std::optional<int64_t> at =
      pool.allocate(buffers > 1 ? stride * buffers : bytes, lastUse.lookup(alloc.getResult()));
  if (!at)
  {
    InFlightDiagnostic diag = alloc.emitError()
                              << stringifyMemSpace(space) << " overflow: a tile of " << bytes
                              << " bytes per partition";
    if (buffers > 1)
      diag << " (x" << buffers << " buffers)";
    return diag << " does not fit while " << pool.liveBytes() << " of " << pool.getCapacity()
                << " bytes per partition are live";
  }
  TileAddress address{*at, {}};
  if (buffers > 1)
    address.terms = {(int64_t)enclosingLoopCounts(alloc).size() - 1, stride, buffers};
  tileAddress[alloc] = address;
  return success();
}

LogicalResult FuncLowering::lowerBlock(Block &block) {
  for (Operation &op : block)
    if (failed(lower(&op)))
      return failure();
  return success();
}

LogicalResult FuncLowering::lower(Operation *op) {
  Location loc = op->getLoc();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](memref::AllocOp a) { return allocate(a); })
      .Case([&](ntile::LoopOp l) {
        auto loop = b.create<nisa::LoopOp>(loc, l.getCount());
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&loop.getBody().front());
        return lowerBlock(l.getBody().front());
      })
      .Case([&](ntile::ViewOp v) {
        MemRefType source = memrefType(v.getSource());
        int64_t elementBytes = ntile::getElementBytes(source.getElementType());
        TileAddress address = tileAddress.lookup(v.getSource());
        address.bytes += v.getAp().getOffset() * elementBytes;
        appendScaled(address.terms, v.getAp().getTerms(), elementBytes);
        tileAddress[v] = address;
        return success();
      })
      .Case([&](ntile::ConstantOp c) {
        declareBuffer(c, nisa::BufferKind::constant, -1, c.getValue());
        return success();
      })
      .Case([&](ntile::ReinterpretOp r) {
        hbmBuffer[r] = hbmBuffer.lookup(r.getSource());
        return success();
      })
      .Case([&](ntile::DmaOp d) {
        b.create<nisa::DmaCopyOp>(loc, dmaQueue(), physical(d.getTarget(), d.getTargetAp()),
                                  physical(d.getSource(), d.getSourceAp()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::MatmulOp m) {
        b.create<nisa::MatmulOp>(loc, queue(nisa::kQueueTensor), wholeTile(m.getResult()),
                                 wholeTile(m.getStationary()), wholeTile(m.getMoving()),
                                 unit(m.getAccumulate()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::ActivationOp a) {
        b.create<nisa::ActivationOp>(loc, queue(nisa::kQueueScalar), wholeTile(a.getTarget()),
                                     a.getFnAttr(),
                                     wholeTile(a.getSource()), a.getScaleAttr(), a.getBiasAttr(),
                                     nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::TensorTensorOp t) {
        b.create<nisa::TensorTensorOp>(loc, queue(nisa::kQueueVector), wholeTile(t.getTarget()),
                                       t.getOpAttr(), operandTile(t.getLhs(), t.getTarget()),
                                       operandTile(t.getRhs(), t.getTarget()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::TensorScalarOp t) {
        b.create<nisa::TensorScalarOp>(loc, queue(nisa::kQueueVector), wholeTile(t.getTarget()),
                                       t.getOpAttr(),
                                       wholeTile(t.getSource()), t.getScalarAttr(),
                                       unit(t.getReverse()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::CopyOp c) {
        b.create<nisa::TensorCopyOp>(loc, queue(nisa::kQueueVector), wholeTile(c.getTarget()),
                                     wholeTile(c.getSource()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::ReduceOp r) {
        b.create<nisa::TensorReduceOp>(loc, queue(nisa::kQueueVector), wholeTile(r.getTarget()),
                                       r.getOpAttr(), wholeTile(r.getSource()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::SelectOp s) {
        b.create<nisa::SelectOp>(loc, queue(nisa::kQueueVector), wholeTile(s.getTarget()),
                                 operandTile(s.getCondition(), s.getTarget()),
                                 operandTile(s.getOnTrue(), s.getTarget()),
                                 operandTile(s.getOnFalse(), s.getTarget()), nullptr, nullptr);
        return success();
      })
      .Case([&](ntile::GatherOp g) {
        MemRefType table = memrefType(g.getTable()), target = memrefType(g.getTarget());
        int64_t width = table.getDimSize(1);
        auto tableAp = nisa::AccessPatternAttr::get(
            ctx(), MemSpace::hbm, hbmBuffer.lookup(g.getTable()), g.getColumn(),
            {width, table.getDimSize(0), 1, target.getDimSize(1)}, table.getElementType());
        b.create<nisa::DmaGatherOp>(loc, dmaQueue(), wholeTile(g.getTarget()), tableAp,
                                    wholeTile(g.getIndices()), nullptr, nullptr);
        return success();
      })
      .Case([&](func::ReturnOp) { return success(); })
      .Default([](Operation *op) { return op->emitOpError("has no lowering to nisa"); });
}

/// Numbers ops in pre-order. A value is live until the last op that uses it, where a
/// use inside a loop counts as the end of the loop in the value's own block: the loop
/// reads the value again in every iteration.
void FuncLowering::computeLiveness(Block &block) {
  block.walk([&](Operation *op) { order[op] = numOps++; });
  DenseMap<Operation *, int64_t> end; // pre-order index of an op's last descendant
  block.walk([&](Operation *op) {
    int64_t last = order[op];
    op->walk([&](Operation *inner) { last = std::max(last, order[inner]); });
    end[op] = last;
  });
  auto use = [&](Value v, Operation *user) {
    Block *home = v.getParentBlock();
    if (Operation *at = home ? home->findAncestorOpInBlock(*user) : nullptr)
      lastUse[v] = std::max(lastUse.lookup(v), end[at]);
  };
  block.walk([&](Operation *user) {
    for (Value operand : user->getOperands()) {
      use(operand, user);
      // A view keeps the tile it looks into alive.
      for (Value v = operand; auto view = v.getDefiningOp<ntile::ViewOp>();) {
        v = view.getSource();
        use(v, user);
      }
    }
    // A tile allocated in a loop body is rewritten by the next iteration: it holds its
    // memory until the loop ends, so that no other tile of the body shares it.
    if (auto alloc = dyn_cast<memref::AllocOp>(user))
      if (auto loop = dyn_cast_or_null<ntile::LoopOp>(alloc->getParentOp()))
        lastUse[alloc] = std::max(lastUse.lookup(alloc), end[loop]);
  });
}

LogicalResult FuncLowering::run() {
  Block &body = func.getBody().front();
  computeLiveness(body);

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
  if (failed(lowerBlock(body))) {
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
