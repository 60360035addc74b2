// Importers of N-d convolutions: aten.convolution (1-D, 2-D, 3-D; grouped, dilated, strided,
// transposed with output_padding) and convolution_backward of each of them.
//
// Forward, not transposed: one ntorch.conv2d (1-D as 2-D with a unit height; 3-D as a 2-D
// convolution over the depth windows stacked into the channels). Transposed convolutions
// and every backward are the per-kernel-offset form: for offset k, a window of the padded
// input (ntorch.slice at k * dilation, step stride) meets the weight's [groups, out, in]
// slice at k in a (batched) matmul; a transposed convolution places its products into the
// padded output with ntorch.scatter_window (the adjoint of the window) and crops it.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The most kernel offsets an expansion unrolls (each is a few ops).
constexpr int64_t kMaxKernelOffsets = 4096;

/// A convolution's geometry: spatial rank r, sizes and window parameters per spatial dim.
/// `x` is the input [N, inChannels, S...], `y` the output [N, outChannels, O...]; the
/// weight is [out, in / groups, K...], or [in, out / groups, K...] when transposed.
struct ConvGeometry {
  int64_t r = 0, batch = 0, inChannels = 0, outChannels = 0, groups = 1;
  bool transposed = false;
  SmallVector<int64_t> in, out, kernel, stride, padding, dilation, outputPadding;
  int64_t offsets() const {
    int64_t n = 1;
    for (int64_t k : kernel)
      n *= k;
    return n;
  }
};

/// Reads and checks the geometry of a convolution of input `x` and weight `w`; `first` is
/// the index of the stride argument (padding, dilation, transposed, output_padding and
/// groups follow).
static ConvGeometry convGeometry(NodeContext &ctx, Value x, Value w, size_t first) {
  auto xt = typeOf(x), wt = typeOf(w);
  ConvGeometry g;
  g.r = xt.getRank() - 2;
  if (g.r < 1 || g.r > 3)
    throw ImportError("convolution input must be [N, C, ...] with 1 to 3 spatial dims, got rank " +
                      std::to_string(xt.getRank()));
  ctx.requireRank(w, g.r + 2, "the convolution weight");
  g.stride = perDim(ctx, first, "stride", g.r, {1});
  g.padding = perDim(ctx, first + 1, "padding", g.r, {0});
  g.dilation = perDim(ctx, first + 2, "dilation", g.r, {1});
  g.transposed = ctx.integer(first + 3, "transposed", 0);
  g.outputPadding = perDim(ctx, first + 4, "output_padding", g.r, {0});
  g.groups = ctx.integer(first + 5, "groups", 1);
  g.batch = xt.getDimSize(0);
  g.inChannels = xt.getDimSize(1);
  if (g.groups < 1 || g.inChannels % g.groups)
    throw ImportError("convolution: " + std::to_string(g.inChannels) +
                      " input channels do not split into " + std::to_string(g.groups) + " groups");
  int64_t wIn = g.transposed ? wt.getDimSize(0) : wt.getDimSize(1) * g.groups;
  g.outChannels = g.transposed ? wt.getDimSize(1) * g.groups : wt.getDimSize(0);
  if (wIn != g.inChannels || (!g.transposed && g.outChannels % g.groups))
    throw ImportError("convolution weight " + listStr(wt.getShape()) + " does not fit " +
                      std::to_string(g.inChannels) + " input channels in " +
                      std::to_string(g.groups) + " groups");
  for (int64_t i = 0; i < g.r; ++i) {
    int64_t s = g.stride[i], p = g.padding[i], d = g.dilation[i], op = g.outputPadding[i];
    int64_t k = wt.getDimSize(2 + i), n = xt.getDimSize(2 + i);
    if (s < 1 || d < 1 || p < 0 || op < 0 || k < 1)
      throw ImportError("convolution needs positive stride, dilation and kernel size and "
                        "non-negative padding and output_padding, got stride " +
                        listStr(g.stride) + ", padding " + listStr(g.padding) + ", dilation " +
                        listStr(g.dilation) + ", output_padding " + listStr(g.outputPadding));
    if (op && (!g.transposed || (op >= s && op >= d)))
      throw ImportError("convolution output_padding " + listStr(g.outputPadding) +
                        " must be smaller than the stride or the dilation of a transposed "
                        "convolution");
    int64_t o = g.transposed ? (n - 1) * s - 2 * p + d * (k - 1) + op + 1
                             : (n + 2 * p - d * (k - 1) - 1) / s + 1;
    if (!g.transposed && n + 2 * p < d * (k - 1) + 1)
      o = 0;
    if (o < 1)
      throw ImportError("convolution: kernel " + std::to_string(k) + " (dilation " +
                        std::to_string(d) + ") does not fit spatial size " + std::to_string(n) +
                        " with padding " + std::to_string(p));
    g.in.push_back(n);
    g.kernel.push_back(k);
    g.out.push_back(o);
  }
  if (g.offsets() > kMaxKernelOffsets)
    throw ImportError("a convolution kernel of " + listStr(g.kernel) +
                      " is too large to expand (at most " + std::to_string(kMaxKernelOffsets) +
                      " offsets)");
  return g;
}

static int64_t product(ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

/// [N, C, S...] -> [C, N, S...].
static Value channelsFirst(NodeContext &ctx, Value x) {
  SmallVector<int64_t> perm = {1, 0};
  for (int64_t d = 2; d < typeOf(x).getRank(); ++d)
    perm.push_back(d);
  return ctx.permute(x, perm);
}

/// [N, C, S...] as [groups, C / groups, N * prod(S)] (or [C, N * prod(S)] with one group).
static Value asGroupedColumns(NodeContext &ctx, Value x, int64_t groups) {
  auto t = typeOf(x);
  int64_t c = t.getDimSize(1), cols = t.getNumElements() / std::max<int64_t>(c, 1);
  Value m = channelsFirst(ctx, x);
  if (groups == 1)
    return ctx.reshape(m, {c, cols});
  return ctx.reshape(m, {groups, c / groups, cols});
}

/// The inverse of asGroupedColumns: [groups, C / groups, N * prod(S)] -> [N, C, S...].
static Value fromGroupedColumns(NodeContext &ctx, Value m, int64_t batch, int64_t channels,
                                ArrayRef<int64_t> spatial) {
  SmallVector<int64_t> shape = {channels, batch};
  shape.append(spatial.begin(), spatial.end());
  return channelsFirst(ctx, ctx.reshape(m, shape));
}

/// The weight's slice at kernel offset `k` as [groups, A / groups, B] (or [A, B] with one
/// group) of the weight [A, B, K...].
static Value weightAt(NodeContext &ctx, Value w, ArrayRef<int64_t> k, int64_t groups) {
  auto wt = typeOf(w);
  int64_t a = wt.getDimSize(0), b = wt.getDimSize(1);
  SmallVector<int64_t> offsets = {0, 0}, strides(wt.getRank(), 1), shape = {a, b};
  offsets.append(k.begin(), k.end());
  shape.append(k.size(), 1);
  Value s = ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, wt.getElementType()),
                                      w, offsets, strides);
  if (groups == 1)
    return ctx.reshape(s, {a, b});
  return ctx.reshape(s, {groups, a / groups, b});
}

static Value matmul(NodeContext &ctx, Value lhs, Value rhs, bool tl, bool tr, Type et) {
  auto lt = typeOf(lhs), rt = typeOf(rhs);
  int64_t bdim = lt.getRank() - 2;
  int64_t m = tl ? lt.getDimSize(bdim + 1) : lt.getDimSize(bdim);
  int64_t n = tr ? rt.getDimSize(bdim) : rt.getDimSize(bdim + 1);
  SmallVector<int64_t> shape;
  if (bdim)
    shape.push_back(lt.getDimSize(0));
  shape.append({m, n});
  return ctx.b.create<nt::MatmulOp>(ctx.loc, RankedTensorType::get(shape, et), lhs, rhs, tl, tr);
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

/// Zero padding of the spatial dims: `low` before, `high` after.
static Value padSpatial(NodeContext &ctx, Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  auto t = typeOf(x);
  SmallVector<int64_t> lo = {0, 0}, hi = {0, 0}, shape(t.getShape());
  lo.append(low.begin(), low.end());
  hi.append(high.begin(), high.end());
  for (size_t d = 2; d < shape.size(); ++d)
    shape[d] += lo[d] + hi[d];
  return ctx.b.create<nt::PadOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x, lo,
                                 hi, APFloat(0.0));
}

/// The window of the padded `xp` [N, C, P...] that kernel offset `k` reads: [N, C, O...].
static Value windowAt(NodeContext &ctx, Value xp, const ConvGeometry &g, ArrayRef<int64_t> k,
                      ArrayRef<int64_t> out) {
  auto t = typeOf(xp);
  SmallVector<int64_t> offsets = {0, 0}, strides = {1, 1},
                       shape = {t.getDimSize(0), t.getDimSize(1)};
  for (int64_t i = 0; i < g.r; ++i) {
    offsets.push_back(k[i] * g.dilation[i]);
    strides.push_back(g.stride[i]);
    shape.push_back(out[i]);
  }
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), xp,
                                   offsets, strides);
}

/// `part` [N, C, O...] placed where kernel offset `k` reads in a padded [N, C, P...].
static Value placeAt(NodeContext &ctx, Value part, const ConvGeometry &g, ArrayRef<int64_t> k,
                     ArrayRef<int64_t> padded) {
  auto t = typeOf(part);
  SmallVector<int64_t> offsets = {0, 0}, strides = {1, 1},
                       shape = {t.getDimSize(0), t.getDimSize(1)};
  for (int64_t i = 0; i < g.r; ++i) {
    offsets.push_back(k[i] * g.dilation[i]);
    strides.push_back(g.stride[i]);
  }
  shape.append(padded.begin(), padded.end());
  return ctx.b.create<nt::ScatterWindowOp>(
      ctx.loc, RankedTensorType::get(shape, t.getElementType()), part, offsets, strides);
}

/// Crops the low `padding` of each spatial dim to the spatial size `size`.
static Value cropSpatial(NodeContext &ctx, Value x, ArrayRef<int64_t> padding,
                         ArrayRef<int64_t> size) {
  auto t = typeOf(x);
  SmallVector<int64_t> offsets = {0, 0}, strides(t.getRank(), 1),
                       shape = {t.getDimSize(0), t.getDimSize(1)};
  offsets.append(padding.begin(), padding.end());
  shape.append(size.begin(), size.end());
  if (ArrayRef<int64_t>(shape) == t.getShape())
    return x;
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                   offsets, strides);
}

/// Sizes of the input padded on both sides (the windows of a convolution read inside it).
static SmallVector<int64_t> paddedSizes(ArrayRef<int64_t> sizes, ArrayRef<int64_t> padding) {
  SmallVector<int64_t> p;
  for (size_t i = 0; i < sizes.size(); ++i)
    p.push_back(sizes[i] + 2 * padding[i]);
  return p;
}

/// A transposed convolution's sum of placed products [N, out, O + 2p...] (in fp32): per
/// kernel offset, weight[k]^T @ x placed at the offset's window of the padded output.
static Value transposedSum(NodeContext &ctx, Value x, Value w, const ConvGeometry &g) {
  Type f32 = ctx.b.getF32Type();
  Value cols = asGroupedColumns(ctx, x, g.groups);
  SmallVector<int64_t> padded = paddedSizes(g.out, g.padding);
  Value sum;
  for (auto &k : kernelOffsets(g.kernel)) {
    Value part = matmul(ctx, weightAt(ctx, w, k, g.groups), cols, /*tl=*/true, false, f32);
    Value placed = placeAt(ctx, fromGroupedColumns(ctx, part, g.batch, g.outChannels, g.in), g,
                           k, padded);
    sum = sum ? ctx.binary(BinaryFn::add, sum, placed) : placed;
  }
  return sum;
}

/// A 3-D convolution as one 2-D convolution: the KD depth windows of the padded input
/// stacked into the channels ([N * OD, groups * KD * C/g, H, W]) against the weight with
/// its depth moved beside its input channels ([O, KD * C/g, KH, KW]).
static Value conv3dAs2d(NodeContext &ctx, Value x, Value w, const ConvGeometry &g,
                        Type resultEt) {
  auto xt = typeOf(x), wt = typeOf(w);
  int64_t n = g.batch, c = g.inChannels, cg = c / g.groups, kd = g.kernel[0], od = g.out[0];
  int64_t h = g.in[1] + 2 * g.padding[1], wd = g.in[2] + 2 * g.padding[2];
  Value xp = padSpatial(ctx, x, g.padding, g.padding);
  SmallVector<Value> slabs;
  for (int64_t i = 0; i < kd; ++i) {
    Value s = ctx.b.create<nt::SliceOp>(
        ctx.loc, RankedTensorType::get({n, c, od, h, wd}, xt.getElementType()), xp,
        SmallVector<int64_t>{0, 0, i * g.dilation[0], 0, 0},
        SmallVector<int64_t>{1, 1, g.stride[0], 1, 1});
    // [N, C, OD, H, W] -> [N, OD, groups, 1, C/g, H, W]
    s = ctx.permute(s, {0, 2, 1, 3, 4});
    slabs.push_back(ctx.reshape(s, {n, od, g.groups, 1, cg, h, wd}));
  }
  Value stacked = slabs.size() == 1
                      ? slabs[0]
                      : (Value)ctx.b.create<nt::ConcatOp>(
                            ctx.loc,
                            RankedTensorType::get({n, od, g.groups, kd, cg, h, wd},
                                                  xt.getElementType()),
                            slabs, 3);
  Value x2 = ctx.reshape(stacked, {n * od, g.groups * kd * cg, h, wd});
  int64_t o = g.outChannels, kh = g.kernel[1], kw = g.kernel[2];
  Value w2 = ctx.reshape(ctx.permute(w, {0, 2, 1, 3, 4}), {o, kd * wt.getDimSize(1), kh, kw});
  auto yType = RankedTensorType::get({n * od, o, g.out[1], g.out[2]}, resultEt);
  Value y = ctx.b.create<nt::Conv2dOp>(ctx.loc, yType, x2, w2,
                                       SmallVector<int64_t>{g.stride[1], g.stride[2]},
                                       SmallVector<int64_t>{0, 0},
                                       SmallVector<int64_t>{g.dilation[1], g.dilation[2]},
                                       g.groups);
  y = ctx.reshape(y, {n, od, o, g.out[1], g.out[2]});
  return ctx.permute(y, {0, 2, 1, 3, 4});
}

/// convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups);
/// the bias is a broadcast add over [C, 1...].
Values convolution(NodeContext &ctx) {
  Value x = ctx.tensor(0), w = ctx.tensor(1);
  ConvGeometry g = convGeometry(ctx, x, w, 3);
  RankedTensorType resultType = ctx.resultType();
  SmallVector<int64_t> yShape = {g.batch, g.outChannels};
  yShape.append(g.out.begin(), g.out.end());
  if (resultType.getShape() != ArrayRef<int64_t>(yShape))
    throw ImportError("convolution result shape " + listStr(resultType.getShape()) +
                      " should be " + listStr(yShape));
  Type et = resultType.getElementType();
  Value y;
  if (g.transposed) {
    y = ctx.castTo(cropSpatial(ctx, transposedSum(ctx, x, w, g), g.padding, g.out), et);
  } else if (g.r == 1) {
    // [N, C, L] as [N, C, 1, L].
    auto xt = typeOf(x), wt = typeOf(w);
    Value x2 = ctx.reshape(x, {g.batch, g.inChannels, 1, xt.getDimSize(2)});
    Value w2 = ctx.reshape(w, {wt.getDimSize(0), wt.getDimSize(1), 1, wt.getDimSize(2)});
    auto yType = RankedTensorType::get({g.batch, g.outChannels, 1, g.out[0]}, et);
    y = ctx.b.create<nt::Conv2dOp>(ctx.loc, yType, x2, w2, SmallVector<int64_t>{1, g.stride[0]},
                                   SmallVector<int64_t>{0, g.padding[0]},
                                   SmallVector<int64_t>{1, g.dilation[0]}, g.groups);
    y = ctx.reshape(y, yShape);
  } else if (g.r == 2) {
    y = ctx.b.create<nt::Conv2dOp>(ctx.loc, resultType, x, w, g.stride, g.padding, g.dilation,
                                   g.groups);
  } else {
    y = conv3dAs2d(ctx, x, w, g, et);
  }
  if (ctx.hasArg(2, "bias") && ctx.isTensorArg(2)) {
    SmallVector<int64_t> biasShape(g.r + 1, 1);
    biasShape[0] = g.outChannels;
    y = ctx.binary(BinaryFn::add, y, ctx.reshape(ctx.tensor(2), biasShape));
  }
  return {y};
}

/// convolution_backward(grad, x, w, bias_sizes, stride, padding, dilation, transposed,
/// output_padding, groups, output_mask) -> (grad_x, grad_w, grad_bias), per kernel offset k
/// with the grouped matmuls of the forward's adjoint, accumulated in fp32:
///   not transposed, y = sum_k w[k] @ window_k(pad(x)):
///     grad_w[k] = grad @ window_k(pad(x))^T, grad_x = crop(sum_k place_k(w[k]^T @ grad));
///   transposed, y = crop(sum_k place_k(w[k]^T @ x)):
///     grad_w[k] = x @ window_k(pad(grad))^T, grad_x = sum_k w[k] @ window_k(pad(grad)).
Values convolutionBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0), x = ctx.tensor(1), w = ctx.tensor(2);
  ConvGeometry g = convGeometry(ctx, x, w, 4);
  SmallVector<int64_t> yShape = {g.batch, g.outChannels};
  yShape.append(g.out.begin(), g.out.end());
  if (typeOf(grad).getShape() != ArrayRef<int64_t>(yShape))
    throw ImportError("convolution_backward: the gradient " + listStr(typeOf(grad).getShape()) +
                      " should have the output shape " + listStr(yShape));
  std::vector<bool> mask = {true, true, true};
  if (const nlohmann::json *m = ctx.arg(10, "output_mask"); m && m->is_array())
    for (size_t i = 0; i < 3 && i < m->size(); ++i)
      mask[i] = (*m)[i].is_boolean() && (*m)[i].get<bool>();
  for (size_t i = 0; i < 3; ++i)
    mask[i] = mask[i] && ctx.hasResult(i);
  Type f32 = ctx.b.getF32Type();
  // The side whose windows are read (the padded input, or the padded gradient when
  // transposed) and the other side as grouped columns.
  Value windowed = g.transposed ? grad : x, other = g.transposed ? x : grad;
  ArrayRef<int64_t> windowedSizes = g.transposed ? g.out : g.in;
  ArrayRef<int64_t> windowSizes = g.transposed ? g.in : g.out;
  int64_t windowedChannels = g.transposed ? g.outChannels : g.inChannels;
  Value wp = padSpatial(ctx, windowed, g.padding, g.padding);
  SmallVector<int64_t> padded = paddedSizes(windowedSizes, g.padding);
  Value otherCols = asGroupedColumns(ctx, other, g.groups);
  Value gradX, windowedGrad;
  SmallVector<Value> wParts;
  for (auto &k : kernelOffsets(g.kernel)) {
    // [g, out/g, in/g] (not transposed) or [g, in/g, out/g] (transposed).
    Value wk = weightAt(ctx, w, k, g.groups);
    Value winCols;
    if (mask[1] || (g.transposed && mask[0]))
      winCols = asGroupedColumns(ctx, windowAt(ctx, wp, g, k, windowSizes), g.groups);
    if (mask[1]) {
      // Not transposed: grad [g, out/g, cols] @ window^T -> [g, out/g, in/g];
      // transposed: x [g, in/g, cols] @ window^T -> [g, in/g, out/g]; both as the weight.
      Value part = matmul(ctx, otherCols, winCols, false, /*tr=*/true, f32);
      auto wt = typeOf(w);
      wParts.push_back(ctx.reshape(part, {wt.getDimSize(0), wt.getDimSize(1), 1}));
    }
    if (mask[0] && !g.transposed) {
      Value part = matmul(ctx, wk, otherCols, /*tl=*/true, false, f32);
      Value placed = placeAt(ctx, fromGroupedColumns(ctx, part, g.batch, windowedChannels,
                                                     windowSizes),
                             g, k, padded);
      windowedGrad = windowedGrad ? ctx.binary(BinaryFn::add, windowedGrad, placed) : placed;
    }
    if (mask[0] && g.transposed) {
      Value part = matmul(ctx, wk, winCols, false, false, f32);
      gradX = gradX ? ctx.binary(BinaryFn::add, gradX, part) : part;
    }
  }
  Values results(3, Value());
  if (mask[0]) {
    Value gx = g.transposed ? fromGroupedColumns(ctx, gradX, g.batch, g.inChannels, g.in)
                            : cropSpatial(ctx, windowedGrad, g.padding, g.in);
    results[0] = ctx.castTo(gx, ctx.resultType(0).getElementType());
  }
  if (mask[1]) {
    auto wt = typeOf(w);
    int64_t a = wt.getDimSize(0), b = wt.getDimSize(1);
    Value stacked = wParts.size() == 1
                        ? wParts[0]
                        : (Value)ctx.b.create<nt::ConcatOp>(
                              ctx.loc, RankedTensorType::get({a, b, g.offsets()}, f32), wParts, 2);
    results[1] = ctx.castTo(ctx.reshape(stacked, wt.getShape()),
                            ctx.resultType(1).getElementType());
  }
  if (mask[2]) {
    SmallVector<int64_t> dims = {0};
    for (int64_t d = 0; d < g.r; ++d)
      dims.push_back(2 + d);
    Value gb = ctx.reduce(ReduceFn::sum, ctx.castTo(grad, f32), dims, false);
    results[2] = ctx.castTo(gb, ctx.resultType(2).getElementType());
  }
  return results;
}

} // namespace neuron::compiler::aten
