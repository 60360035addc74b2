// Importer of grid_sampler_2d (nn.functional.grid_sample) in bilinear mode with zeros or
// border padding: the four neighbours of each sampling point are read by data-dependent
// row gathers (ntorch.gather_rows of the input as [N*H*W, C] rows) and weighted on the
// Vector engine. Nearest and bicubic modes and reflection padding are not supported.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// floor(x) of fp32 values in int32 range: the int32 cast truncates toward zero; one less
/// where that is above x.
static Value floorF32(NodeContext &ctx, Value x) {
  Value t = ctx.castTo(ctx.castTo(x, ctx.b.getI32Type()), ctx.b.getF32Type());
  Value above = ctx.binary(BinaryFn::gt, t, x);
  return ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(x), above,
                                    ctx.binaryScalar(BinaryFn::sub, t, 1.0), t);
}

static Value clampF32(NodeContext &ctx, Value x, double lo, double hi) {
  return ctx.binaryScalar(BinaryFn::min, ctx.binaryScalar(BinaryFn::max, x, lo), hi);
}

/// The pixel coordinate of normalized grid coordinates g in [-1, 1] over `size` pixels, as
/// PyTorch's CPU kernel computes it (zeros or border padding): (g + 1) * ((size - 1) / 2)
/// with align_corners, else (g + 1) * (size / 2) - 0.5, each step rounded to the input's
/// type `et` (eager's bf16 kernel computes the positions in bf16).
static Value sourceIndex(NodeContext &ctx, Value g, int64_t size, bool alignCorners,
                         bool border, Type et) {
  auto rounded = [&](Value v) {
    return et.isF32() ? v : ctx.castTo(ctx.castTo(v, et), ctx.b.getF32Type());
  };
  Value x = rounded(ctx.binaryScalar(BinaryFn::add, g, 1.0));
  x = rounded(ctx.binaryScalar(BinaryFn::mul, x, alignCorners ? (size - 1) / 2.0 : size / 2.0));
  if (!alignCorners)
    x = rounded(ctx.binaryScalar(BinaryFn::sub, x, 0.5));
  if (border)
    return clampF32(ctx, x, 0.0, size - 1.0);
  // Zeros padding: points further out than one pixel read nothing; clamping them there
  // keeps the floor's int32 cast in range without changing a result.
  return clampF32(ctx, x, -2.0, size + 1.0);
}

/// grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners).
Values gridSampler2d(NodeContext &ctx) {
  Value input = ctx.tensor(0), grid = ctx.tensor(1);
  ctx.requireRank(input, 4, "grid_sampler_2d's input (NCHW)");
  ctx.requireRank(grid, 4, "grid_sampler_2d's grid (N, H_out, W_out, 2)");
  int64_t mode = ctx.integer(2, "interpolation_mode", 0), padding = ctx.integer(3, "padding_mode", 0);
  bool alignCorners = ctx.integer(4, "align_corners", 0);
  if (mode != 0)
    throw ImportError("grid_sampler_2d supports bilinear interpolation (mode 0), got mode " +
                      std::to_string(mode) + (mode == 1 ? " (nearest)" : " (bicubic)"));
  if (padding != 0 && padding != 1)
    throw ImportError("grid_sampler_2d supports zeros and border padding, got padding_mode " +
                      std::to_string(padding) + " (reflection)");
  auto it = typeOf(input), gt = typeOf(grid);
  int64_t n = it.getDimSize(0), c = it.getDimSize(1), h = it.getDimSize(2), w = it.getDimSize(3);
  int64_t ho = gt.getDimSize(1), wo = gt.getDimSize(2);
  if (gt.getDimSize(0) != n || gt.getDimSize(3) != 2)
    throw ImportError("grid_sampler_2d: the grid [" + std::to_string(gt.getDimSize(0)) + ", " +
                      std::to_string(ho) + ", " + std::to_string(wo) + ", " +
                      std::to_string(gt.getDimSize(3)) + "] should be [" + std::to_string(n) +
                      ", H_out, W_out, 2]");
  ctx.requireExpandable(n * h * w, "grid_sampler_2d's input positions");
  if (n * h * w == 0 || c == 0 || ho * wo == 0)
    throw ImportError("grid_sampler_2d of an empty input or grid is not supported");
  Type f32 = ctx.b.getF32Type();
  Value g = ctx.castTo(grid, f32);
  auto coordType = RankedTensorType::get({n, ho, wo, 1}, f32);
  auto coord = [&](int64_t i) {
    Value s = ctx.b.create<nt::SliceOp>(ctx.loc, coordType, g, SmallVector<int64_t>{0, 0, 0, i},
                                        SmallVector<int64_t>{1, 1, 1, 1});
    return ctx.reshape(s, {n, ho, wo});
  };
  bool border = padding == 1;
  Type et = it.getElementType();
  Value ix = sourceIndex(ctx, coord(0), w, alignCorners, border, et);
  Value iy = sourceIndex(ctx, coord(1), h, alignCorners, border, et);
  Value x0 = floorF32(ctx, ix), y0 = floorF32(ctx, iy);
  Value x1 = ctx.binaryScalar(BinaryFn::add, x0, 1.0), y1 = ctx.binaryScalar(BinaryFn::add, y0, 1.0);
  // Weights of the far corner's distance: nw = (x1 - ix) * (y1 - iy), and so on.
  Value wx0 = ctx.binary(BinaryFn::sub, x1, ix), wx1 = ctx.binary(BinaryFn::sub, ix, x0);
  Value wy0 = ctx.binary(BinaryFn::sub, y1, iy), wy1 = ctx.binary(BinaryFn::sub, iy, y0);
  // The input as rows [N*H*W, C]; the row of (b, y, x) is b*H*W + y*W + x.
  Value table = ctx.reshape(ctx.permute(ctx.castTo(input, f32), {0, 2, 3, 1}), {n * h * w, c});
  auto batchType = RankedTensorType::get({n, 1, 1}, f32);
  SmallVector<APFloat> bases;
  for (int64_t b = 0; b < n; ++b)
    bases.push_back(APFloat((float)(b * h * w)));
  Value base = ctx.b.create<nt::ConstantOp>(
      ctx.loc, batchType, cast<ElementsAttr>(DenseElementsAttr::get(batchType, bases)));
  // (Named steps: the order of the ops must not depend on argument evaluation order.)
  auto inside = [&](Value v, int64_t size) {
    Value low = ctx.binaryScalar(BinaryFn::ge, v, 0.0);
    Value high = ctx.binaryScalar(BinaryFn::le, v, size - 1.0);
    return ctx.binary(BinaryFn::And, low, high);
  };
  auto valuesType = RankedTensorType::get({n, ho, wo, c}, f32);
  Value zero = ctx.scalar(f32, 0.0), sum;
  struct Corner {
    Value y, x, wy, wx;
  };
  for (const Corner &k : {Corner{y0, x0, wy0, wx0}, Corner{y0, x1, wy0, wx1},
                          Corner{y1, x0, wy1, wx0}, Corner{y1, x1, wy1, wx1}}) {
    Value validY = inside(k.y, h);
    Value validX = inside(k.x, w);
    Value valid = ctx.binary(BinaryFn::And, validY, validX);
    Value rowY = ctx.binaryScalar(BinaryFn::mul, clampF32(ctx, k.y, 0.0, h - 1.0), (double)w);
    Value colX = clampF32(ctx, k.x, 0.0, w - 1.0);
    Value row = ctx.binary(BinaryFn::add, base, ctx.binary(BinaryFn::add, rowY, colX));
    Value index = ctx.castTo(row, ctx.b.getI64Type());
    Value values = ctx.b.create<nt::GatherRowsOp>(ctx.loc, valuesType, table, index);
    Value weight = ctx.reshape(ctx.binary(BinaryFn::mul, k.wx, k.wy), {n, ho, wo, 1});
    Value term = ctx.binary(BinaryFn::mul, values, weight);
    term = ctx.b.create<nt::SelectOp>(ctx.loc, valuesType, ctx.reshape(valid, {n, ho, wo, 1}),
                                      term, zero);
    sum = sum ? ctx.binary(BinaryFn::add, sum, term) : term;
  }
  Value y = ctx.permute(sum, {0, 3, 1, 2});
  return {ctx.castTo(y, ctx.resultType().getElementType())};
}

} // namespace neuron::compiler::aten
