// Tiling of sliding-window ops over NCHW as loop nests: conv2d as an implicit GEMM on the
// Tensor engine (one accumulating matmul per channel chunk and kernel offset), pooling on
// the Vector engine.
#include "compiler/Conversion/NTorchToNTile/TileEmitter.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include <limits>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {

/// Keep a conv's weight tiles resident while they fit in this many bytes per partition.
static constexpr int64_t kResidentWeightBytes = 96 * 1024;

static RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The input padded spatially (a new HBM buffer), or the input itself.
static Value padSpatially(TileEmitter &e, Location loc, Value input, ArrayRef<int64_t> padding,
                          double value, SmallVector<int64_t> &paddedShape) {
  auto t = tensorType(input);
  paddedShape.assign(t.getShape().begin(), t.getShape().end());
  if (padding[0] == 0 && padding[1] == 0)
    return e.buffer(input);
  SmallVector<int64_t> pad = {0, 0, padding[0], padding[1]};
  paddedShape[2] += 2 * padding[0];
  paddedShape[3] += 2 * padding[1];
  Value buf = e.allocHbm(loc, RankedTensorType::get(paddedShape, t.getElementType()));
  e.fillPadded(loc, e.buffer(input), t.getShape(), buf, pad, pad, value);
  return buf;
}

/// Output rows per tile and columns per tile so that rows * cols <= limit.
static std::pair<int64_t, int64_t> pixelTile(int64_t outW, int64_t limit) {
  if (outW >= limit)
    return {1, limit};
  return {limit / outW, outW};
}

static LogicalResult lowerConv(TileEmitter &e, ntorch::Conv2dOp op) {
  Location loc = op.getLoc();
  auto xt = tensorType(op.getInput()), wt = tensorType(op.getWeight()), ot = tensorType(op.getResult());
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1);
  int64_t O = wt.getDimSize(0), Cg = wt.getDimSize(1), KH = wt.getDimSize(2), KW = wt.getDimSize(3);
  int64_t OH = ot.getDimSize(2), OW = ot.getDimSize(3), G = op.getGroups(), Og = O / G;
  int64_t sh = op.getStride()[0], sw = op.getStride()[1];
  int64_t dh = op.getDilation()[0], dw = op.getDilation()[1];
  SmallVector<int64_t> ps;
  Value xp = padSpatially(e, loc, op.getInput(), op.getPadding(), 0.0, ps);
  int64_t Hp = ps[2], Wp = ps[3];
  Value w = e.buffer(op.getWeight()), out = e.createResultBuffer(op.getResult(), loc);
  const int64_t P = e.target.partitions, tileM = e.target.matmulMaxM;
  auto [rowsPerTile, colsPerTile] = pixelTile(OW, e.target.matmulMaxN);
  int64_t cChunks = (Cg + P - 1) / P;
  bool resident = cChunks * KH * KW * tileM * ntile::getElementBytes(wt.getElementType()) <=
                  kResidentWeightBytes;
  Type f32 = e.b.getF32Type();
  // Channel chunks x kernel rows x kernel columns: the reduction of one output tile.
  SmallVector<std::pair<int64_t, int64_t>> steps = {{Cg, P}, {KH, 1}, {KW, 1}};

  e.loop(loc, G, [&](const Offset &g) {
    e.tiled(loc, Og, tileM, [&](const Offset &oTile, int64_t mm) {
      Offset o0 = oTile * tileM;
      // Stationary tile for channels [c0, c0 + kk) at kernel offset (kh, kw): w^T.
      auto weightAt = [&](ArrayRef<Offset> i) {
        return (g * Og + o0) * (Cg * KH * KW) + i[0] * (P * KH * KW) + i[1] * KW + i[2];
      };
      auto loadWeight = [&](ArrayRef<Offset> i, int64_t kk) {
        Value tile = e.allocTile(loc, kk, mm, wt.getElementType(), MemSpace::sbuf);
        e.dma(loc, w, e.pattern(weightAt(i), {{KH * KW, kk}, {Cg * KH * KW, mm}}), tile,
              e.pattern(0, {{mm, kk}, {1, mm}}));
        return tile;
      };
      // Resident weights: every step's tile side by side in one panel, step-major.
      auto stepIndex = [&](ArrayRef<Offset> i) { return i[0] * (KH * KW) + i[1] * KW + i[2]; };
      Value panel;
      int64_t width = cChunks * KH * KW * mm;
      if (resident) {
        panel = e.allocTile(loc, std::min(P, Cg), width, wt.getElementType(), MemSpace::sbuf);
        e.forEachOver(loc, steps, [&](ArrayRef<Offset> i, ArrayRef<int64_t> n) {
          e.dma(loc, w, e.pattern(weightAt(i), {{KH * KW, n[0]}, {Cg * KH * KW, mm}}), panel,
                e.pattern(stepIndex(i) * mm, {{width, n[0]}, {1, mm}}));
        });
      }
      e.loop(loc, N, [&](const Offset &n) {
        e.tiled(loc, OH, rowsPerTile, [&](const Offset &rt, int64_t rows) {
          Offset oh0 = rt * rowsPerTile;
          e.tiled(loc, OW, colsPerTile, [&](const Offset &ct, int64_t cols) {
            Offset ow0 = ct * colsPerTile;
            int64_t nn = rows * cols;
            Value acc = e.allocTile(loc, mm, nn, f32, MemSpace::psum);
            e.accumulateOver(loc, steps, [&](ArrayRef<Offset> i, ArrayRef<int64_t> sz, bool first) {
              int64_t kk = sz[0];
              Value st = resident
                             ? (Value)e.b.create<ntile::ViewOp>(
                                   loc, ntile::getBufferType({kk, mm}, wt.getElementType(), MemSpace::sbuf),
                                   panel, e.pattern(stepIndex(i) * mm, {{width, kk}, {1, mm}}))
                             : loadWeight(i, kk);
              Value mv = e.allocTile(loc, kk, nn, xt.getElementType(), MemSpace::sbuf);
              Offset off = ((n * C + g * Cg + i[0] * P) * Hp + oh0 * sh + i[1] * dh) * Wp +
                           ow0 * sw + i[2] * dw;
              e.dma(loc, xp, e.pattern(off, {{Hp * Wp, kk}, {sh * Wp, rows}, {sw, cols}}), mv,
                    e.pattern(0, {{nn, kk}, {1, nn}}));
              e.b.create<ntile::MatmulOp>(loc, st, mv, acc, /*accumulate=*/!first);
            });
            Value result = e.allocTile(loc, mm, nn, ot.getElementType(), MemSpace::sbuf);
            e.b.create<ntile::CopyOp>(loc, acc, result);
            Offset off = ((n * O + g * Og + o0) * OH + oh0) * OW + ow0;
            e.dma(loc, result, e.pattern(0, {{nn, mm}, {1, nn}}), out,
                  e.pattern(off, {{OH * OW, mm}, {OW, rows}, {1, cols}}));
          });
        });
      });
    });
  });
  return success();
}

static LogicalResult lowerPool(TileEmitter &e, ntorch::Pool2dOp op) {
  Location loc = op.getLoc();
  auto xt = tensorType(op.getInput()), ot = tensorType(op.getResult());
  bool isMax = op.getFn() == ntorch::PoolFn::max;
  int64_t planes = xt.getDimSize(0) * xt.getDimSize(1), H = xt.getDimSize(2), W = xt.getDimSize(3);
  int64_t OH = ot.getDimSize(2), OW = ot.getDimSize(3);
  int64_t KH = op.getKernel()[0], KW = op.getKernel()[1], sh = op.getStride()[0], sw = op.getStride()[1];
  int64_t ph = op.getPadding()[0], pw = op.getPadding()[1];
  SmallVector<int64_t> ps;
  Value xp = padSpatially(e, loc, op.getInput(), op.getPadding(),
                          isMax ? -std::numeric_limits<double>::infinity() : 0.0, ps);
  int64_t Hp = ps[2], Wp = ps[3];
  Value out = e.createResultBuffer(op.getResult(), loc);
  Type et = xt.getElementType();
  Type accType = isMax ? et : (Type)e.b.getF32Type();
  AluOp alu = isMax ? AluOp::max : AluOp::add;
  auto [rowsPerTile, colsPerTile] = pixelTile(OW, e.maxTileFree(4));

  // Average pooling without padding in the count divides by a per-pixel count.
  Value counts;
  if (!isMax && op.getExcludePad()) {
    auto countType = RankedTensorType::get({OH, OW}, e.b.getF32Type());
    SmallVector<APFloat> values;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
        int64_t hs = std::min(h0 + KH, H) - std::max<int64_t>(h0, 0);
        int64_t ws = std::min(w0 + KW, W) - std::max<int64_t>(w0, 0);
        values.push_back(APFloat((float)std::max<int64_t>(hs * ws, 1)));
      }
    counts = e.constant(loc, DenseElementsAttr::get(countType, values));
  }

  int64_t P = e.target.partitions;
  e.tiled(loc, planes, P, [&](const Offset &pt, int64_t pr) {
    Offset p0 = pt * P;
    e.tiled(loc, OH, rowsPerTile, [&](const Offset &rt, int64_t rows) {
      Offset oh0 = rt * rowsPerTile;
      e.tiled(loc, OW, colsPerTile, [&](const Offset &ct, int64_t cols) {
        Offset ow0 = ct * colsPerTile;
        int64_t nn = rows * cols;
        // The first window element starts the accumulator (loaded straight into it when
        // no conversion is needed); the others combine into it in place.
        Value acc = e.allocTile(loc, pr, nn, accType, MemSpace::sbuf);
        e.accumulateOver(loc, {{KH, 1}, {KW, 1}}, [&](ArrayRef<Offset> k, ArrayRef<int64_t>, bool first) {
          Value tile = first && accType == et ? acc : e.allocTile(loc, pr, nn, et, MemSpace::sbuf);
          Offset off = (p0 * Hp + oh0 * sh + k[0]) * Wp + ow0 * sw + k[1];
          e.dma(loc, xp, e.pattern(off, {{Hp * Wp, pr}, {sh * Wp, rows}, {sw, cols}}), tile,
                e.pattern(0, {{nn, pr}, {1, nn}}));
          if (first && tile != acc)
            e.b.create<ntile::CopyOp>(loc, tile, acc);
          else if (!first)
            e.b.create<ntile::TensorTensorOp>(loc, alu, acc, tile, acc);
        });
        if (!isMax) {
          Value scaled = e.allocTile(loc, pr, nn, accType, MemSpace::sbuf);
          if (counts) {
            Value c = e.allocTile(loc, pr, nn, accType, MemSpace::sbuf);
            e.dma(loc, counts, e.pattern(oh0 * OW + ow0, {{0, pr}, {OW, rows}, {1, cols}}), c,
                  e.pattern(0, {{nn, pr}, {1, nn}}));
            e.b.create<ntile::TensorTensorOp>(loc, AluOp::div, acc, c, scaled);
          } else {
            e.b.create<ntile::TensorScalarOp>(loc, AluOp::mul, acc, APFloat(1.0 / (KH * KW)),
                                              scaled, false);
          }
          acc = scaled;
        }
        Value result = acc;
        if (accType != ot.getElementType()) {
          result = e.allocTile(loc, pr, nn, ot.getElementType(), MemSpace::sbuf);
          e.b.create<ntile::CopyOp>(loc, acc, result);
        }
        e.dma(loc, result, e.pattern(0, {{nn, pr}, {1, nn}}), out,
              e.pattern((p0 * OH + oh0) * OW + ow0, {{OH * OW, pr}, {OW, rows}, {1, cols}}));
      });
    });
  });
  return success();
}

LogicalResult lowerWindow(TileEmitter &e, Operation *op) {
  if (auto conv = dyn_cast<ntorch::Conv2dOp>(op))
    return lowerConv(e, conv);
  if (auto pool = dyn_cast<ntorch::Pool2dOp>(op))
    return lowerPool(e, pool);
  return failure();
}

} // namespace neuron::compiler
