// Importers of the ATen ops that training graphs add: convolution_backward, max-pool
// indices and backward, batch norm in training mode. Each expands into ntorch ops that
// already run on the engines (matmuls, windows, elementwise).
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The most kernel offsets a pooling expansion unrolls (each is a few ops).
constexpr int64_t kMaxWindowOffsets = 4096;
/// Positions are compared in fp32: exact up to 2^24.
constexpr double kNoPosition = 3.0e38;

PoolWindow poolWindow(NodeContext &ctx, Value x, size_t first, bool hasDilation) {
  ctx.requireRank(x, 4, "the pooling input (after adding a batch dim to C,H,W)");
  PoolWindow w;
  w.kernel = ctx.intPair(first, "kernel_size", {});
  w.stride = ctx.intPair(first + 1, "stride", w.kernel);
  w.padding = ctx.intPair(first + 2, "padding", {0, 0});
  w.dilation = hasDilation ? ctx.intPair(first + 3, "dilation", {1, 1}) : SmallVector<int64_t>{1, 1};
  w.ceilMode = ctx.integer(first + (hasDilation ? 4 : 3), "ceil_mode", 0);
  auto t = typeOf(x);
  for (int i = 0; i < 2; ++i) {
    int64_t in = t.getDimSize(2 + i), k = w.kernel[i], s = w.stride[i], p = w.padding[i],
            d = w.dilation[i];
    std::string dim = i == 0 ? "height" : "width";
    if (k < 1 || s < 1 || d < 1 || p < 0)
      throw ImportError("pooling " + dim + ": kernel " + std::to_string(k) + ", stride " +
                        std::to_string(s) + ", dilation " + std::to_string(d) +
                        " must be positive and padding " + std::to_string(p) +
                        " not negative");
    // PyTorch's rule; it also keeps every window inside the input or its padding.
    if (k > in + 2 * p || p > ((k - 1) * d + 1) / 2 || (k - 1) > (in + 2 * p - 1) / d)
      throw ImportError("pooling " + dim + ": kernel " + std::to_string(k) + " (dilation " +
                        std::to_string(d) + ", padding " + std::to_string(p) +
                        ") does not fit the input size " + std::to_string(in) +
                        ", or the padding is more than half the kernel");
    int64_t span = in + 2 * p - d * (k - 1) - 1; // >= 0 by the checks above
    int64_t out = (w.ceilMode ? (span + s - 1) / s : span / s) + 1;
    // With ceil_mode, the last window must start inside the input or its left padding.
    if (w.ceilMode && (out - 1) * s >= in + p)
      --out;
    w.out.push_back(out);
    // Rows of the padded input the windows read: low padding p, the input, the rest.
    w.padded.push_back(std::max(in + 2 * p, (out - 1) * s + d * (k - 1) + 1));
  }
  return w;
}

/// [C, H, W] -> [1, C, H, W]: the pooling expansions work on NCHW.
Value withBatch(NodeContext &ctx, Value x) {
  auto t = typeOf(x);
  if (t.getRank() != 3)
    return x;
  return ctx.reshape(x, {1, t.getDimSize(0), t.getDimSize(1), t.getDimSize(2)});
}

/// The result as the graph records it (drops the batch dim added for 3-D inputs).
static Value asResult(NodeContext &ctx, Value v, size_t i) {
  ctx.requireRank(v, ctx.resultType(i).getRank() == 3 ? 4 : ctx.resultType(i).getRank(),
                  "result " + std::to_string(i));
  if (typeOf(v).getNumElements() != ctx.resultType(i).getNumElements())
    throw ImportError("result " + std::to_string(i) + " should have " +
                      std::to_string(typeOf(v).getNumElements()) + " elements");
  return ctx.reshape(v, ctx.resultType(i).getShape());
}

/// Pads H and W of an NCHW tensor: `padding` before, up to `padded` after.
static Value padHW(NodeContext &ctx, Value x, const PoolWindow &w, double value) {
  auto t = typeOf(x);
  int64_t highH = w.padded[0] - t.getDimSize(2) - w.padding[0];
  int64_t highW = w.padded[1] - t.getDimSize(3) - w.padding[1];
  if (w.padding[0] == 0 && w.padding[1] == 0 && highH == 0 && highW == 0)
    return x;
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1), w.padded[0], w.padded[1]};
  return ctx.b.create<nt::PadOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                 SmallVector<int64_t>{0, 0, w.padding[0], w.padding[1]},
                                 SmallVector<int64_t>{0, 0, highH, highW}, APFloat(value));
}

/// The strided window of the padded input at kernel offset (kh, kw): [N, C, OH, OW].
static Value window(NodeContext &ctx, Value padded, const PoolWindow &w, int64_t kh, int64_t kw) {
  auto t = typeOf(padded);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1), w.out[0], w.out[1]};
  return ctx.b.create<nt::SliceOp>(
      ctx.loc, RankedTensorType::get(shape, t.getElementType()), padded,
      SmallVector<int64_t>{0, 0, kh * w.dilation[0], kw * w.dilation[1]},
      SmallVector<int64_t>{1, 1, w.stride[0], w.stride[1]});
}

/// The flat input position (h * W + w) each output pixel reads at kernel offset (kh, kw),
/// or `outside` where that is padding.
static Value flatPositions(NodeContext &ctx, const PoolWindow &w, int64_t kh, int64_t kw,
                           int64_t height, int64_t width, double outside) {
  auto type = RankedTensorType::get({w.out[0], w.out[1]}, ctx.b.getF32Type());
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < w.out[0]; ++i)
    for (int64_t j = 0; j < w.out[1]; ++j) {
      int64_t h = i * w.stride[0] + kh * w.dilation[0] - w.padding[0];
      int64_t c = j * w.stride[1] + kw * w.dilation[1] - w.padding[1];
      bool inside = h >= 0 && h < height && c >= 0 && c < width;
      values.push_back(APFloat(inside ? (float)(h * width + c) : (float)outside));
    }
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// Checks that the expansion stays small and its positions exact.
static void requireExpandableWindow(NodeContext &ctx, const PoolWindow &w, Value x) {
  auto t = typeOf(x);
  if (w.kernel[0] * w.kernel[1] > kMaxWindowOffsets)
    throw ImportError("a pooling window of " + std::to_string(w.kernel[0]) + "x" +
                      std::to_string(w.kernel[1]) + " is too large to expand (at most " +
                      std::to_string(kMaxWindowOffsets) + " offsets)");
  ctx.requireExpandable(t.getDimSize(2) * t.getDimSize(3), "max-pool positions of one plane");
  ctx.requireExpandable(w.out[0] * w.out[1], "max-pool output positions of one plane");
}

/// max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode) -> (y, indices);
/// also max_pool2d. Dilation 1 without ceil_mode is one pool2d op; otherwise the max
/// over the kernel offsets of strided windows of the input padded with -inf.
Values maxPool2d(NodeContext &ctx) {
  Value x = withBatch(ctx, ctx.tensor(0));
  PoolWindow w = poolWindow(ctx, x, 1, /*hasDilation=*/true);
  auto t = typeOf(x);
  auto yType = RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), w.out[0], w.out[1]},
                                     t.getElementType());
  Value y;
  if (w.dilation == SmallVector<int64_t>{1, 1} && !w.ceilMode) {
    y = ctx.b.create<nt::Pool2dOp>(ctx.loc, yType, nt::PoolFn::max, x, w.kernel, w.stride,
                                   w.padding, false);
  } else {
    requireExpandableWindow(ctx, w, x);
    Value xp = padHW(ctx, x, w, -std::numeric_limits<double>::infinity());
    for (int64_t kh = 0; kh < w.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
        Value win = window(ctx, xp, w, kh, kw);
        y = y ? ctx.binary(BinaryFn::max, y, win) : win;
      }
  }
  return {asResult(ctx, y, 0), Value()};
}

/// max_pool2d_with_indices in training graphs: the pooled values and, as PyTorch's CPU
/// kernel defines them, the flat index (h * W + w) in each window of the first maximum in
/// row-major order, or of the last NaN when the window holds one.
Values maxPool2dWithIndices(NodeContext &ctx) {
  Values pooled = maxPool2d(ctx);
  if (!ctx.hasResult(1))
    return pooled;
  Value x = withBatch(ctx, ctx.tensor(0));
  PoolWindow w = poolWindow(ctx, x, 1, /*hasDilation=*/true);
  requireExpandableWindow(ctx, w, x);
  auto t = typeOf(x);
  Value y = withBatch(ctx, pooled[0]);
  Value xp = padHW(ctx, x, w, -std::numeric_limits<double>::infinity());
  auto posType = RankedTensorType::get(typeOf(y).getShape(), ctx.b.getF32Type());
  Value firstMax, lastNaN;
  Value none = ctx.scalar(ctx.b.getF32Type(), kNoPosition), noNaN = ctx.scalar(ctx.b.getF32Type(), -1.0);
  for (int64_t kh = 0; kh < w.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
      Value win = window(ctx, xp, w, kh, kw);
      Value pos = flatPositions(ctx, w, kh, kw, t.getDimSize(2), t.getDimSize(3), kNoPosition);
      Value isMax = ctx.binary(BinaryFn::eq, win, y);
      Value isNaN = ctx.binary(BinaryFn::ne, win, win);
      Value m = ctx.b.create<nt::SelectOp>(ctx.loc, posType, isMax, pos, none);
      Value n = ctx.b.create<nt::SelectOp>(ctx.loc, posType, isNaN, pos, noNaN);
      firstMax = firstMax ? ctx.binary(BinaryFn::min, firstMax, m) : m;
      lastNaN = lastNaN ? ctx.binary(BinaryFn::max, lastNaN, n) : n;
    }
  Value anyNaN = ctx.binaryScalar(BinaryFn::ge, lastNaN, 0.0);
  Value best = ctx.b.create<nt::SelectOp>(ctx.loc, posType, anyNaN, lastNaN, firstMax);
  return {pooled[0], asResult(ctx, ctx.castTo(best, ctx.resultType(1).getElementType()), 1)};
}

/// max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation, ceil_mode,
/// indices): grad_x[p] is the sum of grad over the outputs whose index is p. Per kernel
/// offset, the outputs whose index is the position that offset reads send their gradient
/// there (a strided scatter into the padded input); indices are always inside their window.
Values maxPool2dBackward(NodeContext &ctx) {
  Value grad = withBatch(ctx, ctx.tensor(0)), x = withBatch(ctx, ctx.tensor(1));
  Value indices = withBatch(ctx, ctx.tensor(7));
  PoolWindow w = poolWindow(ctx, x, 2, /*hasDilation=*/true);
  requireExpandableWindow(ctx, w, x);
  auto xt = typeOf(x), gt = typeOf(grad);
  SmallVector<int64_t> outShape = {xt.getDimSize(0), xt.getDimSize(1), w.out[0], w.out[1]};
  if (gt.getShape() != ArrayRef<int64_t>(outShape) ||
      typeOf(indices).getShape() != ArrayRef<int64_t>(outShape))
    throw ImportError("the gradient and the indices must have the pooled shape [" +
                      std::to_string(outShape[0]) + ", " + std::to_string(outShape[1]) + ", " +
                      std::to_string(outShape[2]) + ", " + std::to_string(outShape[3]) + "]");
  Value idx = ctx.castTo(indices, ctx.b.getF32Type());
  auto paddedType = RankedTensorType::get(
      {xt.getDimSize(0), xt.getDimSize(1), w.padded[0], w.padded[1]}, gt.getElementType());
  Value zero = ctx.scalar(gt.getElementType(), 0.0);
  Value sum;
  for (int64_t kh = 0; kh < w.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
      Value pos = flatPositions(ctx, w, kh, kw, xt.getDimSize(2), xt.getDimSize(3), -1.0);
      Value hit = ctx.binary(BinaryFn::eq, idx, pos);
      Value part = ctx.b.create<nt::SelectOp>(ctx.loc, gt, hit, grad, zero);
      Value placed = ctx.b.create<nt::ScatterWindowOp>(
          ctx.loc, paddedType, part, SmallVector<int64_t>{0, 0, kh * w.dilation[0], kw * w.dilation[1]},
          SmallVector<int64_t>{1, 1, w.stride[0], w.stride[1]});
      sum = sum ? ctx.binary(BinaryFn::add, sum, placed) : placed;
    }
  Value gx = ctx.b.create<nt::SliceOp>(
      ctx.loc, RankedTensorType::get(xt.getShape(), gt.getElementType()), sum,
      SmallVector<int64_t>{0, 0, w.padding[0], w.padding[1]}, SmallVector<int64_t>{1, 1, 1, 1});
  return {asResult(ctx, ctx.castTo(gx, ctx.resultType().getElementType()), 0)};
}

/// Pads H and W of an NCHW tensor by `padding` on both sides with zeros.
static Value zeroPad(NodeContext &ctx, Value x, ArrayRef<int64_t> padding) {
  if (padding[0] == 0 && padding[1] == 0)
    return x;
  auto t = typeOf(x);
  SmallVector<int64_t> shape(t.getShape());
  shape[2] += 2 * padding[0];
  shape[3] += 2 * padding[1];
  SmallVector<int64_t> pad = {0, 0, padding[0], padding[1]};
  return ctx.b.create<nt::PadOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x, pad,
                                 pad, APFloat(0.0));
}

/// convolution_backward(grad, x, w, bias_sizes, stride, padding, dilation, transposed,
/// output_padding, groups, output_mask) -> (grad_x, grad_w, grad_bias), per kernel
/// offset: grad_w[:, :, kh, kw] = grad @ window^T and grad_x += scatter(w^T @ grad).
Values convolutionBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0), x = ctx.tensor(1), w = ctx.tensor(2);
  if (ctx.integer(7, "transposed", 0) || ctx.integer(9, "groups", 1) != 1)
    throw ImportError("convolution_backward is supported for groups=1, not transposed");
  ctx.requireRank(grad, 4, "the gradient (NCHW)");
  ctx.requireRank(x, 4, "the input (NCHW)");
  ctx.requireRank(w, 4, "the weight (OIHW)");
  SmallVector<int64_t> stride = ctx.intPair(4, "stride", {1, 1});
  SmallVector<int64_t> padding = ctx.intPair(5, "padding", {0, 0});
  SmallVector<int64_t> dilation = ctx.intPair(6, "dilation", {1, 1});
  for (int i = 0; i < 2; ++i)
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      throw ImportError("convolution_backward needs positive stride and dilation and "
                        "non-negative padding");
  if (typeOf(w).getDimSize(2) * typeOf(w).getDimSize(3) > kMaxWindowOffsets)
    throw ImportError("a convolution kernel of " + std::to_string(typeOf(w).getDimSize(2)) + "x" +
                      std::to_string(typeOf(w).getDimSize(3)) +
                      " is too large to expand for the backward pass");
  auto xt = typeOf(x), wt = typeOf(w), gt = typeOf(grad);
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), O = wt.getDimSize(0);
  int64_t KH = wt.getDimSize(2), KW = wt.getDimSize(3), OH = gt.getDimSize(2), OW = gt.getDimSize(3);
  int64_t pixels = N * OH * OW;
  Type et = gt.getElementType();
  // grad as [O, N*OH*OW].
  Value g2 = ctx.reshape(ctx.permute(grad, {1, 0, 2, 3}), {O, pixels});
  Value xp = zeroPad(ctx, x, padding);
  SmallVector<int64_t> padded(typeOf(xp).getShape());
  Values results(3, Value());
  std::vector<bool> mask = {true, true, true};
  if (const nlohmann::json *m = ctx.arg(10, "output_mask"); m && m->is_array())
    for (size_t i = 0; i < 3 && i < m->size(); ++i)
      mask[i] = (*m)[i].get<bool>() && ctx.hasResult(i);
  Value gradX, gradW;
  SmallVector<Value> wParts;
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      SmallVector<int64_t> off = {0, 0, kh * dilation[0], kw * dilation[1]};
      // W[:, :, kh, kw] as [O, C].
      Value wk = ctx.reshape(
          ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get({O, C, 1, 1}, wt.getElementType()),
                                    w, SmallVector<int64_t>{0, 0, kh, kw},
                                    SmallVector<int64_t>{1, 1, 1, 1}),
          {O, C});
      if (mask[1]) {
        Value win = ctx.b.create<nt::SliceOp>(
            ctx.loc, RankedTensorType::get({N, C, OH, OW}, xt.getElementType()), xp, off,
            SmallVector<int64_t>{1, 1, stride[0], stride[1]});
        Value x2 = ctx.reshape(ctx.permute(win, {1, 0, 2, 3}), {C, pixels});
        Value part = ctx.b.create<nt::MatmulOp>(ctx.loc, RankedTensorType::get({O, C}, et), g2, x2,
                                                false, /*transpose_rhs=*/true);
        wParts.push_back(ctx.reshape(part, {O, C, 1}));
      }
      if (mask[0]) {
        Value contrib = ctx.b.create<nt::MatmulOp>(ctx.loc, RankedTensorType::get({C, pixels}, et),
                                                   wk, g2, /*transpose_lhs=*/true, false);
        Value c4 = ctx.permute(ctx.reshape(contrib, {C, N, OH, OW}), {1, 0, 2, 3});
        Value placed = ctx.b.create<nt::ScatterWindowOp>(
            ctx.loc, RankedTensorType::get(padded, et), c4, off,
            SmallVector<int64_t>{1, 1, stride[0], stride[1]});
        gradX = gradX ? ctx.binary(BinaryFn::add, gradX, placed) : placed;
      }
    }
  if (mask[0])
    results[0] = ctx.b.create<nt::SliceOp>(ctx.loc, ctx.resultType(0), gradX,
                                           SmallVector<int64_t>{0, 0, padding[0], padding[1]},
                                           SmallVector<int64_t>{1, 1, 1, 1});
  if (mask[1]) {
    Value stacked = wParts.size() == 1
                        ? wParts[0]
                        : (Value)ctx.b.create<nt::ConcatOp>(
                              ctx.loc, RankedTensorType::get({O, C, KH * KW}, et), wParts, 2);
    results[1] = ctx.castTo(ctx.reshape(stacked, {O, C, KH, KW}), ctx.resultType(1).getElementType());
  }
  if (mask[2])
    results[2] = ctx.reduce(ReduceFn::sum, grad, {0, 2, 3}, false);
  return results;
}

/// _native_batch_norm_legit_functional(x, w, b, running_mean, running_var, training,
/// momentum, eps) -> (y, mean, rstd, new_running_mean, new_running_var).
Values batchNormTraining(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!ctx.integer(5, "training", 1))
    return batchNormInference(ctx);
  ctx.requireRankAtLeast(x, 2, "batch norm's input (N, C, ...)");
  auto t = typeOf(x);
  Type f32 = ctx.b.getF32Type();
  Value xf = ctx.castTo(x, f32);
  int64_t rank = t.getRank(), C = t.getDimSize(1);
  if (C == 0 || t.getNumElements() == 0)
    throw ImportError("batch norm in training mode of an empty input (shape with a 0) is not "
                      "supported");
  int64_t n = t.getNumElements() / C;
  SmallVector<int64_t> dims = {0};
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  SmallVector<int64_t> chan(rank - 1, 1);
  chan[0] = C;
  double momentum = ctx.number(6, "momentum", 0.1), eps = ctx.number(7, "eps", 1e-5);
  Value mean = ctx.binaryScalar(BinaryFn::mul, ctx.reduce(ReduceFn::sum, xf, dims, true), 1.0 / n);
  Value xc = ctx.binary(BinaryFn::sub, xf, mean);
  Value var = ctx.binaryScalar(BinaryFn::mul,
                               ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, xc, xc), dims, true),
                               1.0 / n);
  Value rstd = ctx.unary(UnaryFn::rsqrt, ctx.binaryScalar(BinaryFn::add, var, eps));
  Value y = ctx.binary(BinaryFn::mul, xc, rstd);
  if (ctx.isTensorArg(1))
    y = ctx.binary(BinaryFn::mul, y, ctx.castTo(ctx.reshape(ctx.tensor(1), chan), f32));
  if (ctx.isTensorArg(2))
    y = ctx.binary(BinaryFn::add, y, ctx.castTo(ctx.reshape(ctx.tensor(2), chan), f32));
  Value mean1 = ctx.reshape(mean, {C}), var1 = ctx.reshape(var, {C});
  auto update = [&](size_t i, Value stat, double scale) {
    Value running = ctx.castTo(ctx.tensor(i), f32);
    Value kept = ctx.binaryScalar(BinaryFn::mul, running, 1.0 - momentum);
    Value fresh = ctx.binaryScalar(BinaryFn::mul, stat, momentum * scale);
    return ctx.castTo(ctx.binary(BinaryFn::add, kept, fresh), typeOf(ctx.tensor(i)).getElementType());
  };
  double unbiased = n > 1 ? (double)n / (n - 1) : 1.0;
  Values results = {y, mean1, ctx.reshape(rstd, {C}), update(3, mean1, 1.0),
                    update(4, var1, unbiased)};
  for (size_t i = 0; i < results.size() && i < ctx.numResults(); ++i)
    if (ctx.hasResult(i))
      results[i] = ctx.castTo(results[i], ctx.resultType(i).getElementType());
  return results;
}

} // namespace neuron::compiler::aten
