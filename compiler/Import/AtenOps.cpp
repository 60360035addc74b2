// The table of supported ATen overloads: the one op list (also the coverage table's source).
#include "compiler/Import/AtenImporters.h"
#include "compiler/Import/GraphImporter.h"

#include <algorithm>

using neuron::ntorch::BinaryFn;
using neuron::ntorch::UnaryFn;

namespace neuron::compiler {
namespace {
using namespace aten;

struct Entry {
  const char *name;
  AtenOpImporter importer;
};

// Sorted by name (a test checks it); findAtenOpImporter does a binary search.
const Entry kAtenOps[] = {
    {"aten._adaptive_avg_pool2d.default", adaptiveAvgPool2d},
    {"aten._log_softmax.default", logSoftmax},
    {"aten._native_batch_norm_legit_no_training.default", batchNormInference},
    {"aten._softmax.default", softmax},
    {"aten._to_copy.default", toCopy},
    {"aten._unsafe_view.default", reshape},
    {"aten.abs.default", unary<UnaryFn::abs>},
    {"aten.add.Scalar", binaryWithAlpha<BinaryFn::add>},
    {"aten.add.Tensor", binaryWithAlpha<BinaryFn::add>},
    {"aten.addmm.default", addmm},
    {"aten.alias.default", identity},
    {"aten.amax.default", amax},
    {"aten.amin.default", amin},
    {"aten.any.dim", any},
    {"aten.any.dims", any},
    {"aten.arange.default", arange},
    {"aten.arange.start", arange},
    {"aten.arange.start_step", arange},
    {"aten.avg_pool2d.default", avgPool2d},
    {"aten.bitwise_and.Tensor", binary<BinaryFn::And>},
    {"aten.bitwise_not.default", logicalNot},
    {"aten.bitwise_or.Tensor", binary<BinaryFn::Or>},
    {"aten.bmm.default", bmm},
    {"aten.cat.default", cat},
    {"aten.clamp.Tensor", clamp},
    {"aten.clamp.default", clamp},
    {"aten.clamp_max.default", clampMax},
    {"aten.clamp_min.default", clampMin},
    {"aten.clone.default", identity},
    {"aten.constant_pad_nd.default", constantPad},
    {"aten.convolution.default", convolution},
    {"aten.cos.default", unary<UnaryFn::cos>},
    {"aten.cumsum.default", cumsum},
    {"aten.detach.default", identity},
    {"aten.div.Scalar", binary<BinaryFn::div>},
    {"aten.div.Tensor", binary<BinaryFn::div>},
    {"aten.embedding.default", embedding},
    {"aten.eq.Scalar", binary<BinaryFn::eq>},
    {"aten.eq.Tensor", binary<BinaryFn::eq>},
    {"aten.erf.default", unary<UnaryFn::erf>},
    {"aten.exp.default", unary<UnaryFn::exp>},
    {"aten.expand.default", expand},
    {"aten.expm1.default", expm1},
    {"aten.full.default", full},
    {"aten.full_like.default", fullLike},
    {"aten.ge.Scalar", binary<BinaryFn::ge>},
    {"aten.ge.Tensor", binary<BinaryFn::ge>},
    {"aten.gelu.default", gelu},
    {"aten.gt.Scalar", binary<BinaryFn::gt>},
    {"aten.gt.Tensor", binary<BinaryFn::gt>},
    {"aten.hardtanh.default", hardtanh},
    {"aten.index_select.default", indexSelect},
    {"aten.le.Scalar", binary<BinaryFn::le>},
    {"aten.le.Tensor", binary<BinaryFn::le>},
    {"aten.leaky_relu.default", leakyRelu},
    {"aten.lift_fresh_copy.default", identity},
    {"aten.log.default", unary<UnaryFn::log>},
    {"aten.log1p.default", log1p},
    {"aten.logical_and.default", binary<BinaryFn::And>},
    {"aten.logical_not.default", logicalNot},
    {"aten.logical_or.default", binary<BinaryFn::Or>},
    {"aten.lt.Scalar", binary<BinaryFn::lt>},
    {"aten.lt.Tensor", binary<BinaryFn::lt>},
    {"aten.max_pool2d_with_indices.default", maxPool2d},
    {"aten.maximum.default", binary<BinaryFn::max>},
    {"aten.mean.default", mean},
    {"aten.mean.dim", mean},
    {"aten.minimum.default", binary<BinaryFn::min>},
    {"aten.mm.default", mm},
    {"aten.mul.Scalar", binary<BinaryFn::mul>},
    {"aten.mul.Tensor", binary<BinaryFn::mul>},
    {"aten.native_layer_norm.default", layerNorm},
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
    {"aten.rsub.Scalar", rsub},
    {"aten.scalar_tensor.default", scalarTensor},
    {"aten.select.int", select},
    {"aten.sigmoid.default", unary<UnaryFn::sigmoid>},
    {"aten.silu.default", unary<UnaryFn::silu>},
    {"aten.sin.default", unary<UnaryFn::sin>},
    {"aten.slice.Tensor", slice},
    {"aten.split.Tensor", split},
    {"aten.split_with_sizes.default", splitWithSizes},
    {"aten.sqrt.default", unary<UnaryFn::sqrt>},
    {"aten.squeeze.default", reshape},
    {"aten.squeeze.dim", reshape},
    {"aten.squeeze.dims", reshape},
    {"aten.sub.Scalar", binaryWithAlpha<BinaryFn::sub>},
    {"aten.sub.Tensor", binaryWithAlpha<BinaryFn::sub>},
    {"aten.sum.default", sum},
    {"aten.sum.dim_IntList", sum},
    {"aten.t.default", t},
    {"aten.tanh.default", unary<UnaryFn::tanh>},
    {"aten.transpose.int", transpose},
    {"aten.unsqueeze.default", reshape},
    {"aten.var.correction", var},
    {"aten.view.default", reshape},
    {"aten.where.self", where},
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
    if (e.importer)
      names.push_back(e.name);
  return names;
}

} // namespace neuron::compiler
