// The table of supported ATen overloads: the one op list (also the coverage table's source).
#include "compiler/Import/AtenImporters.h"
#include "compiler/Import/GraphImporter.h"

#include "llvm/ADT/StringMap.h"

using neuron::ntorch::BinaryFn;
using neuron::ntorch::UnaryFn;

namespace neuron::compiler {
namespace {
using namespace aten;

struct Entry {
  const char *name;
  AtenOpImporter importer;
  const char *lowering; // how it runs, for the coverage table
};

// Kept sorted by name so the generated coverage table reads well.
const Entry kAtenOps[] = {
    {"_c10d_functional.all_gather_into_tensor.default", allGather, "all-gather on the collective engine"},
    {"_c10d_functional.all_gather_into_tensor_coalesced.default", allGatherCoalesced, "all-gathers on the collective engine"},
    {"_c10d_functional.all_reduce.default", allReduce, "all-reduce on the collective engine"},
    {"_c10d_functional.all_reduce_coalesced.default", allReduceCoalesced, "all-reduces on the collective engine"},
    {"_c10d_functional.all_to_all_single.default", allToAll, "all-to-all (equal splits) on the collective engine"},
    {"_c10d_functional.reduce_scatter_tensor.default", reduceScatter, "reduce-scatter on the collective engine"},
    {"_c10d_functional.reduce_scatter_tensor_coalesced.default", reduceScatterCoalesced, "reduce-scatters on the collective engine"},
    {"_c10d_functional.wait_tensor.default", identity, "no instructions (readers wait on the collective's semaphore)"},
    {"aten._adaptive_avg_pool2d.default", adaptiveAvgPool2d, "window adds and scale (Vector)"},
    {"aten._log_softmax.default", logSoftmax, "fused row kernel: reduce max/sum (Vector), exp/log (Scalar)"},
    {"aten._native_batch_norm_legit_functional.default", batchNormTraining, "batch statistics (Vector), running-stat updates"},
    {"aten._native_batch_norm_legit_no_training.default", batchNormInference, "per-channel scale and shift (Vector), rsqrt (Scalar)"},
    {"aten._softmax.default", softmax, "fused row kernel: reduce max/sum (Vector), exp (Scalar)"},
    {"aten._to_copy.default", toCopy, "dtype conversion copy (Vector)"},
    {"aten._unsafe_view.default", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.abs.default", unary<UnaryFn::abs>, "activation (Scalar)"},
    {"aten.add.Scalar", binaryWithAlpha<BinaryFn::add>, "elementwise ALU op (Vector)"},
    {"aten.add.Tensor", binaryWithAlpha<BinaryFn::add>, "elementwise ALU op (Vector)"},
    {"aten.addmm.default", addmm, "matmul (Tensor) + bias add (Vector)"},
    {"aten.alias.default", identity, "no instructions"},
    {"aten.amax.default", amax, "reduce max (Vector)"},
    {"aten.amin.default", amin, "reduce min (Vector)"},
    {"aten.any.default", any, "reduce max over booleans (Vector)"},
    {"aten.any.dim", any, "reduce max over booleans (Vector)"},
    {"aten.any.dims", any, "reduce max over booleans (Vector)"},
    {"aten.arange.default", arange, "constant folded at compile time"},
    {"aten.arange.start", arange, "constant folded at compile time"},
    {"aten.arange.start_step", arange, "constant folded at compile time"},
    {"aten.argmax.default", argmax, "reduce max, compare, reduce min of positions (Vector)"},
    {"aten.argmin.default", argmin, "reduce min, compare, reduce min of positions (Vector)"},
    {"aten.atanh.default", atanhOp, "ratio (Vector), log (Scalar)"},
    {"aten.avg_pool2d.default", avgPool2d, "window adds and scale (Vector)"},
    {"aten.bernoulli.default", bernoulli, "uniform draws (GpSimd) below the probabilities (Vector)"},
    {"aten.bernoulli.p", bernoulli, "uniform draws (GpSimd) below p (Vector)"},
    {"aten.bitwise_and.Tensor", binary<BinaryFn::And>, "elementwise ALU op (Vector)"},
    {"aten.bitwise_not.default", logicalNot, "compare with 0 (Vector)"},
    {"aten.bitwise_or.Tensor", binary<BinaryFn::Or>, "elementwise ALU op (Vector)"},
    {"aten.bmm.default", bmm, "batched matmul (Tensor)"},
    {"aten.cat.default", cat, "DMA copies into one buffer"},
    {"aten.ceil.default", ceilOp, "trunc through an int32 cast and a step up (Vector)"},
    {"aten.clamp.Tensor", clamp, "max/min (Vector)"},
    {"aten.clamp.default", clamp, "max/min (Vector)"},
    {"aten.clamp_max.default", clampMax, "min (Vector)"},
    {"aten.clamp_min.default", clampMin, "max (Vector)"},
    {"aten.clone.default", identity, "no instructions"},
    {"aten.constant_pad_nd.default", constantPad, "DMA fill and copy"},
    {"aten.convolution.default", convolution, "implicit GEMM: accumulating matmuls per kernel offset (Tensor)"},
    {"aten.convolution_backward.default", convolutionBackward, "per kernel offset: matmuls (Tensor) and window scatter-adds"},
    {"aten.copy.default", copy, "dtype conversion / broadcast copy"},
    {"aten.copysign.Scalar", copySign, "abs (Scalar), sign tests and select (Vector)"},
    {"aten.copysign.Tensor", copySign, "abs (Scalar), sign tests and select (Vector)"},
    {"aten.cos.default", unary<UnaryFn::cos>, "activation (Scalar)"},
    {"aten.cosh.default", coshOp, "exp (Scalar), combine (Vector)"},
    {"aten.cumsum.default", cumsum,
     "floats: matmul with a triangular constant (Tensor); integers: exact log-step scan"},
    {"aten.detach.default", identity, "no instructions"},
    {"aten.diagonal.default", diagonal, "DMA of a strided window"},
    {"aten.div.Scalar", binary<BinaryFn::div>, "elementwise ALU op (Vector)"},
    {"aten.div.Tensor", binary<BinaryFn::div>, "elementwise ALU op (Vector)"},
    {"aten.div.Tensor_mode", divMode, "divide, then trunc (floats) or integer division with floor fix-up (Vector)"},
    {"aten.elu.default", eluOp, "exp (Scalar), compare and select (Vector)"},
    {"aten.embedding.default", embedding, "indirect DMA gather"},
    {"aten.empty.memory_format", empty, "constant (zeros)"},
    {"aten.empty_permuted.default", empty, "constant (zeros)"},
    {"aten.empty_strided.default", empty, "constant (zeros)"},
    {"aten.eq.Scalar", binary<BinaryFn::eq>, "elementwise ALU op (Vector)"},
    {"aten.eq.Tensor", binary<BinaryFn::eq>, "elementwise ALU op (Vector)"},
    {"aten.erf.default", unary<UnaryFn::erf>, "activation (Scalar)"},
    {"aten.erfc.default", erfcOp, "1 - erf (Scalar, Vector)"},
    {"aten.exp.default", unary<UnaryFn::exp>, "activation (Scalar)"},
    {"aten.exp2.default", exp2Op, "pow(2, x) (Vector)"},
    {"aten.expand.default", expand, "DMA with stride-0 access pattern"},
    {"aten.expm1.default", expm1, "exp (Scalar), subtract (Vector)"},
    {"aten.fill.Scalar", fillScalar, "constant"},
    {"aten.flip.default", flip, "indirect DMA gather of reversed rows"},
    {"aten.floor.default", floorOp, "trunc through an int32 cast and a step down (Vector)"},
    {"aten.fmod.Scalar", fmodOp, "integer division, multiply, subtract (Vector; integers only)"},
    {"aten.fmod.Tensor", fmodOp, "integer division, multiply, subtract (Vector; integers only)"},
    {"aten.full.default", full, "constant"},
    {"aten.full_like.default", fullLike, "constant"},
    {"aten.gather.default", gather, "one-hot select and row sum (Vector)"},
    {"aten.ge.Scalar", binary<BinaryFn::ge>, "elementwise ALU op (Vector)"},
    {"aten.ge.Tensor", binary<BinaryFn::ge>, "elementwise ALU op (Vector)"},
    {"aten.gelu.default", gelu, "activation (Scalar)"},
    {"aten.gt.Scalar", binary<BinaryFn::gt>, "elementwise ALU op (Vector)"},
    {"aten.gt.Tensor", binary<BinaryFn::gt>, "elementwise ALU op (Vector)"},
    {"aten.hardtanh.default", hardtanh, "max/min (Vector)"},
    {"aten.index.Tensor", indexTensor, "indirect DMA gather at the linear index (index math on Vector)"},
    {"aten.index_put.default", indexPut, "scatter-add as a one-hot matmul (Tensor)"},
    {"aten.index_select.default", indexSelect, "indirect DMA gather"},
    {"aten.isinf.default", isInf, "abs (Scalar), compare (Vector)"},
    {"aten.isnan.default", isNan, "compare x != x (Vector)"},
    {"aten.le.Scalar", binary<BinaryFn::le>, "elementwise ALU op (Vector)"},
    {"aten.le.Tensor", binary<BinaryFn::le>, "elementwise ALU op (Vector)"},
    {"aten.leaky_relu.default", leakyRelu, "max of x and slope*x (Vector)"},
    {"aten.lift_fresh_copy.default", identity, "no instructions"},
    {"aten.linalg_vector_norm.default", vectorNorm, "reduce add / max / min of |x| or x^2 (Vector), sqrt or pow"},
    {"aten.log.default", unary<UnaryFn::log>, "activation (Scalar)"},
    {"aten.log10.default", log10Op, "log (Scalar), scale (Vector)"},
    {"aten.log1p.default", log1p, "add (Vector), log (Scalar)"},
    {"aten.log2.default", log2Op, "log (Scalar), scale (Vector)"},
    {"aten.logical_and.default", binary<BinaryFn::And>, "elementwise ALU op (Vector)"},
    {"aten.logical_not.default", logicalNot, "compare with 0 (Vector)"},
    {"aten.logical_or.default", binary<BinaryFn::Or>, "elementwise ALU op (Vector)"},
    {"aten.lt.Scalar", binary<BinaryFn::lt>, "elementwise ALU op (Vector)"},
    {"aten.lt.Tensor", binary<BinaryFn::lt>, "elementwise ALU op (Vector)"},
    {"aten.max.default", amax, "reduce max over all elements (Vector)"},
    {"aten.max.dim", maxDim, "reduce max and argmax (Vector)"},
    {"aten.max_pool2d_with_indices.default", maxPool2dWithIndices, "window max (Vector); indices by window compares"},
    {"aten.max_pool2d_with_indices_backward.default", maxPool2dBackward, "masked window scatter-adds (Vector, DMA)"},
    {"aten.maximum.default", binary<BinaryFn::max>, "elementwise ALU op (Vector)"},
    {"aten.mean.default", mean, "reduce add and scale (Vector)"},
    {"aten.mean.dim", mean, "reduce add and scale (Vector)"},
    {"aten.min.default", amin, "reduce min over all elements (Vector)"},
    {"aten.min.dim", minDim, "reduce min and argmin (Vector)"},
    {"aten.minimum.default", binary<BinaryFn::min>, "elementwise ALU op (Vector)"},
    {"aten.mm.default", mm, "matmul (Tensor), fp32 accumulation in PSUM"},
    {"aten.mul.Scalar", binary<BinaryFn::mul>, "elementwise ALU op (Vector)"},
    {"aten.mul.Tensor", binary<BinaryFn::mul>, "elementwise ALU op (Vector)"},
    {"aten.native_dropout.default", nativeDropout, "uniform draws (GpSimd), mask and scale (Vector)"},
    {"aten.native_group_norm.default", groupNorm, "reduce add per group (Vector), rsqrt (Scalar)"},
    {"aten.native_layer_norm.default", layerNorm, "fused row kernel: reduce add (Vector), rsqrt (Scalar)"},
    {"aten.ne.Scalar", binary<BinaryFn::ne>, "elementwise ALU op (Vector)"},
    {"aten.ne.Tensor", binary<BinaryFn::ne>, "elementwise ALU op (Vector)"},
    {"aten.neg.default", unary<UnaryFn::neg>, "activation (Scalar)"},
    {"aten.permute.default", permute, "DMA with permuted access pattern"},
    {"aten.pow.Scalar", powScalar, "exp (Scalar) of a scaled exponent"},
    {"aten.pow.Tensor_Scalar", binary<BinaryFn::pow>, "elementwise ALU op (Vector)"},
    {"aten.pow.Tensor_Tensor", binary<BinaryFn::pow>, "elementwise ALU op (Vector)"},
    {"aten.prod.default", prod, "tree of elementwise products (Vector)"},
    {"aten.prod.dim_int", prod, "tree of elementwise products (Vector)"},
    {"aten.rand.default", rand, "counter-based uniform generator (GpSimd)"},
    {"aten.rand_like.default", rand, "counter-based uniform generator (GpSimd)"},
    {"aten.randn.default", randn, "uniform draws (GpSimd), Box-Muller (Scalar, Vector)"},
    {"aten.randn_like.default", randn, "uniform draws (GpSimd), Box-Muller (Scalar, Vector)"},
    {"aten.reciprocal.default", unary<UnaryFn::reciprocal>, "activation (Scalar)"},
    {"aten.relu.default", unary<UnaryFn::relu>, "activation (Scalar)"},
    {"aten.remainder.Scalar", remainderOp, "integer division, floor fix-up (Vector; integers only)"},
    {"aten.remainder.Tensor", remainderOp, "integer division, floor fix-up (Vector; integers only)"},
    {"aten.repeat.default", repeat, "DMA with stride-0 access pattern"},
    {"aten.reshape.default", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.round.default", roundOp, "trunc, fraction tests and a step away from zero (Vector)"},
    {"aten.rsqrt.default", unary<UnaryFn::rsqrt>, "activation (Scalar)"},
    {"aten.rsub.Scalar", rsub, "subtract (Vector)"},
    {"aten.scalar_tensor.default", scalarTensor, "constant"},
    {"aten.scatter.value", scatterValue, "one-hot mask and select (Vector)"},
    {"aten.select.int", select, "DMA of a strided window"},
    {"aten.sigmoid.default", unary<UnaryFn::sigmoid>, "activation (Scalar)"},
    {"aten.sign.default", signOp, "compares and selects (Vector)"},
    {"aten.silu.default", unary<UnaryFn::silu>, "activation (Scalar)"},
    {"aten.sin.default", unary<UnaryFn::sin>, "activation (Scalar)"},
    {"aten.sinh.default", sinhOp, "exp (Scalar), combine (Vector)"},
    {"aten.slice.Tensor", slice, "DMA of a strided window"},
    {"aten.split.Tensor", split, "DMA of strided windows"},
    {"aten.split_with_sizes.default", splitWithSizes, "DMA of strided windows"},
    {"aten.sqrt.default", unary<UnaryFn::sqrt>, "activation (Scalar)"},
    {"aten.squeeze.default", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.squeeze.dim", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.squeeze.dims", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.sub.Scalar", binaryWithAlpha<BinaryFn::sub>, "elementwise ALU op (Vector)"},
    {"aten.sub.Tensor", binaryWithAlpha<BinaryFn::sub>, "elementwise ALU op (Vector)"},
    {"aten.sum.default", sum, "reduce add (Vector)"},
    {"aten.sum.dim_IntList", sum, "reduce add (Vector)"},
    {"aten.t.default", t, "DMA with permuted access pattern"},
    {"aten.tan.default", tanOp, "sin, cos (Scalar), divide (Vector)"},
    {"aten.tanh.default", unary<UnaryFn::tanh>, "activation (Scalar)"},
    {"aten.transpose.int", transpose, "DMA with permuted access pattern"},
    {"aten.trunc.default", truncOp, "int32 cast round trip below 2^23 (Vector)"},
    {"aten.uniform.default", uniformOp, "counter-based uniform generator (GpSimd), scale (Vector)"},
    {"aten.unsqueeze.default", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.var.correction", var, "reduce add of squared deviations (Vector)"},
    {"aten.var_mean.correction", varMean, "reduce adds: squared deviations and mean (Vector)"},
    {"aten.view.default", reshape, "view of the same HBM bytes (no instructions)"},
    {"aten.where.self", where, "select (Vector)"},
    {"prims.fma.default", fma, "multiply and add (Vector)"},
};

} // namespace

AtenOpImporter findAtenOpImporter(const std::string &target) {
  static const llvm::StringMap<AtenOpImporter> byName = [] {
    llvm::StringMap<AtenOpImporter> map;
    for (const Entry &e : kAtenOps)
      map[e.name] = e.importer;
    return map;
  }();
  return byName.lookup(target);
}

std::vector<std::pair<std::string, std::string>> supportedAtenOps() {
  std::vector<std::pair<std::string, std::string>> ops;
  for (const Entry &e : kAtenOps)
    ops.push_back({e.name, e.lowering});
  return ops;
}

} // namespace neuron::compiler
