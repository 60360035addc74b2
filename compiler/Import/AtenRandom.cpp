// Importers of random ops: uniform numbers from the GpSimd engine's counter-based
// generator (ntorch.random), shaped into dropout masks, Bernoulli draws, uniform and
// normal samples. The numbers are not the CPU generator's (they come from a seed each
// run of the program draws from torch's default generator), so results match eager in
// distribution, not element by element.
#include "compiler/Import/AtenImporters.h"

#include <cmath>

namespace neuron::compiler::aten {
namespace {

using mlir::RankedTensorType;
using mlir::Value;
using ntorch::BinaryFn;

/// A stream id per node: FNV-1a of its name (unique in the graph), 40 bits.
int64_t streamOf(NodeContext &ctx, int64_t salt = 0) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : ctx.name() + "#" + std::to_string(salt)) {
    h ^= uint8_t(c);
    h *= 1099511628211ULL;
  }
  return int64_t(h & ((uint64_t(1) << 40) - 1));
}

/// Uniform [0, 1) numbers of `type`'s shape, drawn in fp32 (24 bits: thresholds such as a
/// dropout probability are exact to 2^-24).
Value uniform(NodeContext &ctx, RankedTensorType type, int64_t salt = 0) {
  auto f32 = RankedTensorType::get(type.getShape(), ctx.b.getF32Type());
  return ctx.b.create<ntorch::RandomOp>(ctx.loc, f32, streamOf(ctx, salt));
}

/// Uniform [0, 1) numbers drawn in `type`'s own dtype: on its grid (2^-8 for bf16), so that
/// none rounds up to 1 as an fp32 number would when cast.
Value uniformIn(NodeContext &ctx, RankedTensorType type) {
  return ctx.b.create<ntorch::RandomOp>(ctx.loc, type, streamOf(ctx));
}

RankedTensorType floatResult(NodeContext &ctx, size_t i = 0) {
  RankedTensorType type = ctx.resultType(i);
  if (!llvm::isa<mlir::FloatType>(type.getElementType()))
    throw ImportError("random numbers of an integer dtype are not supported");
  return type;
}

/// lo + (hi - lo) * u, in `type`'s dtype.
Values scaled(NodeContext &ctx, RankedTensorType type, double lo, double hi) {
  Value u = uniformIn(ctx, type);
  if (hi - lo != 1.0)
    u = ctx.binaryScalar(BinaryFn::mul, u, hi - lo);
  if (lo != 0.0)
    u = ctx.binaryScalar(BinaryFn::add, u, lo);
  return {u};
}

} // namespace

Values rand(NodeContext &ctx) { return scaled(ctx, floatResult(ctx), 0.0, 1.0); }

Values uniformOp(NodeContext &ctx) {
  // uniform(Tensor self, float from=0, float to=1, *, Generator? generator)
  double lo = ctx.number(1, "from", 0.0), hi = ctx.number(2, "to", 1.0);
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi))
    throw ImportError("uniform needs finite from <= to");
  return scaled(ctx, floatResult(ctx), lo, hi);
}

Values randn(NodeContext &ctx) {
  // Box-Muller: sqrt(-2 log(1 - u1)) * cos(2 pi u2); 1 - u1 is in (0, 1].
  RankedTensorType type = floatResult(ctx);
  Value u1 = uniform(ctx, type, 0), u2 = uniform(ctx, type, 1);
  Value one = ctx.scalar(ctx.b.getF32Type(), 1.0);
  Value radius = ctx.unary(
      ntorch::UnaryFn::sqrt,
      ctx.binaryScalar(BinaryFn::mul, ctx.unary(ntorch::UnaryFn::log,
                                                 ctx.binary(BinaryFn::sub, one, u1)),
                       -2.0));
  Value angle = ctx.unary(ntorch::UnaryFn::cos, ctx.binaryScalar(BinaryFn::mul, u2, 2 * M_PI));
  return {ctx.castTo(ctx.binary(BinaryFn::mul, radius, angle), type.getElementType())};
}

Values bernoulli(NodeContext &ctx) {
  // bernoulli.p(Tensor self, float p=0.5): 1 with probability p; bernoulli.default(self):
  // probabilities in self.
  RankedTensorType type = floatResult(ctx);
  Value u = uniform(ctx, type);
  Value hit = ctx.hasArg(1, "p") && !ctx.isTensorArg(1)
                  ? ctx.binaryScalar(BinaryFn::lt, u, ctx.number(1, "p", 0.5))
                  : ctx.binary(BinaryFn::lt, u, ctx.castTo(ctx.tensor(0), ctx.b.getF32Type()));
  return {ctx.castTo(hit, type.getElementType())};
}

Values nativeDropout(NodeContext &ctx) {
  // native_dropout(Tensor input, float p, bool? train) -> (output, mask): an element is
  // kept (mask true) with probability 1 - p, and kept elements are scaled by 1 / (1 - p).
  Value x = ctx.tensor(0);
  auto type = llvm::cast<RankedTensorType>(x.getType());
  double p = ctx.number(1, "p", 0.5);
  const nlohmann::json *train = ctx.arg(2, "train");
  bool training = !train || train->is_null() || (train->is_boolean() && train->get<bool>());
  if (!(p >= 0.0 && p <= 1.0))
    throw ImportError("dropout probability must be in [0, 1], got " + std::to_string(p));
  auto maskType = RankedTensorType::get(type.getShape(), ctx.b.getI1Type());
  if (!training || p == 0.0)
    return {x, ctx.splat(maskType, 1.0)};
  if (p == 1.0)
    return {ctx.splat(type, 0.0), ctx.splat(maskType, 0.0)};
  Value keep = ctx.binaryScalar(BinaryFn::ge, uniform(ctx, type), p);
  Value kept = ctx.binary(BinaryFn::mul, x, ctx.castTo(keep, type.getElementType()));
  return {ctx.binaryScalar(BinaryFn::mul, kept, 1.0 / (1.0 - p)), keep};
}

} // namespace neuron::compiler::aten
