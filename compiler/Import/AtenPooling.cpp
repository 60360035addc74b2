// Importers of N-d pooling (1-D ops reach here as 2-D): max pooling with indices and its
// backward, average pooling (ceil_mode, count_include_pad, divisor_override) and its
// backward, adaptive average and max pooling and their backward; antialiased bilinear
// upsampling.
//
// Pooling works on [N, C, S...] (an input without a batch dim gets one). Fixed windows
// expand per kernel offset into a strided ntorch.slice of the padded input (the backward
// places gradients with ntorch.scatter_window, its adjoint). Adaptive windows do not have
// a stride: per offset inside the widest window, the element each window reads there is
// gathered (ntorch.gather_rows with constant indices; the window's last element where it
// is shorter). Adaptive average pooling and antialiased interpolation are separable
// weighted sums of such gathers, dim by dim; their backward gathers, per input position,
// the outputs that read it.
#include "compiler/Import/AtenImporters.h"

#include <cmath>
#include <map>
#include <optional>

using namespace mlir;
using neuron::ntorch::BinaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The most kernel offsets a pooling expansion unrolls (each is a few ops).
constexpr int64_t kMaxWindowOffsets = 4096;
/// Positions are compared in fp32: exact up to 2^24.
constexpr double kNoPosition = 3.0e38;

std::string listStr(ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

static int64_t product(ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

SmallVector<int64_t> perDim(NodeContext &ctx, size_t i, const char *name, int64_t r,
                            SmallVector<int64_t> fallback) {
  const nlohmann::json *a = ctx.arg(i, name);
  SmallVector<int64_t> v;
  if (a && !a->is_null())
    v = ctx.intList(i, name);
  if (v.empty())
    v = fallback;
  if (v.size() == 1)
    v.assign(r, v[0]);
  if ((int64_t)v.size() != r)
    throw ImportError(std::string("argument ") + name + " should have 1 or " +
                      std::to_string(r) + " values, got " + std::to_string(v.size()));
  return v;
}

int64_t PoolWindow::offsets() const { return product(kernel); }

PoolWindow poolWindowNd(NodeContext &ctx, Value x, int64_t r, size_t first, bool hasDilation) {
  ctx.requireRank(x, r + 2, "the pooling input (after adding a batch dim to C, spatial...)");
  PoolWindow w;
  w.kernel = perDim(ctx, first, "kernel_size", r, {});
  w.stride = perDim(ctx, first + 1, "stride", r, w.kernel);
  w.padding = perDim(ctx, first + 2, "padding", r, {0});
  w.dilation = hasDilation ? perDim(ctx, first + 3, "dilation", r, {1})
                           : SmallVector<int64_t>(r, 1);
  w.ceilMode = ctx.integer(first + (hasDilation ? 4 : 3), "ceil_mode", 0);
  auto t = typeOf(x);
  for (int64_t i = 0; i < r; ++i) {
    int64_t in = t.getDimSize(2 + i), k = w.kernel[i], s = w.stride[i], p = w.padding[i],
            d = w.dilation[i];
    static const char *const kNames[] = {"depth", "height", "width"};
    std::string dim = r <= 3 ? kNames[3 - r + i] : "spatial dim " + std::to_string(i);
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

/// Checks that a window's expansion (a few ops per kernel offset) stays small.
static void requireExpandableOffsets(const PoolWindow &w) {
  if (w.offsets() > kMaxWindowOffsets)
    throw ImportError("a pooling window of " + listStr(w.kernel) +
                      " is too large to expand (at most " + std::to_string(kMaxWindowOffsets) +
                      " offsets)");
}

static PoolWindow poolWindow(NodeContext &ctx, Value x, size_t first, bool hasDilation) {
  return poolWindowNd(ctx, x, 2, first, hasDilation);
}

Value withBatchNd(NodeContext &ctx, Value x, int64_t r) {
  auto t = typeOf(x);
  if (t.getRank() != r + 1)
    return x;
  SmallVector<int64_t> shape = {1};
  shape.append(t.getShape().begin(), t.getShape().end());
  return ctx.reshape(x, shape);
}

static Value withBatch(NodeContext &ctx, Value x) { return withBatchNd(ctx, x, 2); }

/// The result as the graph records it (drops the batch dim added to an unbatched input).
static Value asResult(NodeContext &ctx, Value v, size_t i, int64_t r) {
  int64_t rank = ctx.resultType(i).getRank();
  ctx.requireRank(v, rank == r + 1 ? r + 2 : rank, "result " + std::to_string(i));
  if (typeOf(v).getNumElements() != ctx.resultType(i).getNumElements())
    throw ImportError("result " + std::to_string(i) + " should have " +
                      std::to_string(typeOf(v).getNumElements()) + " elements");
  return ctx.reshape(v, ctx.resultType(i).getShape());
}

/// Pads the spatial dims of [N, C, S...]: `padding` before, up to `padded` after.
static Value padSpatial(NodeContext &ctx, Value x, const PoolWindow &w, double value) {
  auto t = typeOf(x);
  int64_t r = w.kernel.size();
  SmallVector<int64_t> low = {0, 0}, high = {0, 0}, shape = {t.getDimSize(0), t.getDimSize(1)};
  bool any = false;
  for (int64_t i = 0; i < r; ++i) {
    low.push_back(w.padding[i]);
    high.push_back(w.padded[i] - t.getDimSize(2 + i) - w.padding[i]);
    shape.push_back(w.padded[i]);
    any = any || low.back() || high.back();
  }
  if (!any)
    return x;
  return ctx.b.create<nt::PadOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                 low, high, APFloat(value));
}

/// Every kernel offset, in row-major order.
static SmallVector<SmallVector<int64_t>> kernelOffsets(ArrayRef<int64_t> kernel) {
  SmallVector<SmallVector<int64_t>> all = {{}};
  for (int64_t k : kernel) {
    SmallVector<SmallVector<int64_t>> next;
    for (auto &prefix : all)
      for (int64_t i = 0; i < k; ++i) {
        next.push_back(prefix);
        next.back().push_back(i);
      }
    all = std::move(next);
  }
  return all;
}

/// Offsets and strides of kernel offset `k`'s window in the padded [N, C, P...].
static std::pair<SmallVector<int64_t>, SmallVector<int64_t>> windowAccess(const PoolWindow &w,
                                                                         ArrayRef<int64_t> k) {
  SmallVector<int64_t> offsets = {0, 0}, strides = {1, 1};
  for (size_t i = 0; i < k.size(); ++i) {
    offsets.push_back(k[i] * w.dilation[i]);
    strides.push_back(w.stride[i]);
  }
  return {offsets, strides};
}

/// The strided window of the padded input at kernel offset `k`: [N, C, O...].
static Value window(NodeContext &ctx, Value padded, const PoolWindow &w, ArrayRef<int64_t> k) {
  auto t = typeOf(padded);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1)};
  shape.append(w.out.begin(), w.out.end());
  auto [offsets, strides] = windowAccess(w, k);
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()),
                                   padded, offsets, strides);
}

/// `part` [N, C, O...] placed at kernel offset `k`'s window of a padded [N, C, P...].
static Value place(NodeContext &ctx, Value part, const PoolWindow &w, ArrayRef<int64_t> k) {
  auto t = typeOf(part);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1)};
  shape.append(w.padded.begin(), w.padded.end());
  auto [offsets, strides] = windowAccess(w, k);
  return ctx.b.create<nt::ScatterWindowOp>(
      ctx.loc, RankedTensorType::get(shape, t.getElementType()), part, offsets, strides);
}

/// Crops the padded [N, C, P...] to the input's [N, C, S...].
static Value crop(NodeContext &ctx, Value padded, const PoolWindow &w, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> offsets = {0, 0};
  offsets.append(w.padding.begin(), w.padding.end());
  return ctx.b.create<nt::SliceOp>(
      ctx.loc, RankedTensorType::get(shape, typeOf(padded).getElementType()), padded, offsets,
      SmallVector<int64_t>(shape.size(), 1));
}

/// The flat input position (row-major over the spatial dims) each output reads at kernel
/// offset `k`, or `outside` where that is padding.
static Value flatPositions(NodeContext &ctx, const PoolWindow &w, ArrayRef<int64_t> k,
                           ArrayRef<int64_t> in, double outside) {
  int64_t r = w.kernel.size();
  auto type = RankedTensorType::get(w.out, ctx.b.getF32Type());
  SmallVector<APFloat> values;
  for (auto &o : kernelOffsets(w.out)) {
    int64_t flat = 0;
    bool inside = true;
    for (int64_t i = 0; i < r; ++i) {
      int64_t p = o[i] * w.stride[i] + k[i] * w.dilation[i] - w.padding[i];
      inside = inside && p >= 0 && p < in[i];
      flat = flat * in[i] + p;
    }
    values.push_back(APFloat(inside ? (float)flat : (float)outside));
  }
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// Checks that the positions of an index-computing expansion stay small and exact.
static void requireExpandablePositions(NodeContext &ctx, const PoolWindow &w, Value x) {
  requireExpandableOffsets(w);
  int64_t r = w.kernel.size();
  ctx.requireExpandable(product(typeOf(x).getShape().take_back(r)),
                        "max-pool positions of one plane");
  ctx.requireExpandable(product(w.out), "max-pool output positions of one plane");
}

//===----------------------------------------------------------------------===//
// Max pooling
//===----------------------------------------------------------------------===//

/// max_pool{2,3}d_with_indices(x, kernel, stride, padding, dilation, ceil_mode) values: one
/// pool2d op for 2-D windows without dilation or ceil_mode; otherwise the max over the
/// kernel offsets of strided windows of the input padded with -inf.
static Value maxPoolValues(NodeContext &ctx, Value x, const PoolWindow &w) {
  auto t = typeOf(x);
  int64_t r = w.kernel.size();
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1)};
  shape.append(w.out.begin(), w.out.end());
  auto yType = RankedTensorType::get(shape, t.getElementType());
  if (r == 2 && w.dilation == SmallVector<int64_t>{1, 1} && !w.ceilMode)
    return ctx.b.create<nt::Pool2dOp>(ctx.loc, yType, nt::PoolFn::max, x, w.kernel, w.stride,
                                      w.padding, false);
  requireExpandableOffsets(w);
  Value xp = padSpatial(ctx, x, w, -std::numeric_limits<double>::infinity());
  Value y;
  for (auto &k : kernelOffsets(w.kernel)) {
    Value win = window(ctx, xp, w, k);
    y = y ? ctx.binary(BinaryFn::max, y, win) : win;
  }
  return y;
}

/// The index (flat position in the plane) of each window's maximum as PyTorch's CPU kernel
/// defines it: the first maximum in row-major order, or the last NaN when the window
/// holds one. `y` holds the windows' maxima.
static Value maxPoolIndices(NodeContext &ctx, Value x, Value y, const PoolWindow &w) {
  requireExpandablePositions(ctx, w, x);
  auto t = typeOf(x);
  ArrayRef<int64_t> in = t.getShape().drop_front(2);
  Value xp = padSpatial(ctx, x, w, -std::numeric_limits<double>::infinity());
  auto posType = RankedTensorType::get(typeOf(y).getShape(), ctx.b.getF32Type());
  Value firstMax, lastNaN;
  Value none = ctx.scalar(ctx.b.getF32Type(), kNoPosition),
        noNaN = ctx.scalar(ctx.b.getF32Type(), -1.0);
  for (auto &k : kernelOffsets(w.kernel)) {
    Value win = window(ctx, xp, w, k);
    Value pos = flatPositions(ctx, w, k, in, kNoPosition);
    Value isMax = ctx.binary(BinaryFn::eq, win, y);
    Value isNaN = ctx.binary(BinaryFn::ne, win, win);
    Value m = ctx.b.create<nt::SelectOp>(ctx.loc, posType, isMax, pos, none);
    Value n = ctx.b.create<nt::SelectOp>(ctx.loc, posType, isNaN, pos, noNaN);
    firstMax = firstMax ? ctx.binary(BinaryFn::min, firstMax, m) : m;
    lastNaN = lastNaN ? ctx.binary(BinaryFn::max, lastNaN, n) : n;
  }
  Value anyNaN = ctx.binaryScalar(BinaryFn::ge, lastNaN, 0.0);
  return ctx.b.create<nt::SelectOp>(ctx.loc, posType, anyNaN, lastNaN, firstMax);
}

template <int R> static Values maxPoolWithIndicesNd(NodeContext &ctx) {
  Value x = withBatchNd(ctx, ctx.tensor(0), R);
  PoolWindow w = poolWindowNd(ctx, x, R, 1, /*hasDilation=*/true);
  Value y = maxPoolValues(ctx, x, w);
  if (!ctx.hasResult(1))
    return {asResult(ctx, y, 0, R), Value()};
  Value best = maxPoolIndices(ctx, x, y, w);
  return {asResult(ctx, y, 0, R),
          asResult(ctx, ctx.castTo(best, ctx.resultType(1).getElementType()), 1, R)};
}

Values maxPool2d(NodeContext &ctx) {
  Value x = withBatch(ctx, ctx.tensor(0));
  PoolWindow w = poolWindow(ctx, x, 1, /*hasDilation=*/true);
  return {asResult(ctx, maxPoolValues(ctx, x, w), 0, 2), Value()};
}
Values maxPool2dWithIndices(NodeContext &ctx) { return maxPoolWithIndicesNd<2>(ctx); }
Values maxPool3dWithIndices(NodeContext &ctx) { return maxPoolWithIndicesNd<3>(ctx); }

/// max_pool{2,3}d_with_indices_backward(grad, x, kernel, stride, padding, dilation,
/// ceil_mode, indices): grad_x[p] is the sum of grad over the outputs whose index is p,
/// as eager computes it: a scatter-add of each plane's gradient at its indices. The op
/// takes any indices of the plane (not only a position of the output's own window), so
/// the window is not used; an index outside the plane raises on the device.
template <int R> static Values maxPoolBackwardNd(NodeContext &ctx) {
  Value grad = withBatchNd(ctx, ctx.tensor(0), R), x = withBatchNd(ctx, ctx.tensor(1), R);
  Value indices = withBatchNd(ctx, ctx.tensor(7), R);
  PoolWindow w = poolWindowNd(ctx, x, R, 2, /*hasDilation=*/true);
  auto xt = typeOf(x), gt = typeOf(grad);
  SmallVector<int64_t> outShape = {xt.getDimSize(0), xt.getDimSize(1)};
  outShape.append(w.out.begin(), w.out.end());
  if (gt.getShape() != ArrayRef<int64_t>(outShape) ||
      typeOf(indices).getShape() != ArrayRef<int64_t>(outShape))
    throw ImportError("the gradient and the indices must have the pooled shape " +
                      listStr(outShape));
  int64_t planes = xt.getDimSize(0) * xt.getDimSize(1);
  int64_t plane = product(xt.getShape().drop_front(2)), outPlane = product(w.out);
  Value zeros = ctx.splat(RankedTensorType::get({planes, plane}, gt.getElementType()), 0.0);
  Value gx = scatterAddAlong(ctx, "max_pool" + std::to_string(R) + "d_with_indices_backward",
                             zeros, 1, ctx.reshape(indices, {planes, outPlane}),
                             ctx.reshape(grad, {planes, outPlane}));
  gx = ctx.reshape(gx, xt.getShape());
  return {asResult(ctx, ctx.castTo(gx, ctx.resultType().getElementType()), 0, R)};
}

Values maxPool2dBackward(NodeContext &ctx) { return maxPoolBackwardNd<2>(ctx); }
Values maxPool3dBackward(NodeContext &ctx) { return maxPoolBackwardNd<3>(ctx); }

//===----------------------------------------------------------------------===//
// Average pooling
//===----------------------------------------------------------------------===//

/// The reciprocal of each output's divisor, as PyTorch's CPU kernels count it: the window
/// clipped to the input and its padding (count_include_pad), or to the input alone, or
/// divisor_override. [O...] in fp32.
static Value inverseDivisors(NodeContext &ctx, const PoolWindow &w, ArrayRef<int64_t> in,
                             bool includePad, int64_t divisorOverride) {
  int64_t r = w.kernel.size();
  auto type = RankedTensorType::get(w.out, ctx.b.getF32Type());
  SmallVector<APFloat> values;
  for (auto &o : kernelOffsets(w.out)) {
    int64_t padded = 1, inside = 1;
    for (int64_t i = 0; i < r; ++i) {
      int64_t start = o[i] * w.stride[i] - w.padding[i];
      int64_t end = std::min(start + w.kernel[i], in[i] + w.padding[i]);
      padded *= end - start;
      inside *= std::min(end, in[i]) - std::max<int64_t>(start, 0);
    }
    int64_t divisor = divisorOverride ? divisorOverride : includePad ? padded : inside;
    values.push_back(APFloat(divisor > 0 ? (float)(1.0 / divisor) : 0.0f));
  }
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// The avg_pool arguments after the window: count_include_pad and divisor_override (0 when
/// absent).
static std::pair<bool, int64_t> avgOptions(NodeContext &ctx, size_t first) {
  bool includePad = ctx.integer(first, "count_include_pad", 1);
  int64_t divisor = 0;
  const nlohmann::json *d = ctx.arg(first + 1, "divisor_override");
  if (d && !d->is_null()) {
    divisor = ctx.integer(first + 1, "divisor_override", 0);
    if (divisor == 0)
      throw ImportError("avg_pool: divisor_override must be non-zero");
  }
  return {includePad, divisor};
}

static Value toF32(NodeContext &ctx, Value x) {
  Type et = typeOf(x).getElementType();
  return (et.isBF16() || et.isF16()) ? ctx.castTo(x, ctx.b.getF32Type()) : x;
}

/// avg_pool{2,3}d(x, kernel, stride, padding, ceil_mode, count_include_pad,
/// divisor_override): 2-D without ceil_mode or divisor_override is one pool2d op;
/// otherwise the sum over kernel offsets of windows of the zero-padded input times each
/// output's reciprocal divisor (in fp32).
template <int R> static Values avgPoolNd(NodeContext &ctx) {
  Value x = withBatchNd(ctx, ctx.tensor(0), R);
  PoolWindow w = poolWindowNd(ctx, x, R, 1, /*hasDilation=*/false);
  auto [includePad, divisor] = avgOptions(ctx, 5);
  auto t = typeOf(x);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1)};
  shape.append(w.out.begin(), w.out.end());
  if (R == 2 && !w.ceilMode && !divisor) {
    auto yType = RankedTensorType::get(shape, t.getElementType());
    Value y = ctx.b.create<nt::Pool2dOp>(ctx.loc, yType, nt::PoolFn::avg, x, w.kernel, w.stride,
                                         w.padding, !includePad);
    return {asResult(ctx, y, 0, R)};
  }
  requireExpandableOffsets(w);
  Value xp = padSpatial(ctx, toF32(ctx, x), w, 0.0);
  Value sum;
  for (auto &k : kernelOffsets(w.kernel)) {
    Value win = window(ctx, xp, w, k);
    sum = sum ? ctx.binary(BinaryFn::add, sum, win) : win;
  }
  Value y = ctx.binary(BinaryFn::mul, sum,
                       inverseDivisors(ctx, w, t.getShape().drop_front(2), includePad, divisor));
  return {asResult(ctx, ctx.castTo(y, ctx.resultType().getElementType()), 0, R)};
}

Values avgPool2d(NodeContext &ctx) { return avgPoolNd<2>(ctx); }
Values avgPool3d(NodeContext &ctx) { return avgPoolNd<3>(ctx); }

/// avg_pool{2,3}d_backward(grad, x, kernel, stride, padding, ceil_mode, count_include_pad,
/// divisor_override): the adjoint, grad times the reciprocal divisors placed at every
/// kernel offset's window of the padded input, summed and cropped (in fp32).
template <int R> static Values avgPoolBackwardNd(NodeContext &ctx) {
  Value grad = withBatchNd(ctx, ctx.tensor(0), R), x = withBatchNd(ctx, ctx.tensor(1), R);
  PoolWindow w = poolWindowNd(ctx, x, R, 2, /*hasDilation=*/false);
  auto [includePad, divisor] = avgOptions(ctx, 6);
  auto xt = typeOf(x);
  SmallVector<int64_t> outShape = {xt.getDimSize(0), xt.getDimSize(1)};
  outShape.append(w.out.begin(), w.out.end());
  if (typeOf(grad).getShape() != ArrayRef<int64_t>(outShape))
    throw ImportError("the gradient must have the pooled shape " + listStr(outShape));
  requireExpandableOffsets(w);
  Value scaled = ctx.binary(
      BinaryFn::mul, toF32(ctx, grad),
      inverseDivisors(ctx, w, xt.getShape().drop_front(2), includePad, divisor));
  Value sum;
  for (auto &k : kernelOffsets(w.kernel)) {
    Value placed = place(ctx, scaled, w, k);
    sum = sum ? ctx.binary(BinaryFn::add, sum, placed) : placed;
  }
  Value gx = crop(ctx, sum, w, xt.getShape());
  return {asResult(ctx, ctx.castTo(gx, ctx.resultType().getElementType()), 0, R)};
}

Values avgPool2dBackward(NodeContext &ctx) { return avgPoolBackwardNd<2>(ctx); }
Values avgPool3dBackward(NodeContext &ctx) { return avgPoolBackwardNd<3>(ctx); }

//===----------------------------------------------------------------------===//
// Adaptive pooling
//===----------------------------------------------------------------------===//

/// Output o of an adaptive pool over `in` positions reads [start, end): PyTorch's
/// floor(o * in / out) and ceil((o + 1) * in / out).
static std::pair<int64_t, int64_t> adaptiveRange(int64_t o, int64_t in, int64_t out) {
  return {(o * in) / out, ((o + 1) * in + out - 1) / out};
}

/// The adaptive pool's output sizes, checked against the input [N, C, S...].
static SmallVector<int64_t> adaptiveOut(NodeContext &ctx, Value x, int64_t r, size_t i) {
  SmallVector<int64_t> out = perDim(ctx, i, "output_size", r, {});
  auto t = typeOf(x);
  for (int64_t d = 0; d < r; ++d)
    if (out[d] < 1 || t.getDimSize(2 + d) < 1)
      throw ImportError("adaptive pooling from " + listStr(t.getShape().drop_front(2)) + " to " +
                        listStr(out) + ": sizes must be positive");
  return out;
}

/// Gathers positions `index[j]` of spatial dim `d` of [N, C, S...]: [N, C, ..., J, ...].
static Value gatherAlong(NodeContext &ctx, Value x, int64_t d, ArrayRef<int64_t> index) {
  auto t = typeOf(x);
  int64_t rank = t.getRank(), dim = 2 + d, n = t.getDimSize(dim);
  SmallVector<int64_t> perm = {dim};
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim)
      perm.push_back(i);
  Value moved = ctx.permute(x, perm);
  int64_t rest = t.getNumElements() / n, j = index.size();
  auto indexType = RankedTensorType::get({j}, ctx.b.getI64Type());
  SmallVector<APInt> values;
  for (int64_t i : index)
    values.push_back(APInt(64, i, true));
  Value idx = ctx.b.create<nt::ConstantOp>(
      ctx.loc, indexType, cast<ElementsAttr>(DenseElementsAttr::get(indexType, values)));
  Value rows = ctx.b.create<nt::GatherRowsOp>(
      ctx.loc, RankedTensorType::get({j, rest}, t.getElementType()),
      ctx.reshape(moved, {n, rest}), idx);
  SmallVector<int64_t> movedShape(typeOf(moved).getShape());
  movedShape[0] = j;
  SmallVector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  return ctx.permute(ctx.reshape(rows, movedShape), inverse);
}

/// A linear resampling along one dim: output o is sum_j weights[o][j] * x[start[o] + j]
/// (adaptive average pooling, antialiased interpolation).
struct Taps {
  int64_t in = 0;
  SmallVector<int64_t> start;
  SmallVector<SmallVector<double>> weights;
  int64_t out() const { return start.size(); }
};

/// A constant [n, 1...] (one per spatial dim after `d`) of `values`, to broadcast along
/// spatial dim d of [N, C, S...].
static Value alongDim(NodeContext &ctx, ArrayRef<float> values, int64_t d, int64_t r,
                      Type elementType) {
  SmallVector<int64_t> shape = {(int64_t)values.size()};
  shape.append(r - 1 - d, 1);
  auto type = RankedTensorType::get(shape, elementType);
  if (elementType.isInteger(1)) {
    SmallVector<bool> bits;
    for (float v : values)
      bits.push_back(v != 0.0f);
    return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                        cast<ElementsAttr>(DenseElementsAttr::get(type, bits)));
  }
  SmallVector<APFloat> fs;
  for (float v : values)
    fs.push_back(APFloat(v));
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, fs)));
}

/// sum over terms of select(mask, gathered * weight, 0): a weighted sum of gathered
/// elements in which a zero weight never meets an inf or NaN (0 * inf would be NaN).
/// terms[j] = (gather index along dim d, weight per position, whether the tap exists).
static Value weightedGatherSum(
    NodeContext &ctx, Value x, int64_t d,
    ArrayRef<std::tuple<SmallVector<int64_t>, SmallVector<float>, SmallVector<float>>> terms) {
  int64_t r = typeOf(x).getRank() - 2;
  Type f32 = ctx.b.getF32Type();
  Value sum, zero = ctx.scalar(f32, 0.0);
  for (auto &[index, weight, exists] : terms) {
    Value g = gatherAlong(ctx, x, d, index);
    Value term = ctx.binary(BinaryFn::mul, g, alongDim(ctx, weight, d, r, f32));
    if (llvm::any_of(exists, [](float e) { return e == 0.0f; }))
      term = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(term),
                                        alongDim(ctx, exists, d, r, ctx.b.getI1Type()), term,
                                        zero);
    sum = sum ? ctx.binary(BinaryFn::add, sum, term) : term;
  }
  return sum;
}

/// Applies `taps` along spatial dim d of the fp32 [N, C, S...]: one gather per tap offset.
static Value applyTaps(NodeContext &ctx, Value x, int64_t d, const Taps &taps) {
  size_t width = 0;
  for (auto &w : taps.weights)
    width = std::max(width, w.size());
  SmallVector<std::tuple<SmallVector<int64_t>, SmallVector<float>, SmallVector<float>>> terms;
  for (size_t j = 0; j < width; ++j) {
    SmallVector<int64_t> index;
    SmallVector<float> weight, exists;
    for (int64_t o = 0; o < taps.out(); ++o) {
      size_t n = taps.weights[o].size();
      index.push_back(taps.start[o] + (int64_t)std::min(j, n ? n - 1 : 0));
      weight.push_back(j < n ? (float)taps.weights[o][j] : 0.0f);
      exists.push_back(j < n ? 1.0f : 0.0f);
    }
    terms.emplace_back(index, weight, exists);
  }
  return weightedGatherSum(ctx, x, d, terms);
}

/// The adjoint of applyTaps along dim d: [N, C, ..., out, ...] -> [N, C, ..., in, ...];
/// input position s receives weight * grad[o] from every output o whose taps read s.
static Value applyTapsAdjoint(NodeContext &ctx, Value g, int64_t d, const Taps &taps) {
  SmallVector<SmallVector<std::pair<int64_t, double>>> readers(taps.in);
  for (int64_t o = 0; o < taps.out(); ++o)
    for (size_t j = 0; j < taps.weights[o].size(); ++j)
      readers[taps.start[o] + j].push_back({o, taps.weights[o][j]});
  size_t slots = 0;
  for (auto &rd : readers)
    slots = std::max(slots, rd.size());
  if (slots > (size_t)kMaxWindowOffsets)
    throw ImportError("resampling backward: a position is read by " + std::to_string(slots) +
                      " outputs, too many to expand");
  SmallVector<std::tuple<SmallVector<int64_t>, SmallVector<float>, SmallVector<float>>> terms;
  for (size_t m = 0; m < slots; ++m) {
    SmallVector<int64_t> index;
    SmallVector<float> weight, exists;
    for (auto &rd : readers) {
      bool has = m < rd.size();
      index.push_back(has ? rd[m].first : 0);
      weight.push_back(has ? (float)rd[m].second : 0.0f);
      exists.push_back(has ? 1.0f : 0.0f);
    }
    terms.emplace_back(index, weight, exists);
  }
  if (terms.empty()) {
    SmallVector<int64_t> shape(typeOf(g).getShape());
    shape[2 + d] = taps.in;
    return ctx.splat(RankedTensorType::get(shape, ctx.b.getF32Type()), 0.0);
  }
  return weightedGatherSum(ctx, g, d, terms);
}

/// Adaptive average pooling taps over `in` positions into `out`: 1 / (end - start) each.
static Taps adaptiveTaps(int64_t in, int64_t out) {
  Taps t;
  t.in = in;
  for (int64_t o = 0; o < out; ++o) {
    auto [start, end] = adaptiveRange(o, in, out);
    t.start.push_back(start);
    t.weights.emplace_back(end - start, 1.0 / (end - start));
  }
  return t;
}

/// Separable resampling of [N, C, S...] in fp32, dim by dim (the last first), by `taps`
/// per dim (adjoint: [N, C, O...] -> [N, C, S...]).
static Value resample(NodeContext &ctx, Value x, ArrayRef<Taps> taps, bool adjoint) {
  Value y = ctx.castTo(x, ctx.b.getF32Type());
  for (int64_t d = taps.size() - 1; d >= 0; --d) {
    int64_t width = 0;
    for (auto &w : taps[d].weights)
      width = std::max<int64_t>(width, w.size());
    if (width > kMaxWindowOffsets)
      throw ImportError("resampling windows of " + std::to_string(width) +
                        " positions are too large to expand (at most " +
                        std::to_string(kMaxWindowOffsets) + ")");
    y = adjoint ? applyTapsAdjoint(ctx, y, d, taps[d]) : applyTaps(ctx, y, d, taps[d]);
  }
  return y;
}

/// Adaptive average pooling [N, C, S...] -> [N, C, O...] (adjoint: [N, C, O...] ->
/// [N, C, S...]) in fp32.
static Value adaptiveAverage(NodeContext &ctx, Value x, ArrayRef<int64_t> in,
                             ArrayRef<int64_t> out, bool adjoint) {
  SmallVector<Taps> taps;
  for (size_t d = 0; d < in.size(); ++d)
    taps.push_back(adaptiveTaps(in[d], out[d]));
  return resample(ctx, x, taps, adjoint);
}

/// _adaptive_avg_pool{2,3}d(x, output_size): one pool2d op when a 2-D output divides the
/// input, else separable matmuls.
template <int R> static Values adaptiveAvgPoolNd(NodeContext &ctx) {
  Value x = withBatchNd(ctx, ctx.tensor(0), R);
  ctx.requireRank(x, R + 2, "adaptive_avg_pool's input ([N,] C, spatial...)");
  SmallVector<int64_t> out = adaptiveOut(ctx, x, R, 1);
  auto t = typeOf(x);
  SmallVector<int64_t> in(t.getShape().drop_front(2));
  if (R == 2 && in[0] % out[0] == 0 && in[1] % out[1] == 0) {
    SmallVector<int64_t> kernel = {in[0] / out[0], in[1] / out[1]};
    auto yType = RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), out[0], out[1]},
                                       t.getElementType());
    Value y = ctx.b.create<nt::Pool2dOp>(ctx.loc, yType, nt::PoolFn::avg, x, kernel, kernel,
                                         SmallVector<int64_t>{0, 0}, false);
    return {asResult(ctx, y, 0, R)};
  }
  Value y = adaptiveAverage(ctx, x, in, out, /*adjoint=*/false);
  return {asResult(ctx, ctx.castTo(y, ctx.resultType().getElementType()), 0, R)};
}

Values adaptiveAvgPool2d(NodeContext &ctx) { return adaptiveAvgPoolNd<2>(ctx); }
Values adaptiveAvgPool3d(NodeContext &ctx) { return adaptiveAvgPoolNd<3>(ctx); }

/// _adaptive_avg_pool{2,3}d_backward(grad, x): the adjoint matmuls.
template <int R> static Values adaptiveAvgPoolBackwardNd(NodeContext &ctx) {
  Value grad = withBatchNd(ctx, ctx.tensor(0), R), x = withBatchNd(ctx, ctx.tensor(1), R);
  ctx.requireRank(x, R + 2, "adaptive_avg_pool's input ([N,] C, spatial...)");
  auto xt = typeOf(x), gt = typeOf(grad);
  ctx.requireRank(grad, R + 2, "adaptive_avg_pool's gradient");
  if (gt.getDimSize(0) != xt.getDimSize(0) || gt.getDimSize(1) != xt.getDimSize(1))
    throw ImportError("adaptive_avg_pool backward: gradient " + listStr(gt.getShape()) +
                      " and input " + listStr(xt.getShape()) + " differ in N or C");
  Value gx = adaptiveAverage(ctx, grad, xt.getShape().drop_front(2),
                             gt.getShape().drop_front(2), /*adjoint=*/true);
  return {asResult(ctx, ctx.castTo(gx, ctx.resultType().getElementType()), 0, R)};
}

Values adaptiveAvgPool2dBackward(NodeContext &ctx) { return adaptiveAvgPoolBackwardNd<2>(ctx); }
Values adaptiveAvgPool3dBackward(NodeContext &ctx) { return adaptiveAvgPoolBackwardNd<3>(ctx); }

/// The widest adaptive window over `in` positions into `out`.
static int64_t widestWindow(int64_t in, int64_t out) {
  int64_t widest = 0;
  for (int64_t o = 0; o < out; ++o) {
    auto [start, end] = adaptiveRange(o, in, out);
    widest = std::max(widest, end - start);
  }
  return widest;
}

/// adaptive_max_pool{2,3}d(x, output_size) -> (values, indices): per offset j inside the
/// widest window (per dim), the element each window reads at min(start + j, end - 1)
/// (gathered dim by dim); the max over offsets, and the index as for max pooling: the
/// first maximum in row-major order, or the last NaN.
template <int R> static Values adaptiveMaxPoolNd(NodeContext &ctx) {
  Value x = withBatchNd(ctx, ctx.tensor(0), R);
  ctx.requireRank(x, R + 2, "adaptive_max_pool's input ([N,] C, spatial...)");
  SmallVector<int64_t> out = adaptiveOut(ctx, x, R, 1);
  auto t = typeOf(x);
  SmallVector<int64_t> in(t.getShape().drop_front(2)), widest;
  for (int64_t d = 0; d < R; ++d)
    widest.push_back(widestWindow(in[d], out[d]));
  if (product(widest) > kMaxWindowOffsets)
    throw ImportError("adaptive max pooling windows of up to " + listStr(widest) +
                      " are too large to expand (at most " + std::to_string(kMaxWindowOffsets) +
                      " offsets)");
  ctx.requireExpandable(product(in), "max-pool positions of one plane");
  ctx.requireExpandable(product(out), "max-pool output positions of one plane");
  // The position along dim d that window o reads at offset j.
  auto at = [&](int64_t d, int64_t o, int64_t j) {
    auto [start, end] = adaptiveRange(o, in[d], out[d]);
    return std::min(start + j, end - 1);
  };
  SmallVector<Value> windows;
  SmallVector<Value> positions;
  auto posType = RankedTensorType::get(out, ctx.b.getF32Type());
  // Gathered along the first dims at the offsets of a prefix of k, reused by the offsets
  // that share the prefix.
  std::map<SmallVector<int64_t>, Value> gathered;
  for (auto &k : kernelOffsets(widest)) {
    Value win = x;
    for (int64_t d = 0; d < R; ++d) {
      SmallVector<int64_t> prefix(k.begin(), k.begin() + d + 1);
      Value &cached = gathered[prefix];
      if (!cached) {
        SmallVector<int64_t> index;
        for (int64_t o = 0; o < out[d]; ++o)
          index.push_back(at(d, o, k[d]));
        cached = gatherAlong(ctx, win, d, index);
      }
      win = cached;
    }
    windows.push_back(win);
    SmallVector<APFloat> values;
    for (auto &o : kernelOffsets(out)) {
      int64_t flat = 0;
      for (int64_t d = 0; d < R; ++d)
        flat = flat * in[d] + at(d, o[d], k[d]);
      values.push_back(APFloat((float)flat));
    }
    positions.push_back(ctx.b.create<nt::ConstantOp>(
        ctx.loc, posType, cast<ElementsAttr>(DenseElementsAttr::get(posType, values))));
  }
  Value y;
  for (Value win : windows)
    y = y ? ctx.binary(BinaryFn::max, y, win) : win;
  Values results = {asResult(ctx, y, 0, R), Value()};
  if (!ctx.hasResult(1))
    return results;
  auto idxType = RankedTensorType::get(typeOf(y).getShape(), ctx.b.getF32Type());
  Value none = ctx.scalar(ctx.b.getF32Type(), kNoPosition),
        noNaN = ctx.scalar(ctx.b.getF32Type(), -1.0);
  Value firstMax, lastNaN;
  for (size_t i = 0; i < windows.size(); ++i) {
    Value isMax = ctx.binary(BinaryFn::eq, windows[i], y);
    Value isNaN = ctx.binary(BinaryFn::ne, windows[i], windows[i]);
    Value m = ctx.b.create<nt::SelectOp>(ctx.loc, idxType, isMax, positions[i], none);
    Value n = ctx.b.create<nt::SelectOp>(ctx.loc, idxType, isNaN, positions[i], noNaN);
    firstMax = firstMax ? ctx.binary(BinaryFn::min, firstMax, m) : m;
    lastNaN = lastNaN ? ctx.binary(BinaryFn::max, lastNaN, n) : n;
  }
  Value anyNaN = ctx.binaryScalar(BinaryFn::ge, lastNaN, 0.0);
  Value best = ctx.b.create<nt::SelectOp>(ctx.loc, idxType, anyNaN, lastNaN, firstMax);
  results[1] = asResult(ctx, ctx.castTo(best, ctx.resultType(1).getElementType()), 1, R);
  return results;
}

Values adaptiveMaxPool2d(NodeContext &ctx) { return adaptiveMaxPoolNd<2>(ctx); }
Values adaptiveMaxPool3d(NodeContext &ctx) { return adaptiveMaxPoolNd<3>(ctx); }

/// adaptive_max_pool{2,3}d_backward(grad, x, indices): grad_x[p] is the sum of grad over
/// the outputs whose index is p. Per dim, position s belongs to at most `slots` windows;
/// per combination of slots, the window each input position is in there is gathered
/// (gradient and index), and adds where its index is that position.
template <int R> static Values adaptiveMaxPoolBackwardNd(NodeContext &ctx) {
  Value grad = withBatchNd(ctx, ctx.tensor(0), R), x = withBatchNd(ctx, ctx.tensor(1), R);
  Value indices = withBatchNd(ctx, ctx.tensor(2), R);
  ctx.requireRank(x, R + 2, "adaptive_max_pool's input ([N,] C, spatial...)");
  auto xt = typeOf(x), gt = typeOf(grad);
  ctx.requireRank(grad, R + 2, "adaptive_max_pool's gradient");
  if (typeOf(indices).getShape() != gt.getShape() || gt.getDimSize(0) != xt.getDimSize(0) ||
      gt.getDimSize(1) != xt.getDimSize(1))
    throw ImportError("adaptive_max_pool backward: gradient " + listStr(gt.getShape()) +
                      ", indices " + listStr(typeOf(indices).getShape()) + " and input " +
                      listStr(xt.getShape()) + " do not fit");
  SmallVector<int64_t> in(xt.getShape().drop_front(2)), out(gt.getShape().drop_front(2));
  ctx.requireExpandable(product(in), "max-pool positions of one plane");
  // windowsOf[d][s]: the windows along dim d that contain position s.
  SmallVector<SmallVector<SmallVector<int64_t>>> windowsOf(R);
  SmallVector<int64_t> slots;
  for (int64_t d = 0; d < R; ++d) {
    windowsOf[d].resize(in[d]);
    for (int64_t o = 0; o < out[d]; ++o) {
      auto [start, end] = adaptiveRange(o, in[d], out[d]);
      for (int64_t s = start; s < end; ++s)
        windowsOf[d][s].push_back(o);
    }
    int64_t most = 0;
    for (auto &w : windowsOf[d])
      most = std::max<int64_t>(most, w.size());
    slots.push_back(most);
  }
  if (product(slots) > kMaxWindowOffsets)
    throw ImportError("adaptive max pooling backward: positions in up to " + listStr(slots) +
                      " windows are too many to expand");
  Value idx = ctx.castTo(indices, ctx.b.getF32Type());
  Type et = gt.getElementType();
  auto maskType = RankedTensorType::get(in, ctx.b.getF32Type());
  Value zero = ctx.scalar(et, 0.0);
  Value sum;
  // Gradients and indices gathered at a prefix of the slots, reused by the slots that
  // share it.
  std::map<SmallVector<int64_t>, std::pair<Value, Value>> gathered;
  for (auto &k : kernelOffsets(slots)) {
    Value g = grad, i = idx;
    for (int64_t d = 0; d < R; ++d) {
      auto &cached = gathered[SmallVector<int64_t>(k.begin(), k.begin() + d + 1)];
      if (!cached.first) {
        SmallVector<int64_t> index;
        for (int64_t s = 0; s < in[d]; ++s)
          index.push_back(windowsOf[d][s][std::min<int64_t>(k[d], windowsOf[d][s].size() - 1)]);
        cached = {gatherAlong(ctx, g, d, index), gatherAlong(ctx, i, d, index)};
      }
      std::tie(g, i) = cached;
    }
    // Where the slot exists at every dim, the flat position; else -1 (never an index).
    SmallVector<APFloat> values;
    for (auto &p : kernelOffsets(in)) {
      int64_t flat = 0;
      bool exists = true;
      for (int64_t d = 0; d < R; ++d) {
        exists = exists && k[d] < (int64_t)windowsOf[d][p[d]].size();
        flat = flat * in[d] + p[d];
      }
      values.push_back(APFloat(exists ? (float)flat : -1.0f));
    }
    Value pos = ctx.b.create<nt::ConstantOp>(
        ctx.loc, maskType, cast<ElementsAttr>(DenseElementsAttr::get(maskType, values)));
    Value hit = ctx.binary(BinaryFn::eq, i, pos);
    Value part = ctx.b.create<nt::SelectOp>(ctx.loc, typeOf(g), hit, g, zero);
    sum = sum ? ctx.binary(BinaryFn::add, sum, part) : part;
  }
  return {asResult(ctx, ctx.castTo(sum, ctx.resultType().getElementType()), 0, R)};
}

Values adaptiveMaxPool2dBackward(NodeContext &ctx) { return adaptiveMaxPoolBackwardNd<2>(ctx); }
Values adaptiveMaxPool3dBackward(NodeContext &ctx) { return adaptiveMaxPoolBackwardNd<3>(ctx); }

//===----------------------------------------------------------------------===//
// Antialiased bilinear interpolation
//===----------------------------------------------------------------------===//

/// PyTorch's antialiased bilinear taps over `in` positions into `out` (its CPU kernel's
/// _compute_weights_aa with the triangle filter): the filter is stretched by the scale when
/// downsampling, and each output's weights are normalized to sum to 1.
static Taps antialiasTaps(int64_t in, int64_t out, bool alignCorners,
                          std::optional<double> scaleFactor) {
  double scale;
  if (alignCorners)
    scale = out > 1 ? (double)(in - 1) / (out - 1) : 0.0;
  else
    scale = scaleFactor && *scaleFactor > 0 ? 1.0 / *scaleFactor : (double)in / out;
  double support = scale >= 1.0 ? scale : 1.0;
  double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  int64_t maxSize = (int64_t)std::ceil(support) * 2 + 1;
  Taps t;
  t.in = in;
  for (int64_t i = 0; i < out; ++i) {
    double center = scale * (i + 0.5);
    int64_t xmin = std::max<int64_t>((int64_t)(center - support + 0.5), 0);
    int64_t xsize = std::min<int64_t>((int64_t)(center + support + 0.5), in) - xmin;
    xsize = std::clamp<int64_t>(xsize, 0, maxSize);
    SmallVector<double> w;
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      double x = std::abs((j + xmin - center + 0.5) * invscale);
      w.push_back(x < 1.0 ? 1.0 - x : 0.0);
      total += w.back();
    }
    if (total != 0.0)
      for (double &v : w)
        v /= total;
    t.start.push_back(xmin);
    t.weights.push_back(std::move(w));
  }
  return t;
}

/// An optional float argument (null or missing: none).
static std::optional<double> optionalNumber(NodeContext &ctx, size_t i, const char *name) {
  const nlohmann::json *a = ctx.arg(i, name);
  if (!a || a->is_null())
    return std::nullopt;
  return ctx.number(i, name, 0.0);
}

static SmallVector<Taps> antialiasTaps2d(NodeContext &ctx, ArrayRef<int64_t> in,
                                         ArrayRef<int64_t> out, size_t alignIndex) {
  bool alignCorners = ctx.integer(alignIndex, "align_corners", 0);
  for (int d = 0; d < 2; ++d)
    if (in[d] < 1 || out[d] < 1)
      throw ImportError("antialiased interpolation from " + listStr(in) + " to " + listStr(out) +
                        ": sizes must be positive");
  return {antialiasTaps(in[0], out[0], alignCorners, optionalNumber(ctx, alignIndex + 1, "scales_h")),
          antialiasTaps(in[1], out[1], alignCorners, optionalNumber(ctx, alignIndex + 2, "scales_w"))};
}

/// _upsample_bilinear2d_aa(x, output_size, align_corners, scales_h, scales_w).
Values upsampleBilinear2dAa(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  ctx.requireRank(x, 4, "the interpolation input (NCHW)");
  SmallVector<int64_t> out = perDim(ctx, 1, "output_size", 2, {});
  SmallVector<int64_t> in(typeOf(x).getShape().drop_front(2));
  Value y = resample(ctx, x, antialiasTaps2d(ctx, in, out, 2), /*adjoint=*/false);
  return {asResult(ctx, ctx.castTo(y, ctx.resultType().getElementType()), 0, 2)};
}

/// _upsample_bilinear2d_aa_backward(grad, output_size, input_size, align_corners, scales_h,
/// scales_w): the adjoint.
Values upsampleBilinear2dAaBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0);
  ctx.requireRank(grad, 4, "the interpolation gradient (NCHW)");
  SmallVector<int64_t> out = perDim(ctx, 1, "output_size", 2, {});
  SmallVector<int64_t> inputSize = ctx.intList(2, "input_size");
  if (inputSize.size() != 4 || ArrayRef<int64_t>(out) != typeOf(grad).getShape().drop_front(2))
    throw ImportError("antialiased interpolation backward: input_size " + listStr(inputSize) +
                      " and output_size " + listStr(out) + " do not fit the gradient " +
                      listStr(typeOf(grad).getShape()));
  SmallVector<int64_t> in = {inputSize[2], inputSize[3]};
  Value gx = resample(ctx, grad, antialiasTaps2d(ctx, in, out, 3), /*adjoint=*/true);
  return {asResult(ctx, ctx.castTo(gx, ctx.resultType().getElementType()), 0, 2)};
}

} // namespace neuron::compiler::aten
