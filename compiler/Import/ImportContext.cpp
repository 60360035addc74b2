// Argument accessors for ATen-op importers, with errors that say what was expected.
#include "compiler/Import/ImportContext.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using json = nlohmann::json;

namespace neuron::compiler {

const json *NodeContext::arg(size_t i, const char *name) const {
  const json &args = node.at("args");
  if (i < args.size())
    return &args[i];
  if (name && node.contains("kwargs") && node["kwargs"].contains(name))
    return &node["kwargs"][name];
  return nullptr;
}

bool NodeContext::isTensorArg(size_t i) const {
  const json *a = arg(i);
  return a && a->is_object() && a->contains("node");
}

Value NodeContext::tensor(size_t i) const {
  const json *a = arg(i);
  if (!a || !a->is_object() || !a->contains("node"))
    throw ImportError("argument " + std::to_string(i) + " should be a tensor, got " +
                      (a ? a->dump() : "nothing"));
  return lookup(*a);
}

static double toNumber(const json &v) {
  if (v.is_boolean())
    return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number())
    return v.get<double>();
  if (v.is_object() && v.contains("float")) {
    std::string s = v["float"].get<std::string>();
    if (s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  throw ImportError("expected a number, got " + v.dump());
}

double NodeContext::number(size_t i, const char *name, double fallback) const {
  const json *a = arg(i, name);
  return (a && !a->is_null()) ? toNumber(*a) : fallback;
}

int64_t NodeContext::integer(size_t i, const char *name, int64_t fallback) const {
  const json *a = arg(i, name);
  if (!a || a->is_null())
    return fallback;
  if (!a->is_number_integer() && !a->is_boolean())
    throw ImportError("argument " + std::to_string(i) + " should be an integer, got " + a->dump());
  return a->is_boolean() ? a->get<bool>() : a->get<int64_t>();
}

std::string NodeContext::string(size_t i, const char *name, const std::string &fallback) const {
  const json *a = arg(i, name);
  return (a && a->is_string()) ? a->get<std::string>() : fallback;
}

SmallVector<int64_t> NodeContext::intList(size_t i, const char *name) const {
  const json *a = arg(i, name);
  SmallVector<int64_t> out;
  if (!a)
    throw ImportError("missing list argument " + std::to_string(i));
  if (a->is_number_integer())
    return {a->get<int64_t>()};
  for (const json &v : *a) {
    if (!v.is_number_integer())
      throw ImportError("expected a list of integers, got " + a->dump() +
                        " (symbolic sizes are not supported; use dynamic=False)");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

Value NodeContext::tensorOrScalar(size_t i, Type elementType) const {
  if (isTensorArg(i))
    return tensor(i);
  double v = number(i, nullptr, 0.0);
  auto type = RankedTensorType::get({}, elementType);
  Attribute value;
  if (auto ft = dyn_cast<FloatType>(elementType)) {
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    value = DenseElementsAttr::get(type, f);
  } else {
    value = DenseElementsAttr::get(
        type, APInt(elementType.getIntOrFloatBitWidth(), (int64_t)v, /*isSigned=*/true));
  }
  return b.create<ntorch::ConstantOp>(loc, type, cast<ElementsAttr>(value));
}

} // namespace neuron::compiler
