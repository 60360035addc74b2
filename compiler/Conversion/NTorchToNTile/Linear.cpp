// Tiling of matmul onto the Tensor engine: [K, M]^T @ [K, N] tiles accumulated in PSUM.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Keep the stationary tiles of one row block resident while they fit in this
/// many bytes per partition; otherwise reload them for every column block.
static constexpr int64_t kResidentStationaryBytes = 96 * 1024;
/// A panel of whole K tiles loads in transfers of this many K tiles: large enough that
/// the per-transfer fixed cost stays small, small enough that the first matmuls that
/// read the panel need not wait for all of it.
static constexpr int64_t kPanelKTiles = 8;

namespace {
/// One matmul operand read as [K, outer] tiles: element `base + outer * outerStride +
/// k * kStride` of `source`.
struct MatmulOperand {
  Value source;
  Offset base;
  int64_t outerStride, kStride;
  Type elementType;
};

/// The loop nest of a matmul without epilogue: batches, then output row (or column)
/// blocks, then the other output dimension, then K accumulated in PSUM. One operand's K
/// panel of a block stays resident in SBUF when it fits (see the loop-order choice).
class MatmulLoops {
public:
  MatmulLoops(TileEmitter &e, Location loc, int64_t K) : e(e), loc(loc), K(K) {}

  /// Loads the [kk, size] tile of K tile `kt` for outer elements [outer0, +size).
  Value load(const MatmulOperand &o, const Offset &outer0, int64_t size, const Offset &kt,
             int64_t kk) {
    Value tile = e.allocTile(loc, kk, size, o.elementType, MemSpace::sbuf);
    Offset at = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
    e.dma(loc, o.source, e.pattern(at, {{o.kStride, kk}, {o.outerStride, size}}), tile,
          e.pattern(0, {{size, kk}, {1, size}}));
    return tile;
  }

  /// Every K tile of outer elements [outer0, +size), side by side in one SBUF panel: one
  /// DMA per kPanelKTiles K tiles when K is whole tiles.
  Value loadPanel(const MatmulOperand &o, const Offset &outer0, int64_t size) {
    int64_t kTiles = (K + tileK() - 1) / tileK(), width = kTiles * size;
    Value panel = e.allocTile(loc, std::min(K, tileK()), width, o.elementType, MemSpace::sbuf);
    if (K % tileK() == 0 && kTiles > 1) {
      e.tiled(loc, kTiles, kPanelKTiles, [&](const Offset &chunk, int64_t tiles) {
        Offset kt = chunk * kPanelKTiles;
        Offset at = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
        e.dma(loc, o.source,
              e.pattern(at, {{o.kStride, tileK()}, {tileK() * o.kStride, tiles},
                             {o.outerStride, size}}),
              panel, e.pattern(kt * size, {{width, tileK()}, {size, tiles}, {1, size}}));
      });
      return panel;
    }
    e.tiled(loc, K, tileK(), [&](const Offset &kt, int64_t kk) {
      Offset at = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
      e.dma(loc, o.source, e.pattern(at, {{o.kStride, kk}, {o.outerStride, size}}), panel,
            e.pattern(kt * size, {{width, kk}, {1, size}}));
    });
    return panel;
  }

  /// The [kk, size] tile of K tile `kt` inside a panel.
  Value panelTile(Value panel, const Offset &kt, int64_t kk, int64_t size) {
    int64_t width = cast<MemRefType>(panel.getType()).getDimSize(1);
    Type et = cast<MemRefType>(panel.getType()).getElementType();
    return e.b.create<ntile::ViewOp>(loc, ntile::getBufferType({kk, size}, et, MemSpace::sbuf),
                                     panel, e.pattern(kt * size, {{width, kk}, {1, size}}));
  }

  /// acc (+)= over K tiles: the first overwrites PSUM, the rest accumulate.
  void accumulate(Value acc, function_ref<std::pair<Value, Value>(const Offset &, int64_t)> tiles) {
    e.accumulateOver(loc, {{K, tileK()}},
                     [&](ArrayRef<Offset> kt, ArrayRef<int64_t> kk, bool first) {
                       auto [st, mv] = tiles(kt[0], kk[0]);
                       e.b.create<ntile::MatmulOp>(loc, st, mv, acc, /*accumulate=*/!first);
                     });
  }

  int64_t tileK() const { return e.target.partitions; }

private:
  TileEmitter &e;
  Location loc;
  int64_t K;
};
} // namespace

/// A matmul as loops over tiles; each PSUM result tile is rounded and stored, or handed
/// to the epilogue fusion that consumes it.
static LogicalResult lowerMatmulLoops(TileEmitter &e, ntorch::MatmulOp op) {
  Location loc = op.getLoc();
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
  auto resType = cast<RankedTensorType>(op.getType());
  int64_t b0 = resType.getRank() - 2, batches = b0 ? resType.getDimSize(0) : 1;
  int64_t M = resType.getDimSize(b0), N = resType.getDimSize(b0 + 1);
  int64_t K = op.getTransposeLhs() ? lhsType.getDimSize(b0) : lhsType.getDimSize(b0 + 1);
  int64_t lhsM = op.getTransposeLhs() ? 1 : K, lhsK = op.getTransposeLhs() ? M : 1;
  int64_t rhsK = op.getTransposeRhs() ? 1 : N, rhsN = op.getTransposeRhs() ? K : 1;
  std::optional<MatmulEpilogue> epilogue = matchMatmulEpilogue(e, op);
  Value out = epilogue ? Value() : e.createResultBuffer(op.getResult(), loc);
  Type lhsEt = lhsType.getElementType(), rhsEt = rhsType.getElementType();
  const int64_t tileK = e.target.partitions, tileM = e.target.matmulMaxM,
                tileN = e.target.matmulMaxN;
  int64_t kTiles = (K + tileK - 1) / tileK;
  int64_t lhsBytes = ntile::getElementBytes(lhsEt), rhsBytes = ntile::getElementBytes(rhsEt);
  bool lhsFits = kTiles * tileM * lhsBytes <= kResidentStationaryBytes;
  bool rhsFits = kTiles * tileN * rhsBytes <= kResidentStationaryBytes;
  double lhsResidentTraffic = M * K * lhsBytes + (double)K * N * rhsBytes * ((M + tileM - 1) / tileM);
  double rhsResidentTraffic = K * N * rhsBytes + (double)M * K * lhsBytes * ((N + tileN - 1) / tileN);
  bool columnsOuter = rhsFits && (!lhsFits || rhsResidentTraffic < lhsResidentTraffic);

  MatmulLoops loops(e, loc, K);
  LogicalResult status = success();
  Offset batch;
  auto store = [&](Value acc, const Offset &outBase, const Offset &m0, int64_t mm,
                   const Offset &n0, int64_t nn) {
    Value result = acc;
    Type resultType = epilogue ? epilogue->elementType : resType.getElementType();
    if (!epilogue || !resultType.isF32()) {
      // Evacuate PSUM, rounding to the result type as eager PyTorch does.
      result = e.allocTile(loc, mm, nn, resultType, MemSpace::sbuf);
      e.b.create<ntile::CopyOp>(loc, acc, result);
    }
    if (epilogue) {
      SmallVector<Offset> first = {m0};
      SmallVector<int64_t> count = {mm};
      if (b0) {
        first.insert(first.begin(), batch);
        count.insert(count.begin(), 1);
      }
      if (succeeded(status))
        status = epilogue->emit(first, count, n0, nn, result);
      return;
    }
    e.dma(loc, result, e.pattern(0, {{nn, mm}, {1, nn}}), out,
          e.pattern(outBase + m0 * N + n0, {{N, mm}, {1, nn}}));
  };
  e.loop(loc, batches, [&](const Offset &batchIndex) {
    batch = batchIndex;
    MatmulOperand lhs{e.buffer(op.getLhs()), batch * (M * K), lhsM, lhsK, lhsEt};
    MatmulOperand rhs{e.buffer(op.getRhs()), batch * (K * N), rhsN, rhsK, rhsEt};
    Offset outBase = batch * (M * N);
    if (columnsOuter) {
      e.tiled(loc, N, tileN, [&](const Offset &nt, int64_t nn) {
        Offset n0 = nt * tileN;
        Value panel = loops.loadPanel(rhs, n0, nn);
        e.tiled(loc, M, tileM, [&](const Offset &mt, int64_t mm) {
          Offset m0 = mt * tileM;
          // The row block's stationary tiles in one panel (prefetched as one transfer).
          Value rows = lhsFits ? loops.loadPanel(lhs, m0, mm) : Value();
          Value acc = e.allocTile(loc, mm, nn, e.b.getF32Type(), MemSpace::psum);
          loops.accumulate(acc, [&](const Offset &kt, int64_t kk) {
            Value st = rows ? loops.panelTile(rows, kt, kk, mm) : loops.load(lhs, m0, mm, kt, kk);
            return std::pair{st, loops.panelTile(panel, kt, kk, nn)};
          });
          store(acc, outBase, m0, mm, n0, nn);
        });
      });
      return;
    }
    e.tiled(loc, M, tileM, [&](const Offset &mt, int64_t mm) {
      Offset m0 = mt * tileM;
      Value panel = lhsFits ? loops.loadPanel(lhs, m0, mm) : Value();
      e.tiled(loc, N, tileN, [&](const Offset &nt, int64_t nn) {
        Offset n0 = nt * tileN;
        Value acc = e.allocTile(loc, mm, nn, e.b.getF32Type(), MemSpace::psum);
        loops.accumulate(acc, [&](const Offset &kt, int64_t kk) {
          Value st = panel ? loops.panelTile(panel, kt, kk, mm) : loops.load(lhs, m0, mm, kt, kk);
          return std::pair{st, loops.load(rhs, n0, nn, kt, kk)};
        });
        store(acc, outBase, m0, mm, n0, nn);
      });
    });
  });
  return status;
}

LogicalResult lowerMatmul(TileEmitter &e, Operation *operation) {
  auto op = dyn_cast<ntorch::MatmulOp>(operation);
  if (!op)
    return failure();
  return lowerMatmulLoops(e, op);
}

} // namespace neuron::compiler
