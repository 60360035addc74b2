// Tiling of matmul onto the Tensor engine: [K, M]^T @ [K, N] tiles accumulated in PSUM.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "runtime/program/Isa.h"

#include <algorithm>
#include <cmath>

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
/// An operand transposed on the PE array stages at most this many K elements of its rows
/// per DMA (whole K tiles).
static constexpr int64_t kStagedK = 4096;

namespace {
/// `iv mod n` for a loop induction variable `iv` (a rotating slot index).
Offset rotating(const Offset &iv, int64_t n) {
  Offset r = iv;
  for (size_t t = 2; t < r.terms.size(); t += 3)
    r.terms[t] = n;
  return r;
}

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

  /// Whether the operand's tiles are transposed on the PE array: its K elements are
  /// contiguous in HBM (an [outer, K] matrix read as [K, outer] tiles) and the target has no
  /// dma_transpose (trn1), where reading it transposed would move one element per DMA
  /// descriptor. Its rows load contiguously instead, and nc_transpose (128 x 128 at most)
  /// turns each block into PSUM, copied into the tile.
  bool peTransposed(const MatmulOperand &o) const {
    return o.kStride == 1 && o.outerStride != 1 &&
           !runtime::existsOn(runtime::Opcode::DmaTranspose, e.target.generation);
  }

  /// K elements [k0, k0 + kLen) of outer elements [outer0, +size), transposed on the PE
  /// array into `dst` (`width` columns per partition): K tile j (of kLen / tileK, the last
  /// one shorter) at column at + j * size.
  void loadTransposed(const MatmulOperand &o, const Offset &outer0, int64_t size,
                      const Offset &k0, int64_t kLen, Value dst, const Offset &at) {
    int64_t width = cast<MemRefType>(dst.getType()).getDimSize(1);
    for (int64_t r0 = 0; r0 < size; r0 += tileK()) {
      int64_t rows = std::min(tileK(), size - r0);
      Value staging = e.allocTile(loc, rows, kLen, o.elementType, MemSpace::sbuf);
      Offset from = o.base + (outer0 + Offset(r0)) * o.outerStride + k0;
      e.dma(loc, o.source, e.pattern(from, {{o.outerStride, rows}, {1, kLen}}), staging,
            e.pattern(0, {{kLen, rows}, {1, kLen}}));
      e.tiled(loc, kLen, tileK(), [&](const Offset &j, int64_t kk) {
        Value block = e.b.create<ntile::ViewOp>(
            loc, ntile::getBufferType({rows, kk}, o.elementType, MemSpace::sbuf), staging,
            e.pattern(j * tileK(), {{kLen, rows}, {1, kk}}));
        Value transposed = e.allocTile(loc, kk, rows, o.elementType, MemSpace::psum);
        e.b.create<ntile::TransposeOp>(loc, block, transposed);
        Value into = e.b.create<ntile::ViewOp>(
            loc, ntile::getBufferType({kk, rows}, o.elementType, MemSpace::sbuf), dst,
            e.pattern(at + j * size + Offset(r0), {{width, kk}, {1, rows}}));
        e.b.create<ntile::CopyOp>(loc, transposed, into);
      });
    }
  }

  /// Loads the [kk, size] tile of K tile `kt` for outer elements [outer0, +size).
  Value load(const MatmulOperand &o, const Offset &outer0, int64_t size, const Offset &kt,
             int64_t kk) {
    Value tile = e.allocTile(loc, kk, size, o.elementType, MemSpace::sbuf);
    if (peTransposed(o)) {
      loadTransposed(o, outer0, size, kt * tileK(), kk, tile, Offset(0));
      return tile;
    }
    Offset at = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
    e.dma(loc, o.source, e.pattern(at, {{o.kStride, kk}, {o.outerStride, size}}), tile,
          e.pattern(0, {{size, kk}, {1, size}}));
    return tile;
  }

  /// Every K tile of outer elements [outer0, +size), side by side in one SBUF panel: one
  /// DMA per kPanelKTiles K tiles when K is whole tiles.
  Value loadPanel(const MatmulOperand &o, const Offset &outer0, int64_t size) {
    int64_t kTiles = (K + tileK() - 1) / tileK();
    Value panel =
        e.allocTile(loc, std::min(K, tileK()), kTiles * size, o.elementType, MemSpace::sbuf);
    loadPanelInto(o, outer0, size, panel, Offset(0), /*prefetch=*/false);
    return panel;
  }

  /// The same panel loaded into columns [at, at + kTiles * size) of `panel` (a slot of a
  /// double-buffered panel); `prefetch` marks the loads as a software pipeline's.
  void loadPanelInto(const MatmulOperand &o, const Offset &outer0, int64_t size, Value panel,
                     const Offset &at, bool prefetch) {
    int64_t kTiles = (K + tileK() - 1) / tileK();
    int64_t width = cast<MemRefType>(panel.getType()).getDimSize(1);
    auto mark = [&](ntile::DmaOp dma) {
      if (prefetch)
        dma->setAttr(ntile::kPrefetchAttr, e.b.getUnitAttr());
    };
    if (peTransposed(o)) {
      // Spans of whole K tiles; a panel's K tile kt sits at column at + kt * size.
      int64_t span = K <= kStagedK ? K : kStagedK / tileK() * tileK();
      e.tiled(loc, K, span, [&](const Offset &s, int64_t kLen) {
        loadTransposed(o, outer0, size, s * span, kLen, panel, at + s * (span / tileK() * size));
      });
      return;
    }
    if (K % tileK() == 0 && kTiles > 1) {
      e.tiled(loc, kTiles, kPanelKTiles, [&](const Offset &chunk, int64_t tiles) {
        Offset kt = chunk * kPanelKTiles;
        Offset from = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
        mark(e.dma(loc, o.source,
                   e.pattern(from, {{o.kStride, tileK()}, {tileK() * o.kStride, tiles},
                                    {o.outerStride, size}}),
                   panel, e.pattern(at + kt * size, {{width, tileK()}, {size, tiles}, {1, size}})));
      });
      return;
    }
    e.tiled(loc, K, tileK(), [&](const Offset &kt, int64_t kk) {
      Offset from = o.base + outer0 * o.outerStride + kt * (tileK() * o.kStride);
      mark(e.dma(loc, o.source, e.pattern(from, {{o.kStride, kk}, {o.outerStride, size}}), panel,
                 e.pattern(at + kt * size, {{width, kk}, {1, size}})));
    });
  }

  /// The [kk, size] tile of K tile `kt` inside a panel (or its slot at column `at`) whose K
  /// tiles lie `stride` columns apart (`size` when 0: a panel of tiles of this width).
  Value panelTile(Value panel, const Offset &kt, int64_t kk, int64_t size,
                  const Offset &at = Offset(0), int64_t stride = 0) {
    int64_t width = cast<MemRefType>(panel.getType()).getDimSize(1);
    Type et = cast<MemRefType>(panel.getType()).getElementType();
    return e.b.create<ntile::ViewOp>(loc, ntile::getBufferType({kk, size}, et, MemSpace::sbuf),
                                     panel,
                                     e.pattern(at + kt * (stride ? stride : size),
                                               {{width, kk}, {1, size}}));
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
      // Every row block against the column panel in `panel` (at column `at`, its K tiles
      // `nn` columns apart): one PSUM accumulation per tileN columns of it.
      auto computePanel = [&](Value panel, const Offset &at, const Offset &n0, int64_t nn) {
        e.tiled(loc, M, tileM, [&](const Offset &mt, int64_t mm) {
          Offset m0 = mt * tileM;
          // The row block's stationary tiles in one panel (prefetched as one transfer).
          Value rows = lhsFits ? loops.loadPanel(lhs, m0, mm) : Value();
          for (int64_t c0 = 0; c0 < nn; c0 += tileN) {
            const int64_t cn = std::min(tileN, nn - c0);
            Value acc = e.allocTile(loc, mm, cn, e.b.getF32Type(), MemSpace::psum);
            loops.accumulate(acc, [&](const Offset &kt, int64_t kk) {
              Value st =
                  rows ? loops.panelTile(rows, kt, kk, mm) : loops.load(lhs, m0, mm, kt, kk);
              return std::pair{st, loops.panelTile(panel, kt, kk, cn, at + Offset(c0), nn)};
            });
            store(acc, outBase, m0, mm, n0 + Offset(c0), cn);
          }
        });
      };
      // A panel is panelN columns, several matmuls wide where one matmul's rows would be
      // DMA descriptors shorter than the per-descriptor rate limit (runtime/HARDWARE.md: a
      // row of fewer than dmaDescriptorMinBytes moves below full rate), as long as the
      // panels still fit the resident budget as they did (two of them for the pipeline). Not
      // on a logical core of several physical cores, where neuron-split-cores shares the
      // panels out and needs as many as there are.
      const int64_t widen =
          e.target.physicalCores > 1
              ? 1
              : std::max<int64_t>(1, (int64_t)std::ceil(e.target.dmaDescriptorMinBytes /
                                                        double(tileN * rhsBytes)));
      // The pipeline's iterations depend on each other: on a logical core of several
      // physical cores the panels stay a parallel loop that neuron-split-cores halves.
      auto pipelines = [&](int64_t panelN) {
        return N / panelN + (N % panelN ? 1 : 0) >= 2 &&
               2 * kTiles * panelN * rhsBytes <= kResidentStationaryBytes &&
               e.target.physicalCores == 1;
      };
      const bool pipelined = pipelines(tileN);
      int64_t panelN = tileN;
      for (int64_t m = widen; m > 1; --m) {
        const int64_t wide = std::min(N, m * tileN);
        if (pipelined ? pipelines(wide) : kTiles * wide * rhsBytes <= kResidentStationaryBytes) {
          panelN = wide;
          break;
        }
      }
      int64_t full = N / panelN, rest = N % panelN, slot = kTiles * panelN;
      if (!pipelined) {
        e.tiled(loc, N, panelN, [&](const Offset &nt, int64_t nn) {
          computePanel(loops.loadPanel(rhs, nt * panelN, nn), Offset(0), nt * panelN, nn);
        });
        return;
      }
      // When two panels fit the resident budget: a software pipeline over the column
      // panels in two slots of one SBUF tile. Panel 0 loads before the loop (the
      // prologue); iteration i runs the row blocks against panel i in slot i mod 2, then
      // loads panel i + 1 into the other slot (last in the body, its transfers queue
      // behind the iteration's own and fill the time they leave); the last panel runs
      // after the loop. The Tensor engine does not wait for a panel at panel boundaries.
      // The loads are marked ntile.prefetch (neuron-assign-dma-queues spreads the
      // prologue over every queue).
      Value slots = e.allocTile(loc, std::min(K, tileK), 2 * slot, rhsEt, MemSpace::sbuf);
      loops.loadPanelInto(rhs, Offset(0), panelN, slots, Offset(0), /*prefetch=*/true);
      e.loop(
          loc, full - 1,
          [&](const Offset &i) {
            Offset parity = rotating(i, 2); // i mod 2: panel i's slot
            computePanel(slots, parity * slot, i * panelN, panelN);
            loops.loadPanelInto(rhs, (i + Offset(1)) * panelN, panelN, slots,
                                Offset(slot) + parity * -slot, /*prefetch=*/true);
          },
          /*keepSingle=*/true);
      // The last whole panel, then (as in the loop) the load of the partial one, if any.
      int64_t last = (full - 1) % 2;
      computePanel(slots, Offset(last * slot), Offset((full - 1) * panelN), panelN);
      if (rest) {
        loops.loadPanelInto(rhs, Offset(full * panelN), rest, slots, Offset((1 - last) * slot),
                            /*prefetch=*/true);
        computePanel(slots, Offset((1 - last) * slot), Offset(full * panelN), rest);
      }
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
