// Importers of the ATen ops that training graphs add: batch norm in training mode. Each
// expands into ntorch ops that already run on the engines.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Batch norm on the batch statistics of x, w, b, running_mean, running_var (arguments
/// 0-4; the running statistics may be None): (y, mean, rstd, new_running_mean,
/// new_running_var), in fp32; the running variance is updated with the unbiased variance.
static Values batchNormBatchStats(NodeContext &ctx, double momentum, double eps) {
  Value x = ctx.tensor(0);
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
  Value mean = ctx.binaryScalar(BinaryFn::mul, ctx.reduce(ReduceFn::sum, xf, dims, true), 1.0 / n);
  Value xc = ctx.binary(BinaryFn::sub, xf, mean);
  Value var = ctx.binaryScalar(BinaryFn::mul,
                               ctx.reduce(ReduceFn::sum, ctx.binary(BinaryFn::mul, xc, xc), dims, true),
                               1.0 / n);
  Value rstd = ctx.unary(UnaryFn::rsqrt, ctx.binaryScalar(BinaryFn::add, var, eps));
  // Eager keeps the statistics in the input's type unless the weight's type differs (a
  // mixed-type batch norm): a half input is normalized with its mean and rstd rounded to
  // the half type (x * rstd - mean * rstd in fp32, then the output rounds once).
  Type et = t.getElementType();
  bool mixed = ctx.isTensorArg(1) && typeOf(ctx.tensor(1)).getElementType() != et;
  Value y;
  if ((et.isF16() || et.isBF16()) && !mixed) {
    auto rounded = [&](Value v) { return ctx.castTo(ctx.castTo(v, et), f32); };
    Value scale = rounded(rstd);
    y = ctx.binary(BinaryFn::sub, ctx.binary(BinaryFn::mul, xf, scale),
                   ctx.binary(BinaryFn::mul, rounded(mean), scale));
  } else {
    y = ctx.binary(BinaryFn::mul, xc, rstd);
  }
  if (ctx.isTensorArg(1))
    y = ctx.binary(BinaryFn::mul, y, ctx.castTo(ctx.reshape(ctx.tensor(1), chan), f32));
  if (ctx.isTensorArg(2))
    y = ctx.binary(BinaryFn::add, y, ctx.castTo(ctx.reshape(ctx.tensor(2), chan), f32));
  Value mean1 = ctx.reshape(mean, {C}), var1 = ctx.reshape(var, {C});
  auto update = [&](size_t i, Value stat, double scale) -> Value {
    if (!ctx.isTensorArg(i))
      return Value();
    Value running = ctx.castTo(ctx.tensor(i), f32);
    Value kept = ctx.binaryScalar(BinaryFn::mul, running, 1.0 - momentum);
    Value fresh = ctx.binaryScalar(BinaryFn::mul, stat, momentum * scale);
    return ctx.binary(BinaryFn::add, kept, fresh);
  };
  double unbiased = n > 1 ? (double)n / (n - 1) : 1.0;
  return {y, mean1, ctx.reshape(rstd, {C}), update(3, mean1, 1.0), update(4, var1, unbiased)};
}

/// Casts each present result to the graph's type of result `first + i`.
static Values asResults(NodeContext &ctx, Values values, size_t first = 0) {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] && ctx.hasResult(first + i))
      values[i] = ctx.castTo(values[i], ctx.resultType(first + i).getElementType());
  return values;
}

/// _native_batch_norm_legit_functional(x, w, b, running_mean, running_var, training,
/// momentum, eps) -> (y, mean, rstd, new_running_mean, new_running_var); not training: the
/// running statistics normalize and pass through unchanged.
Values batchNormTraining(NodeContext &ctx) {
  if (!ctx.integer(5, "training", 1)) {
    Values results = batchNormWithStats(ctx, 7);
    results.push_back(ctx.tensor(3));
    results.push_back(ctx.tensor(4));
    return asResults(ctx, results);
  }
  return asResults(ctx, batchNormBatchStats(ctx, ctx.number(6, "momentum", 0.1),
                                            ctx.number(7, "eps", 1e-5)));
}

/// _native_batch_norm_legit.no_stats(x, w, b, training, momentum, eps) -> (y, mean, rstd):
/// batch statistics (no running statistics to normalize with or update).
Values batchNormNoStats(NodeContext &ctx) {
  if (!ctx.integer(3, "training", 1))
    throw ImportError("batch norm without running statistics needs training=True");
  Values r = batchNormBatchStats(ctx, ctx.number(4, "momentum", 0.1), ctx.number(5, "eps", 1e-5));
  return asResults(ctx, {r[0], r[1], r[2]});
}

/// _batch_norm_with_update_functional(x, w, b, running_mean, running_var, momentum, eps)
/// -> (y, mean, rstd, reserve, new_running_mean, new_running_var); reserve is empty.
Values batchNormWithUpdate(NodeContext &ctx) {
  Values r = batchNormBatchStats(ctx, ctx.number(5, "momentum", 0.1), ctx.number(6, "eps", 1e-5));
  Value reserve;
  if (ctx.hasResult(3)) {
    if (ctx.resultType(3).getNumElements() != 0)
      throw ImportError("_batch_norm_with_update's reserve should be empty, the graph records " +
                        std::to_string(ctx.resultType(3).getNumElements()) + " elements");
    reserve = ctx.splat(ctx.resultType(3), 0.0);
  }
  Values front = asResults(ctx, {r[0], r[1], r[2]});
  Values back = asResults(ctx, {r[3], r[4]}, 4);
  return {front[0], front[1], front[2], reserve, back[0], back[1]};
}

} // namespace neuron::compiler::aten
