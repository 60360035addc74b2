// Importers of ATen linear algebra: mm, bmm, addmm, _trilinear.
#include "compiler/Import/AtenImporters.h"

using namespace mlir;
using neuron::ntorch::BinaryFn;
using neuron::ntorch::ReduceFn;
namespace nt = neuron::ntorch;

namespace neuron::compiler::aten {

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Values mm(NodeContext &ctx) {
  return {ctx.b.create<nt::MatmulOp>(ctx.loc, ctx.resultType(), ctx.tensor(0), ctx.tensor(1),
                                     false, false)};
}

Values bmm(NodeContext &ctx) { return mm(ctx); }

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
Values addmm(NodeContext &ctx) {
  Value product = ctx.b.create<nt::MatmulOp>(ctx.loc, ctx.resultType(), ctx.tensor(1),
                                             ctx.tensor(2), false, false);
  Value bias = ctx.tensor(0);
  double alpha = ctx.number(4, "alpha", 1.0), beta = ctx.number(3, "beta", 1.0);
  if (alpha != 1.0)
    product = ctx.binaryScalar(BinaryFn::mul, product, alpha);
  if (beta != 1.0)
    bias = ctx.binaryScalar(BinaryFn::mul, bias, beta);
  return {ctx.b.create<nt::BinaryOp>(ctx.loc, ctx.resultType(), BinaryFn::add, bias, product)};
}

/// _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim) (nn.functional.
/// bilinear): each input with size-1 dims inserted at its expand dims, the three multiplied
/// with broadcasting and summed over sumdim, in fp32.
Values trilinear(NodeContext &ctx) {
  Type f32 = ctx.b.getF32Type();
  Value product;
  int64_t rank = -1;
  for (size_t k = 0; k < 3; ++k) {
    Value x = ctx.tensor(k);
    SmallVector<int64_t> expand = ctx.intList(3 + k, "expand");
    auto t = typeOf(x);
    int64_t r = t.getRank() + (int64_t)expand.size();
    if (rank >= 0 && r != rank)
      throw ImportError("_trilinear: the inputs expand to ranks " + std::to_string(rank) +
                        " and " + std::to_string(r));
    rank = r;
    SmallVector<bool> inserted(r, false);
    for (int64_t d : expand) {
      int64_t n = ctx.dim(d, r);
      if (inserted[n])
        throw ImportError("_trilinear: expand dim " + std::to_string(d) + " repeats");
      inserted[n] = true;
    }
    SmallVector<int64_t> shape;
    for (int64_t d = 0, src = 0; d < r; ++d)
      shape.push_back(inserted[d] ? 1 : t.getDimSize(src++));
    x = ctx.castTo(ctx.reshape(x, shape), f32);
    product = product ? ctx.binary(BinaryFn::mul, product, x) : x;
  }
  SmallVector<int64_t> dims;
  for (int64_t d : ctx.intList(6, "sumdim"))
    dims.push_back(ctx.dim(d, rank));
  llvm::sort(dims);
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end())
    throw ImportError("_trilinear: a sum dim repeats");
  Value y = dims.empty() ? product : ctx.reduce(ReduceFn::sum, product, dims, false);
  RankedTensorType resultType = ctx.resultType();
  if (typeOf(y).getShape() != resultType.getShape())
    throw ImportError("_trilinear: the result has the shape of " +
                      std::to_string(typeOf(y).getNumElements()) +
                      " elements the graph does not record");
  return {ctx.castTo(y, resultType.getElementType())};
}

} // namespace neuron::compiler::aten
