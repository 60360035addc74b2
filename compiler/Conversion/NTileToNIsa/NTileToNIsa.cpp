// The convert-ntile-to-nisa pass: one nisa instruction per ntile op, on physical addresses.
//
// HBM buffers (arguments, allocations, constants) become numbered nisa.buffer declarations;
// SBUF/PSUM tiles sit at the byte offset neuron-allocate-tiles gave them, rotating over their
// `ntile.buffers` copies with the iterations of their loop; ntile.loop becomes nisa.loop.
// DMAs go to the first DMA queue until neuron-assign-dma-queues spreads them.
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NIsa/IR/NIsaOps.h"
#include "dialects/NTile/IR/NTileOps.h"
#include "runtime/program/Isa.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_CONVERTNTILETONISA
#include "compiler/Passes.h.inc"

namespace {

MemRefType memrefType(Value v) { return cast<MemRefType>(v.getType()); }

/// What the patterns share: HBM buffer ids and how to address a tile.
class PhysicalMemory {
public:
  PhysicalMemory(MLIRContext *ctx, const runtime::Target &target) : ctx(ctx), target(target) {}

  /// Declares every HBM buffer of `func` at the start of its body, numbered in order:
  /// arguments, then allocations and constants.
  LogicalResult declareBuffers(func::FuncOp func);

  /// All of an HBM buffer, as one contiguous run.
  nisa::AccessPatternAttr wholeBuffer(Value buffer) const;
  /// The physical form of `ap` on `buffer` (HBM, or a tile or view of one).
  nisa::AccessPatternAttr physical(Value buffer, ntile::AccessPatternAttr ap) const;
  /// All of a tile, partitions first.
  nisa::AccessPatternAttr wholeTile(Value tile) const;
  /// A compute operand: a [P, 1] tile broadcasts along `target`'s free dimension.
  nisa::AccessPatternAttr operandTile(Value tile, Value target) const;
  /// The table of a gather: row 0 of the HBM buffer, `columns` from `column`.
  nisa::AccessPatternAttr gatherTable(Value table, int64_t column, int64_t columns) const;

private:
  /// Byte offset in every partition and loop terms (bytes) of a tile or view, and the first
  /// partition of a view (a view's offset of whole rows of its source selects partitions).
  std::tuple<int64_t, SmallVector<int64_t>, int64_t> tileAddress(Value tile) const;
  nisa::AccessPatternAttr tilePattern(Value tile, int64_t partition, int64_t column,
                                      ArrayRef<int64_t> columnTerms, ArrayRef<int64_t> dims) const;
  uint32_t hbmBuffer(Value v) const;

  MLIRContext *ctx;
  const runtime::Target &target;
  DenseMap<Value, uint32_t> hbmBuffers;
};

/// `terms` with every coefficient multiplied by `scale`, appended to `out`.
void appendScaled(SmallVectorImpl<int64_t> &out, ArrayRef<int64_t> terms, int64_t scale) {
  for (const LoopTerm &t : unpackTerms(terms))
    out.append({t.level, t.coef * scale, t.modulus});
}

LogicalResult PhysicalMemory::declareBuffers(func::FuncOp func) {
  Block &body = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  uint32_t next = 0;
  auto declare = [&](Value v, nisa::BufferKind kind, int32_t index, ElementsAttr value) {
    MemRefType t = memrefType(v);
    b.create<nisa::BufferOp>(v.getLoc(), next, kind, index,
                             RankedTensorType::get(t.getShape(), t.getElementType()), value);
    hbmBuffers[v] = next++;
  };
  for (BlockArgument arg : func.getArguments()) {
    if (auto in = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "ntile.input"))
      declare(arg, nisa::BufferKind::input, in.getInt(), {});
    else if (auto out = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "ntile.output"))
      declare(arg, nisa::BufferKind::output, out.getInt(), {});
    else
      return func.emitError("argument ") << arg.getArgNumber()
                                         << " is neither an ntile.input nor an ntile.output";
  }
  WalkResult result = body.walk([&](Operation *op) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (ntile::getMemSpace(alloc.getType()) != MemSpace::hbm) {
        if (!alloc->hasAttr(ntile::kAddressAttr)) {
          alloc.emitError("tile has no address: run neuron-allocate-tiles first");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      }
      if (!enclosingLoopCounts(alloc).empty()) {
        alloc.emitError("HBM buffers are allocated outside loops");
        return WalkResult::interrupt();
      }
      declare(alloc, nisa::BufferKind::internal, -1, {});
    } else if (auto constant = dyn_cast<ntile::ConstantOp>(op)) {
      declare(constant, nisa::BufferKind::constant, -1, constant.getValue());
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

uint32_t PhysicalMemory::hbmBuffer(Value v) const {
  while (auto r = v.getDefiningOp<ntile::ReinterpretOp>())
    v = r.getSource();
  return hbmBuffers.lookup(v);
}

std::tuple<int64_t, SmallVector<int64_t>, int64_t>
PhysicalMemory::tileAddress(Value tile) const {
  if (auto view = tile.getDefiningOp<ntile::ViewOp>()) {
    auto [bytes, terms, partition] = tileAddress(view.getSource());
    int64_t elementBytes = ntile::getElementBytes(memrefType(tile).getElementType());
    appendScaled(terms, view.getAp().getTerms(), elementBytes);
    // The view's constant offset in elements of its source's [partitions, free] layout: whole
    // rows are partitions (engines read tiles starting at partitions 0/32/64/96).
    int64_t rowElems = memrefType(view.getSource()).getDimSize(1);
    int64_t offset = view.getAp().getOffset();
    return {bytes + (offset % rowElems) * elementBytes, terms, partition + offset / rowElems};
  }
  auto alloc = tile.getDefiningOp<memref::AllocOp>();
  int64_t bytes = alloc->getAttrOfType<IntegerAttr>(ntile::kAddressAttr).getInt();
  SmallVector<int64_t> terms;
  if (int64_t buffers = ntile::getBufferCount(alloc); buffers > 1)
    terms = {(int64_t)enclosingLoopCounts(alloc).size() - 1,
             ntile::getBufferStride(alloc.getType(), target.psumBankBytes), buffers};
  return {bytes, terms, 0};
}

nisa::AccessPatternAttr PhysicalMemory::tilePattern(Value tile, int64_t partition, int64_t column,
                                                    ArrayRef<int64_t> columnTerms,
                                                    ArrayRef<int64_t> dims) const {
  MemRefType t = memrefType(tile);
  int64_t elementBytes = ntile::getElementBytes(t.getElementType());
  auto [bytes, terms, first] = tileAddress(tile);
  partition += first;
  appendScaled(terms, columnTerms, elementBytes);
  Value root = tile;
  while (auto view = root.getDefiningOp<ntile::ViewOp>())
    root = view.getSource();
  return nisa::AccessPatternAttr::get(ctx, *ntile::getMemSpace(t), partition,
                                      bytes + column * elementBytes, dims, t.getElementType(),
                                      terms, uint32_t(ntile::getCore(root.getDefiningOp())));
}

nisa::AccessPatternAttr PhysicalMemory::physical(Value buffer, ntile::AccessPatternAttr ap) const {
  MemRefType t = memrefType(buffer);
  SmallVector<int64_t> dims(ap.getDims());
  if (*ntile::getMemSpace(t) == MemSpace::hbm)
    return nisa::AccessPatternAttr::get(ctx, MemSpace::hbm, hbmBuffer(buffer), ap.getOffset(),
                                        dims, t.getElementType(), ap.getTerms(), 0u);
  // Tiles are [partitions, free]: element offsets in whole rows select partitions.
  int64_t free = t.getDimSize(1);
  dims[0] = ap.getSize(0) > 1 ? ap.getStride(0) / free : 1;
  return tilePattern(buffer, ap.getOffset() / free, ap.getOffset() % free, ap.getTerms(), dims);
}

nisa::AccessPatternAttr PhysicalMemory::wholeTile(Value tile) const {
  MemRefType t = memrefType(tile);
  return tilePattern(tile, 0, 0, {}, {1, t.getDimSize(0), 1, t.getDimSize(1)});
}

nisa::AccessPatternAttr PhysicalMemory::wholeBuffer(Value buffer) const {
  MemRefType t = memrefType(buffer);
  return nisa::AccessPatternAttr::get(ctx, MemSpace::hbm, hbmBuffer(buffer), 0,
                                      {1, t.getNumElements()}, t.getElementType());
}

nisa::AccessPatternAttr PhysicalMemory::operandTile(Value tile, Value target) const {
  MemRefType t = memrefType(tile);
  int64_t free = memrefType(target).getDimSize(1);
  if (t.getDimSize(1) != 1 || free == 1)
    return wholeTile(tile);
  // A [P, 1] operand is read with a free stride of 0: broadcast along the row.
  return tilePattern(tile, 0, 0, {}, {1, t.getDimSize(0), 0, free});
}

nisa::AccessPatternAttr PhysicalMemory::gatherTable(Value table, int64_t column,
                                                    int64_t columns) const {
  MemRefType t = memrefType(table);
  int64_t width = t.getDimSize(1);
  return nisa::AccessPatternAttr::get(ctx, MemSpace::hbm, hbmBuffer(table), column,
                                      {width, t.getDimSize(0), 1, columns}, t.getElementType());
}

/// A pattern with the shared physical memory and attribute helpers.
template <typename Op>
struct ToNIsa : OpConversionPattern<Op> {
  ToNIsa(MLIRContext *ctx, const PhysicalMemory &memory)
      : OpConversionPattern<Op>(ctx), memory(memory) {}

  /// Local queue `q` of the physical core that runs `op`.
  IntegerAttr queue(ConversionPatternRewriter &r, Operation *op, int q) const {
    return r.getI32IntegerAttr(runtime::queueOf(ntile::getCore(op), q));
  }
  /// The Vector queue, or the engine named by the op's `ntile.engine` attribute ("vector",
  /// "gpsimd", "scalar": custom kernels choose the engine of ALU work and copies; the
  /// simulator checks that the engine runs the opcode). Null after an error.
  IntegerAttr aluQueue(ConversionPatternRewriter &r, Operation *op) const {
    auto engine = op->getAttrOfType<StringAttr>("ntile.engine");
    if (!engine || engine.getValue() == "vector")
      return queue(r, op, nisa::kQueueVector);
    if (engine.getValue() == "gpsimd")
      return queue(r, op, nisa::kQueueGpSimd);
    if (engine.getValue() == "scalar")
      return queue(r, op, nisa::kQueueScalar);
    op->emitError("unknown engine '") << engine.getValue()
                                      << "' (ntile.engine: vector, gpsimd or scalar)";
    return nullptr;
  }
  /// Marks `to` as keeping the engine its kernel author chose on `from` (ntile.engine), so
  /// that neuron-balance-engines does not move it.
  static void keepChosenEngine(Operation *from, Operation *to) {
    if (from->hasAttr("ntile.engine"))
      to->setAttr("nisa.engine_chosen", UnitAttr::get(to->getContext()));
  }
  UnitAttr unit(ConversionPatternRewriter &r, bool set) const {
    return set ? r.getUnitAttr() : nullptr;
  }

  const PhysicalMemory &memory;
};

/// Ops that only name memory (allocations, constants, views) leave no instruction.
template <typename Op>
struct EraseMemoryOp : ToNIsa<Op> {
  using ToNIsa<Op>::ToNIsa;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor,
                                ConversionPatternRewriter &r) const override {
    r.eraseOp(op);
    return success();
  }
};

struct LoopToNIsa : ToNIsa<ntile::LoopOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::LoopOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    auto loop = r.create<nisa::LoopOp>(op.getLoc(), op.getCount());
    r.eraseBlock(&loop.getBody().front());
    r.inlineRegionBefore(op.getBody(), loop.getBody(), loop.getBody().end());
    r.eraseOp(op);
    return success();
  }
};

struct DmaToNIsa : ToNIsa<ntile::DmaOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::DmaOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    auto copy = r.replaceOpWithNewOp<nisa::DmaCopyOp>(
        op, queue(r, op, nisa::kQueueDma0), memory.physical(op.getTarget(), op.getTargetAp()),
        memory.physical(op.getSource(), op.getSourceAp()), nullptr, nullptr);
    if (op->hasAttr(ntile::kPrefetchAttr))
      copy->setAttr(nisa::kPrefetchAttr, r.getUnitAttr());
    return success();
  }
};

struct GatherToNIsa : ToNIsa<ntile::GatherOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::GatherOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    int64_t columns = memrefType(op.getTarget()).getDimSize(1);
    r.replaceOpWithNewOp<nisa::DmaGatherOp>(
        op, queue(r, op, nisa::kQueueDma0), memory.wholeTile(op.getTarget()),
        memory.gatherTable(op.getTable(), op.getColumn(), columns),
        memory.wholeTile(op.getIndices()), nullptr, nullptr);
    return success();
  }
};

struct ScatterToNIsa : ToNIsa<ntile::ScatterOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::ScatterOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    int64_t columns = memrefType(op.getSource()).getDimSize(1);
    r.replaceOpWithNewOp<nisa::DmaScatterOp>(
        op, queue(r, op, nisa::kQueueDma0),
        memory.gatherTable(op.getTable(), op.getColumn(), columns),
        memory.wholeTile(op.getSource()), memory.wholeTile(op.getIndices()),
        op.getAccumulateAttr(), nullptr, nullptr);
    return success();
  }
};

struct CollectiveToNIsa : ToNIsa<ntile::CollectiveOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::CollectiveOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    // The collective queue is the logical core's (one for all its physical cores).
    r.replaceOpWithNewOp<nisa::CollectiveOp>(
        op, r.getI32IntegerAttr(nisa::kQueueCollective), memory.wholeBuffer(op.getTarget()),
        op.getKindAttr(), op.getReduceAttr(), op.getGroupAttr(), op.getGroupSizeAttr(),
        memory.wholeBuffer(op.getSource()), nullptr, nullptr);
    return success();
  }
};

struct RandomToNIsa : ToNIsa<ntile::RandomOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::RandomOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    r.replaceOpWithNewOp<nisa::RandomOp>(op, queue(r, op, nisa::kQueueGpSimd),
                                         memory.wholeTile(op.getTarget()), op.getStreamAttr(),
                                         nullptr, nullptr);
    return success();
  }
};

struct MatmulToNIsa : ToNIsa<ntile::MatmulOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::MatmulOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    bool uncounted = op->hasAttr("ntile.uncounted"); // a kernel's (its FLOPs declared)
    auto matmul = r.replaceOpWithNewOp<nisa::MatmulOp>(
        op, queue(r, op, nisa::kQueueTensor), memory.wholeTile(op.getResult()),
        memory.wholeTile(op.getStationary()), memory.wholeTile(op.getMoving()),
        unit(r, op.getAccumulate()), nullptr, nullptr);
    if (uncounted)
      matmul->setAttr("nisa.uncounted", r.getUnitAttr());
    return success();
  }
};

struct TransposeToNIsa : ToNIsa<ntile::TransposeOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::TransposeOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    r.replaceOpWithNewOp<nisa::TransposeOp>(op, queue(r, op, nisa::kQueueTensor),
                                            memory.wholeTile(op.getTarget()),
                                            memory.wholeTile(op.getSource()), nullptr, nullptr);
    return success();
  }
};

struct ActivationToNIsa : ToNIsa<ntile::ActivationOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::ActivationOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    auto tile = [&](Value v) {
      return v ? memory.operandTile(v, op.getTarget()) : nisa::AccessPatternAttr();
    };
    r.replaceOpWithNewOp<nisa::ActivationOp>(
        op, queue(r, op, nisa::kQueueScalar), memory.wholeTile(op.getTarget()), op.getFnAttr(),
        memory.wholeTile(op.getSource()), op.getScaleAttr(), op.getBiasAttr(),
        tile(op.getScaleTile()), tile(op.getBiasTile()),
        op.getAccum() ? memory.wholeTile(op.getAccum()) : nisa::AccessPatternAttr(), nullptr,
        nullptr);
    return success();
  }
};

struct TensorTensorToNIsa : ToNIsa<ntile::TensorTensorOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::TensorTensorOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    Operation *source = op;
    keepChosenEngine(source, r.replaceOpWithNewOp<nisa::TensorTensorOp>(
                                 op, q, memory.wholeTile(op.getTarget()), op.getOpAttr(),
                                 memory.operandTile(op.getLhs(), op.getTarget()),
                                 memory.operandTile(op.getRhs(), op.getTarget()), nullptr,
                                 nullptr));
    return success();
  }
};

struct TensorScalarToNIsa : ToNIsa<ntile::TensorScalarOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::TensorScalarOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    Operation *source = op;
    keepChosenEngine(source, r.replaceOpWithNewOp<nisa::TensorScalarOp>(
                                 op, q, memory.wholeTile(op.getTarget()), op.getOpAttr(),
                                 memory.wholeTile(op.getSource()), op.getScalarAttr(),
                                 unit(r, op.getReverse()), op.getOp2Attr(),
                                 op.getScalar2Attr(), unit(r, op.getReverse2()), nullptr,
                                 nullptr));
    return success();
  }
};

struct ScalarTensorTensorToNIsa : ToNIsa<ntile::ScalarTensorTensorOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::ScalarTensorTensorOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    Operation *source = op;
    Value tile = op.getScalarTile();
    keepChosenEngine(source, r.replaceOpWithNewOp<nisa::ScalarTensorTensorOp>(
                                 op, q, memory.wholeTile(op.getTarget()), op.getOp0Attr(),
                                 op.getOp1Attr(), memory.wholeTile(op.getData()),
                                 op.getScalarAttr(),
                                 tile ? memory.operandTile(tile, op.getTarget())
                                      : nisa::AccessPatternAttr(),
                                 memory.wholeTile(op.getOther()), unit(r, op.getReverse0()),
                                 unit(r, op.getReverse1()), nullptr, nullptr));
    return success();
  }
};

struct TensorTensorScanToNIsa : ToNIsa<ntile::TensorTensorScanOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::TensorTensorScanOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    Value tile = op.getInitialTile();
    r.replaceOpWithNewOp<nisa::TensorTensorScanOp>(
        op, queue(r, op, nisa::kQueueVector), memory.wholeTile(op.getTarget()),
        op.getOp0Attr(), op.getOp1Attr(), memory.wholeTile(op.getData0()),
        memory.wholeTile(op.getData1()), op.getInitialAttr(),
        tile ? memory.operandTile(tile, op.getTarget()) : nisa::AccessPatternAttr(), nullptr,
        nullptr);
    return success();
  }
};

/// ntile.isa: the instruction on the engine its kernel chose (ntile.engine), else the first
/// engine of its ISA-table row; whole tiles, the `broadcast` sources read with free stride 0.
struct IsaToNIsa : ToNIsa<ntile::IsaOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::IsaOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    runtime::Opcode opcode = toRuntime(op.getOpcode());
    std::optional<runtime::Engine> engine;
    if (auto chosen = op->getAttrOfType<StringAttr>("ntile.engine")) {
      for (int e = 0; e < runtime::kNumEngines; ++e)
        if (chosen.getValue() == runtime::engineName(runtime::Engine(e)))
          engine = runtime::Engine(e);
      if (!engine || !runtime::runsOn(opcode, *engine))
        return op->emitError() << runtime::instructionInfo(opcode).name
                               << " does not run on the engine '" << chosen.getValue() << "'";
    } else {
      for (int e = 0; e < runtime::kNumEngines && !engine; ++e)
        if (runtime::runsOn(opcode, runtime::Engine(e)))
          engine = runtime::Engine(e);
    }
    int local = -1;
    for (int q = 0; q < runtime::kQueuesPerCore && local < 0; ++q)
      if (runtime::engineOfQueue(q) == *engine)
        local = q;
    SmallVector<Attribute> srcs;
    ArrayRef<int64_t> broadcast;
    if (auto b = op.getBroadcast())
      broadcast = *b;
    for (auto [i, v] : llvm::enumerate(op.getSources()))
      srcs.push_back(llvm::is_contained(broadcast, int64_t(i))
                         ? memory.operandTile(v, op.getTarget())
                         : memory.wholeTile(v));
    auto inst = r.replaceOpWithNewOp<nisa::InstOp>(
        op, queue(r, op, local), memory.wholeTile(op.getTarget()), op.getOpcodeAttr(),
        r.getArrayAttr(srcs), op.getFieldsAttr(), nullptr, nullptr);
    inst->setAttr("nisa.engine_chosen", r.getUnitAttr()); // not a balancing candidate
    return success();
  }
};

/// bn_stats and bn_aggr: one source, on the Vector engine.
template <class From, class To> struct StatisticsToNIsa : ToNIsa<From> {
  using ToNIsa<From>::ToNIsa;
  LogicalResult matchAndRewrite(From op, typename From::Adaptor,
                                ConversionPatternRewriter &r) const override {
    r.replaceOpWithNewOp<To>(op, this->queue(r, op, nisa::kQueueVector),
                             this->memory.wholeTile(op.getTarget()),
                             this->memory.wholeTile(op.getSource()), nullptr, nullptr);
    return success();
  }
};
using BnStatsToNIsa = StatisticsToNIsa<ntile::BnStatsOp, nisa::BnStatsOp>;
using BnAggrToNIsa = StatisticsToNIsa<ntile::BnAggrOp, nisa::BnAggrOp>;

struct CopyToNIsa : ToNIsa<ntile::CopyOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::CopyOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    Operation *source = op;
    keepChosenEngine(source, r.replaceOpWithNewOp<nisa::TensorCopyOp>(
                                 op, q, memory.wholeTile(op.getTarget()),
                                 memory.wholeTile(op.getSource()), nullptr, nullptr));
    return success();
  }
};

struct ReduceToNIsa : ToNIsa<ntile::ReduceOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::ReduceOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    r.replaceOpWithNewOp<nisa::TensorReduceOp>(op, q,
                                               memory.wholeTile(op.getTarget()), op.getOpAttr(),
                                               memory.wholeTile(op.getSource()), nullptr, nullptr);
    return success();
  }
};

struct SelectToNIsa : ToNIsa<ntile::SelectOp> {
  using ToNIsa::ToNIsa;
  LogicalResult matchAndRewrite(ntile::SelectOp op, OpAdaptor,
                                ConversionPatternRewriter &r) const override {
    IntegerAttr q = aluQueue(r, op);
    if (!q)
      return failure();
    r.replaceOpWithNewOp<nisa::SelectOp>(
        op, q, memory.wholeTile(op.getTarget()),
        memory.operandTile(op.getCondition(), op.getTarget()),
        memory.operandTile(op.getOnTrue(), op.getTarget()),
        memory.operandTile(op.getOnFalse(), op.getTarget()), nullptr, nullptr);
    return success();
  }
};

struct ConvertNTileToNIsaPass : impl::ConvertNTileToNIsaBase<ConvertNTileToNIsaPass> {
  using ConvertNTileToNIsaBase::ConvertNTileToNIsaBase;

  void runOnOperation() override {
    const runtime::Target *t = runtime::findTarget(target);
    if (!t) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    ConversionTarget legal(*ctx);
    legal.addLegalDialect<nisa::NIsaDialect>();
    legal.addLegalOp<func::FuncOp, func::ReturnOp, ModuleOp>();
    legal.addIllegalDialect<ntile::NTileDialect>();
    legal.addIllegalOp<memref::AllocOp>();

    for (auto func : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      if (func.getBody().empty() || func.getNumArguments() == 0)
        continue;
      // Every op of a nest that runs on another physical core names its core itself:
      // the conversion moves loop bodies out of the ntile.loop that carries it.
      WalkResult cores = func.walk([&](Operation *op) {
        int64_t core = ntile::getCore(op);
        if (core < 0 || core >= t->physicalCores) {
          op->emitError("runs on physical core ")
              << core << ", but " << t->name << " has " << t->physicalCores
              << " physical core(s) per logical core";
          return WalkResult::interrupt();
        }
        if (core != 0)
          op->setAttr(ntile::kCoreAttr, IntegerAttr::get(IntegerType::get(ctx, 64), core));
        return WalkResult::advance();
      });
      if (cores.wasInterrupted())
        return signalPassFailure();
      PhysicalMemory memory(ctx, *t);
      if (failed(memory.declareBuffers(func)))
        return signalPassFailure();
      RewritePatternSet patterns(ctx);
      patterns.add<EraseMemoryOp<memref::AllocOp>, EraseMemoryOp<ntile::ConstantOp>,
                   EraseMemoryOp<ntile::ReinterpretOp>, EraseMemoryOp<ntile::ViewOp>, LoopToNIsa,
                   DmaToNIsa, GatherToNIsa, CollectiveToNIsa, RandomToNIsa, MatmulToNIsa, TransposeToNIsa,
                   ActivationToNIsa, TensorTensorToNIsa, TensorScalarToNIsa,
                   ScalarTensorTensorToNIsa, TensorTensorScanToNIsa, BnStatsToNIsa, BnAggrToNIsa, CopyToNIsa, ReduceToNIsa, SelectToNIsa,
                   ScatterToNIsa, IsaToNIsa>(ctx, memory);
      if (failed(applyFullConversion(func, legal, std::move(patterns))))
        return signalPassFailure();
      // The program's buffers are its interface now: the function takes no arguments.
      llvm::BitVector all(func.getNumArguments(), true);
      func.eraseArguments(all);
    }
  }
};

} // namespace
} // namespace neuron::compiler
