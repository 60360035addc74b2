// The table of supported ATen overloads and how each becomes ntorch ops. The one op list.
#include "compiler/Import/GraphImporter.h"
#include "compiler/Import/ImportContext.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include <algorithm>

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::UnaryFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler {
namespace {

using Values = SmallVector<Value>;

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Element type for a scalar operand of a binary op: that of the tensor operand.
Type scalarTypeFor(NodeContext &ctx, size_t tensorIndex) {
  return ctx.isTensorArg(tensorIndex) ? elementTypeOf(ctx.tensor(tensorIndex))
                                      : ctx.resultType().getElementType();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <UnaryFn Fn> Values unary(NodeContext &ctx) {
  return {ctx.b.create<nt::UnaryOp>(ctx.loc, ctx.resultType(), Fn, ctx.tensor(0))};
}

Values gelu(NodeContext &ctx) {
  std::string approximate = ctx.string(1, "approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    throw ImportError("unknown gelu approximation '" + approximate + "'");
  UnaryFn fn = approximate == "tanh" ? UnaryFn::gelu_tanh : UnaryFn::gelu;
  return {ctx.b.create<nt::UnaryOp>(ctx.loc, ctx.resultType(), fn, ctx.tensor(0))};
}

Value binaryOp(NodeContext &ctx, BinaryFn fn, Value lhs, Value rhs, RankedTensorType type) {
  return ctx.b.create<nt::BinaryOp>(ctx.loc, type, fn, lhs, rhs);
}

/// aten.<op>.Tensor / .Scalar: either operand may be a number.
template <BinaryFn Fn> Values binary(NodeContext &ctx) {
  Value lhs = ctx.tensorOrScalar(0, scalarTypeFor(ctx, 1));
  Value rhs = ctx.tensorOrScalar(1, scalarTypeFor(ctx, 0));
  return {binaryOp(ctx, Fn, lhs, rhs, ctx.resultType())};
}

/// aten.add / aten.sub with `alpha`: lhs +- alpha * rhs.
template <BinaryFn Fn> Values binaryWithAlpha(NodeContext &ctx) {
  Value lhs = ctx.tensorOrScalar(0, scalarTypeFor(ctx, 1));
  Value rhs = ctx.tensorOrScalar(1, scalarTypeFor(ctx, 0));
  double alpha = ctx.number(2, "alpha", 1.0);
  if (alpha != 1.0) {
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    Value a = ctx.b.create<nt::ConstantOp>(
        ctx.loc, RankedTensorType::get({}, rhsType.getElementType()),
        cast<ElementsAttr>(DenseElementsAttr::get(
            RankedTensorType::get({}, rhsType.getElementType()),
            FloatAttr::get(rhsType.getElementType(), alpha).getValue())));
    rhs = binaryOp(ctx, BinaryFn::mul, rhs, a, rhsType);
  }
  return {binaryOp(ctx, Fn, lhs, rhs, ctx.resultType())};
}

Values toCopy(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  if (in.getType() == ctx.resultType())
    return {in};
  return {ctx.b.create<nt::CastOp>(ctx.loc, ctx.resultType(), in)};
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

Values mm(NodeContext &ctx) {
  return {ctx.b.create<nt::MatmulOp>(ctx.loc, ctx.resultType(), ctx.tensor(0), ctx.tensor(1),
                                     false, false)};
}

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
Values addmm(NodeContext &ctx) {
  RankedTensorType type = ctx.resultType();
  Value product = ctx.b.create<nt::MatmulOp>(ctx.loc, type, ctx.tensor(1), ctx.tensor(2),
                                             false, false);
  Value bias = ctx.tensor(0);
  auto scale = [&](Value v, double s) -> Value {
    if (s == 1.0)
      return v;
    auto vt = cast<RankedTensorType>(v.getType());
    auto st = RankedTensorType::get({}, vt.getElementType());
    Value c = ctx.b.create<nt::ConstantOp>(
        ctx.loc, st,
        cast<ElementsAttr>(
            DenseElementsAttr::get(st, FloatAttr::get(vt.getElementType(), s).getValue())));
    return binaryOp(ctx, BinaryFn::mul, v, c, vt);
  };
  product = scale(product, ctx.number(4, "alpha", 1.0));
  bias = scale(bias, ctx.number(3, "beta", 1.0));
  return {binaryOp(ctx, BinaryFn::add, bias, product, type)};
}

//===----------------------------------------------------------------------===//
// Data movement and views
//===----------------------------------------------------------------------===//

int64_t normalizeDim(int64_t d, int64_t rank) {
  int64_t n = d < 0 ? d + rank : d;
  if (n < 0 || n >= std::max<int64_t>(rank, 1))
    throw ImportError("dimension " + std::to_string(d) + " out of range for rank " +
                      std::to_string(rank));
  return n;
}

Values permuteTo(NodeContext &ctx, Value in, SmallVector<int64_t> dims) {
  return {ctx.b.create<nt::PermuteOp>(ctx.loc, ctx.resultType(), in, dims)};
}

Values permute(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  int64_t rank = cast<RankedTensorType>(in.getType()).getRank();
  SmallVector<int64_t> dims;
  for (int64_t d : ctx.intList(1, "dims"))
    dims.push_back(normalizeDim(d, rank));
  return permuteTo(ctx, in, dims);
}

Values transpose(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  int64_t rank = cast<RankedTensorType>(in.getType()).getRank();
  if (rank < 2)
    return {in};
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(dims[normalizeDim(ctx.integer(1, "dim0", 0), rank)],
            dims[normalizeDim(ctx.integer(2, "dim1", 1), rank)]);
  return permuteTo(ctx, in, dims);
}

Values t(NodeContext &ctx) {
  Value in = ctx.tensor(0);
  if (cast<RankedTensorType>(in.getType()).getRank() < 2)
    return {in};
  return permuteTo(ctx, in, {1, 0});
}

/// view, reshape, squeeze, unsqueeze, flatten: the result type says it all.
Values reshape(NodeContext &ctx) {
  return {ctx.b.create<nt::ReshapeOp>(ctx.loc, ctx.resultType(), ctx.tensor(0))};
}

Values expand(NodeContext &ctx) {
  return {ctx.b.create<nt::BroadcastOp>(ctx.loc, ctx.resultType(), ctx.tensor(0))};
}

/// clone, alias, detach: values are immutable here.
Values identity(NodeContext &ctx) { return {ctx.tensor(0)}; }

struct Entry {
  const char *name;
  AtenOpImporter importer;
};

// Sorted by name; findAtenOpImporter does a binary search.
const Entry kAtenOps[] = {
    {"aten._to_copy.default", toCopy},
    {"aten._unsafe_view.default", reshape},
    {"aten.abs.default", unary<UnaryFn::abs>},
    {"aten.add.Scalar", binaryWithAlpha<BinaryFn::add>},
    {"aten.add.Tensor", binaryWithAlpha<BinaryFn::add>},
    {"aten.addmm.default", addmm},
    {"aten.alias.default", identity},
    {"aten.clone.default", identity},
    {"aten.cos.default", unary<UnaryFn::cos>},
    {"aten.detach.default", identity},
    {"aten.div.Scalar", binary<BinaryFn::div>},
    {"aten.div.Tensor", binary<BinaryFn::div>},
    {"aten.eq.Scalar", binary<BinaryFn::eq>},
    {"aten.eq.Tensor", binary<BinaryFn::eq>},
    {"aten.erf.default", unary<UnaryFn::erf>},
    {"aten.exp.default", unary<UnaryFn::exp>},
    {"aten.expand.default", expand},
    {"aten.ge.Scalar", binary<BinaryFn::ge>},
    {"aten.ge.Tensor", binary<BinaryFn::ge>},
    {"aten.gelu.default", gelu},
    {"aten.gt.Scalar", binary<BinaryFn::gt>},
    {"aten.gt.Tensor", binary<BinaryFn::gt>},
    {"aten.le.Scalar", binary<BinaryFn::le>},
    {"aten.le.Tensor", binary<BinaryFn::le>},
    {"aten.lift_fresh_copy.default", identity},
    {"aten.log.default", unary<UnaryFn::log>},
    {"aten.lt.Scalar", binary<BinaryFn::lt>},
    {"aten.lt.Tensor", binary<BinaryFn::lt>},
    {"aten.maximum.default", binary<BinaryFn::max>},
    {"aten.minimum.default", binary<BinaryFn::min>},
    {"aten.mm.default", mm},
    {"aten.mul.Scalar", binary<BinaryFn::mul>},
    {"aten.mul.Tensor", binary<BinaryFn::mul>},
    {"aten.ne.Scalar", binary<BinaryFn::ne>},
    {"aten.ne.Tensor", binary<BinaryFn::ne>},
    {"aten.neg.default", unary<UnaryFn::neg>},
    {"aten.permute.default", permute},
    {"aten.pow.Tensor_Scalar", binary<BinaryFn::pow>},
    {"aten.pow.Tensor_Tensor", binary<BinaryFn::pow>},
    {"aten.reciprocal.default", unary<UnaryFn::reciprocal>},
    {"aten.relu.default", unary<UnaryFn::relu>},
    {"aten.reshape.default", reshape},
    {"aten.rsqrt.default", unary<UnaryFn::rsqrt>},
    {"aten.sigmoid.default", unary<UnaryFn::sigmoid>},
    {"aten.silu.default", unary<UnaryFn::silu>},
    {"aten.sin.default", unary<UnaryFn::sin>},
    {"aten.sqrt.default", unary<UnaryFn::sqrt>},
    {"aten.squeeze.dim", reshape},
    {"aten.squeeze.dims", reshape},
    {"aten.sub.Scalar", binaryWithAlpha<BinaryFn::sub>},
    {"aten.sub.Tensor", binaryWithAlpha<BinaryFn::sub>},
    {"aten.t.default", t},
    {"aten.tanh.default", unary<UnaryFn::tanh>},
    {"aten.transpose.int", transpose},
    {"aten.unsqueeze.default", reshape},
    {"aten.view.default", reshape},
};

} // namespace

AtenOpImporter findAtenOpImporter(const std::string &target) {
  auto it = std::lower_bound(std::begin(kAtenOps), std::end(kAtenOps), target,
                             [](const Entry &e, const std::string &t) { return e.name < t; });
  if (it != std::end(kAtenOps) && it->name == target)
    return it->importer;
  return nullptr;
}

std::vector<std::string> supportedAtenOps() {
  std::vector<std::string> names;
  for (const Entry &e : kAtenOps)
    names.push_back(e.name);
  return names;
}

} // namespace neuron::compiler
