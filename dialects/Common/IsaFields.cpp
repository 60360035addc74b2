// DictionaryAttr -> JSON -> runtime::instructionFieldsFromJson.
#include "dialects/Common/IsaFields.h"

#include "runtime/program/Serialize.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace neuron {

namespace {

/// The JSON value of `attr`; false when it has none.
bool toJson(mlir::Attribute attr, nlohmann::json &out) {
  if (auto s = mlir::dyn_cast<mlir::StringAttr>(attr)) {
    out = s.getValue().str();
  } else if (auto b = mlir::dyn_cast<mlir::BoolAttr>(attr)) {
    out = b.getValue();
  } else if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(attr)) {
    out = i.getInt();
  } else if (auto f = mlir::dyn_cast<mlir::FloatAttr>(attr)) {
    double v = f.getValueAsDouble();
    if (std::isnan(v))
      out = "nan";
    else if (std::isinf(v))
      out = v > 0 ? "inf" : "-inf";
    else
      out = v;
  } else if (auto a = mlir::dyn_cast<mlir::ArrayAttr>(attr)) {
    out = nlohmann::json::array();
    for (mlir::Attribute e : a) {
      nlohmann::json v;
      if (!toJson(e, v))
        return false;
      out.push_back(std::move(v));
    }
  } else if (auto d = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(attr)) {
    out = nlohmann::json::array();
    for (int64_t v : d.asArrayRef())
      out.push_back(v);
  } else {
    return false;
  }
  return true;
}

} // namespace

mlir::LogicalResult applyIsaFields(mlir::Operation *op, mlir::DictionaryAttr fields,
                                   runtime::Instruction &inst) {
  nlohmann::json tree = nlohmann::json::object();
  for (mlir::NamedAttribute field : fields) {
    nlohmann::json v;
    if (!toJson(field.getValue(), v))
      return op->emitOpError() << "field '" << field.getName().getValue()
                               << "' has no program-format value: " << field.getValue();
    tree[field.getName().str()] = std::move(v);
  }
  try {
    runtime::instructionFieldsFromJson(tree.dump(), inst);
  } catch (const runtime::FormatError &e) {
    return op->emitOpError() << e.what();
  }
  return mlir::success();
}

} // namespace neuron
