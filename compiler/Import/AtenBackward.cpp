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


/// A strided window of an NCHW tensor: rows kh*dh + oh*sh, cols kw*dw + ow*sw.
static Value window(NodeContext &ctx, Value x, int64_t kh, int64_t kw, ArrayRef<int64_t> stride,
                    int64_t oh, int64_t ow) {
  auto t = typeOf(x);
  SmallVector<int64_t> shape = {t.getDimSize(0), t.getDimSize(1), oh, ow};
  return ctx.b.create<nt::SliceOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x,
                                   SmallVector<int64_t>{0, 0, kh, kw},
                                   SmallVector<int64_t>{1, 1, stride[0], stride[1]});
}

static Value zeroPad(NodeContext &ctx, Value x, ArrayRef<int64_t> padding, double value) {
  if (padding[0] == 0 && padding[1] == 0)
    return x;
  auto t = typeOf(x);
  SmallVector<int64_t> shape(t.getShape());
  shape[2] += 2 * padding[0];
  shape[3] += 2 * padding[1];
  SmallVector<int64_t> pad = {0, 0, padding[0], padding[1]};
  return ctx.b.create<nt::PadOp>(ctx.loc, RankedTensorType::get(shape, t.getElementType()), x, pad,
                                 pad, APFloat(value));
}

/// The flat input position (h * W + w) each output pixel reads at kernel offset (kh, kw).
static Value flatPositions(NodeContext &ctx, int64_t kh, int64_t kw, ArrayRef<int64_t> stride,
                           ArrayRef<int64_t> padding, int64_t width, int64_t oh, int64_t ow) {
  auto type = RankedTensorType::get({oh, ow}, ctx.b.getF32Type());
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j)
      values.push_back(APFloat((float)((i * stride[0] + kh - padding[0]) * width +
                                       (j * stride[1] + kw - padding[1]))));
  return ctx.b.create<nt::ConstantOp>(ctx.loc, type,
                                      cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
}

/// max_pool2d_with_indices in training graphs: the pooled values and, as PyTorch
/// defines them, the flat index of the first maximum of each window.
Values maxPool2dWithIndices(NodeContext &ctx) {
  Values pooled = maxPool2d(ctx);
  if (ctx.numResults() < 2 || !ctx.resultType(1))
    return pooled;
  Value x = ctx.tensor(0), y = pooled[0];
  auto xt = typeOf(x);
  SmallVector<int64_t> kernel = ctx.intPair(1, "kernel_size", {});
  SmallVector<int64_t> stride = ctx.intPair(2, "stride", kernel);
  SmallVector<int64_t> padding = ctx.intPair(3, "padding", {0, 0});
  int64_t oh = typeOf(y).getDimSize(2), ow = typeOf(y).getDimSize(3);
  Value xp = zeroPad(ctx, x, padding, -std::numeric_limits<double>::infinity());
  Value best;
  Value none = ctx.scalar(ctx.b.getF32Type(), 3.0e38);
  for (int64_t kh = 0; kh < kernel[0]; ++kh)
    for (int64_t kw = 0; kw < kernel[1]; ++kw) {
      Value hit = ctx.binary(BinaryFn::eq, window(ctx, xp, kh, kw, stride, oh, ow), y);
      Value pos = flatPositions(ctx, kh, kw, stride, padding, xt.getDimSize(3), oh, ow);
      Value cand = ctx.b.create<nt::SelectOp>(ctx.loc, RankedTensorType::get(typeOf(y).getShape(), ctx.b.getF32Type()),
                                              hit, pos, none);
      best = best ? ctx.binary(BinaryFn::min, best, cand) : cand;
    }
  return {y, ctx.castTo(best, ctx.resultType(1).getElementType())};
}

/// max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, dilation,
/// ceil_mode, indices): each window offset sends the gradient where the index says.
Values maxPool2dBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0), x = ctx.tensor(1), indices = ctx.tensor(7);
  auto xt = typeOf(x), gt = typeOf(grad);
  SmallVector<int64_t> kernel = ctx.intPair(2, "kernel_size", {});
  SmallVector<int64_t> stride = ctx.intPair(3, "stride", kernel);
  SmallVector<int64_t> padding = ctx.intPair(4, "padding", {0, 0});
  int64_t oh = gt.getDimSize(2), ow = gt.getDimSize(3);
  Value idx = ctx.castTo(indices, ctx.b.getF32Type());
  SmallVector<int64_t> padded(xt.getShape());
  padded[2] += 2 * padding[0];
  padded[3] += 2 * padding[1];
  auto paddedType = RankedTensorType::get(padded, gt.getElementType());
  Value zero = ctx.scalar(gt.getElementType(), 0.0);
  Value sum;
  for (int64_t kh = 0; kh < kernel[0]; ++kh)
    for (int64_t kw = 0; kw < kernel[1]; ++kw) {
      Value pos = flatPositions(ctx, kh, kw, stride, padding, xt.getDimSize(3), oh, ow);
      Value hit = ctx.binary(BinaryFn::eq, idx, pos);
      Value part = ctx.b.create<nt::SelectOp>(ctx.loc, gt, hit, grad, zero);
      Value placed = ctx.b.create<nt::ScatterWindowOp>(
          ctx.loc, paddedType, part, SmallVector<int64_t>{0, 0, kh, kw},
          SmallVector<int64_t>{1, 1, stride[0], stride[1]});
      sum = sum ? ctx.binary(BinaryFn::add, sum, placed) : placed;
    }
  return {ctx.b.create<nt::SliceOp>(ctx.loc, ctx.resultType(), sum,
                                    SmallVector<int64_t>{0, 0, padding[0], padding[1]},
                                    SmallVector<int64_t>{1, 1, 1, 1})};
}

/// convolution_backward(grad, x, w, bias_sizes, stride, padding, dilation, transposed,
/// output_padding, groups, output_mask) -> (grad_x, grad_w, grad_bias), per kernel
/// offset: grad_w[:, :, kh, kw] = grad @ window^T and grad_x += scatter(w^T @ grad).
Values convolutionBackward(NodeContext &ctx) {
  Value grad = ctx.tensor(0), x = ctx.tensor(1), w = ctx.tensor(2);
  if (ctx.integer(7, "transposed", 0) || ctx.integer(9, "groups", 1) != 1)
    throw ImportError("convolution_backward is supported for groups=1, not transposed");
  SmallVector<int64_t> stride = ctx.intPair(4, "stride", {1, 1});
  SmallVector<int64_t> padding = ctx.intPair(5, "padding", {0, 0});
  SmallVector<int64_t> dilation = ctx.intPair(6, "dilation", {1, 1});
  auto xt = typeOf(x), wt = typeOf(w), gt = typeOf(grad);
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1), O = wt.getDimSize(0);
  int64_t KH = wt.getDimSize(2), KW = wt.getDimSize(3), OH = gt.getDimSize(2), OW = gt.getDimSize(3);
  int64_t pixels = N * OH * OW;
  Type et = gt.getElementType();
  // grad as [O, N*OH*OW].
  Value g2 = ctx.reshape(ctx.permute(grad, {1, 0, 2, 3}), {O, pixels});
  Value xp = zeroPad(ctx, x, padding, 0.0);
  SmallVector<int64_t> padded(typeOf(xp).getShape());
  Values results(3, Value());
  std::vector<bool> mask = {true, true, true};
  if (const nlohmann::json *m = ctx.arg(10, "output_mask"); m && m->is_array())
    for (size_t i = 0; i < 3 && i < m->size(); ++i)
      mask[i] = (*m)[i].get<bool>();
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
  if (mask[2] && ctx.numResults() > 2 && ctx.resultType(2))
    results[2] = ctx.reduce(ReduceFn::sum, grad, {0, 2, 3}, false);
  return results;
}

/// _native_batch_norm_legit_functional(x, w, b, running_mean, running_var, training,
/// momentum, eps) -> (y, mean, rstd, new_running_mean, new_running_var).
Values batchNormTraining(NodeContext &ctx) {
  Value x = ctx.tensor(0);
  if (!ctx.integer(5, "training", 1))
    return batchNormInference(ctx);
  auto t = typeOf(x);
  Type f32 = ctx.b.getF32Type();
  Value xf = ctx.castTo(x, f32);
  int64_t rank = t.getRank(), C = t.getDimSize(1), n = t.getNumElements() / C;
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
    if (ctx.resultType(i))
      results[i] = ctx.castTo(results[i], ctx.resultType(i).getElementType());
  return results;
}

} // namespace neuron::compiler::aten
