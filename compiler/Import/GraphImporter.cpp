// Graph file -> func.func @main of ntorch ops, with each node's ATen op and source line as its location.
#include "compiler/Import/GraphImporter.h"
#include "compiler/Import/ImportContext.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <regex>

using namespace mlir;
using json = nlohmann::json;

namespace neuron::compiler {

static Type parseElementType(MLIRContext &ctx, const std::string &name) {
  if (name == "f32" || name == "f64") // f64 runs as f32; the Python side warns once.
    return Float32Type::get(&ctx);
  if (name == "bf16")
    return BFloat16Type::get(&ctx);
  if (name == "f16")
    return Float16Type::get(&ctx);
  static const std::pair<const char *, unsigned> ints[] = {
      {"i64", 64}, {"i32", 32}, {"i16", 16}, {"i8", 8}, {"u8", 8}, {"i1", 1}};
  for (auto [n, w] : ints)
    if (name == n)
      return IntegerType::get(&ctx, w);
  throw ImportError("unknown dtype '" + name + "'");
}

static RankedTensorType parseTensorType(MLIRContext &ctx, const json &desc) {
  SmallVector<int64_t> shape;
  for (const json &d : desc.at("shape")) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw ImportError("shape " + desc.at("shape").dump() +
                        " is not static; the neuron backend needs static shapes "
                        "(torch.compile(..., dynamic=False))");
    shape.push_back(d.get<int64_t>());
  }
  return RankedTensorType::get(shape, parseElementType(ctx, desc.at("dtype").get<std::string>()));
}

/// "model.py:12 in forward: y = x + 1" -> FileLineColLoc(model.py, 12) named by the op.
static Location nodeLocation(MLIRContext &ctx, const json &node) {
  std::string target = node.value("target", "?"), source = node.value("source", "");
  std::smatch m;
  static const std::regex fileLine(R"(^(.*?):(\d+))");
  Location at = UnknownLoc::get(&ctx);
  if (std::regex_search(source, m, fileLine))
    at = FileLineColLoc::get(&ctx, m[1].str(), std::stoul(m[2].str()), 0);
  return NameLoc::get(StringAttr::get(&ctx, target), at);
}

/// A constant's element: a number, a bool, or {"float": "inf" | "-inf" | "nan"}.
static double elementValue(const json &v) {
  if (v.is_boolean())
    return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_object() && v.contains("float")) {
    std::string s = v.at("float").get<std::string>();
    if (s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  return v.get<double>();
}

static DenseElementsAttr constantValue(RankedTensorType type, const json &data) {
  Type et = type.getElementType();
  if (!data.is_array() || (int64_t)data.size() != type.getNumElements())
    throw ImportError("constant has " + std::to_string(data.size()) + " values for " +
                      std::to_string(type.getNumElements()) + " elements");
  if (isa<FloatType>(et)) {
    SmallVector<APFloat> values;
    for (const json &v : data) {
      APFloat f(elementValue(v));
      bool lost;
      f.convert(cast<FloatType>(et).getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  SmallVector<APInt> values;
  for (const json &v : data)
    values.push_back(
        APInt(et.getIntOrFloatBitWidth(), (int64_t)elementValue(v), /*isSigned=*/true));
  return DenseElementsAttr::get(type, values);
}

namespace {
class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx) : ctx(ctx), builder(&ctx) {}

  OwningOpRef<ModuleOp> run(const json &graph, std::string &error);

private:
  Value lookup(const json &ref);

  MLIRContext &ctx;
  OpBuilder builder;
  llvm::StringMap<SmallVector<Value>> values;
};
} // namespace

Value GraphImporter::lookup(const json &ref) {
  std::string name = ref.at("node").get<std::string>();
  auto it = values.find(name);
  if (it == values.end())
    throw ImportError("reference to unknown node '" + name + "'");
  size_t index = ref.value("index", 0);
  if (index >= it->second.size() || !it->second[index])
    throw ImportError("node '" + name + "' has no tensor output " + std::to_string(index));
  return it->second[index];
}

OwningOpRef<ModuleOp> GraphImporter::run(const json &graph, std::string &error) {
  if (graph.value("format", "") != "neuronsim-graph")
    throw ImportError("not a neuronsim graph file (field 'format' is " +
                      graph.value("format", json("missing")).dump() + ")");
  if (graph.value("version", -1) != kGraphFormatVersion)
    throw ImportError("graph file version " + graph.value("version", json("missing")).dump() +
                      " is not supported; this compiler reads version " +
                      std::to_string(kGraphFormatVersion));

  Location unknown = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  SmallVector<Type> argTypes;
  for (const json &in : graph.at("inputs"))
    argTypes.push_back(parseTensorType(ctx, in));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(unknown, "main",
                                           builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (auto [i, in] : llvm::enumerate(graph.at("inputs")))
    values[in.at("name").get<std::string>()] = {body->getArgument(i)};

  for (const json &c : graph.value("constants", json::array())) {
    RankedTensorType type = parseTensorType(ctx, c);
    auto op = builder.create<ntorch::ConstantOp>(NameLoc::get(builder.getStringAttr(
                                                     c.at("name").get<std::string>())),
                                                 type, constantValue(type, c.at("data")));
    values[c.at("name").get<std::string>()] = {op};
  }

  std::vector<std::string> unsupported;
  for (const json &node : graph.at("nodes")) {
    std::string target = node.at("target").get<std::string>();
    std::string name = node.at("name").get<std::string>();
    AtenOpImporter importer = findAtenOpImporter(target);
    if (!importer) {
      std::string source = node.value("source", "");
      unsupported.push_back(target + (source.empty() ? "" : " at " + source));
      values[name] = {};
      continue;
    }
    if (!unsupported.empty())
      continue; // keep collecting unsupported ops, stop building
    SmallVector<RankedTensorType> resultTypes;
    for (const json &out : node.at("outputs"))
      resultTypes.push_back(out.is_null() ? RankedTensorType() : parseTensorType(ctx, out));
    Location loc = nodeLocation(ctx, node);
    NodeContext nc(builder, loc, node, [this](const json &ref) { return lookup(ref); },
                   resultTypes);
    SmallVector<Value> results;
    try {
      results = importer(nc);
    } catch (const ImportError &e) {
      throw ImportError("node '" + name + "' (" + target + (node.value("source", "").empty()
                                                                ? ""
                                                                : " at " + node.value("source", "")) +
                        "): " + e.what());
    }
    for (auto [i, v] : llvm::enumerate(results)) {
      if (!v)
        continue;
      if (i >= resultTypes.size() || !resultTypes[i])
        throw ImportError("node '" + name + "' (" + target + "): output " + std::to_string(i) +
                          " is not recorded in the graph file");
      if (v.getType() != resultTypes[i]) {
        std::string got, want;
        llvm::raw_string_ostream(got) << v.getType();
        llvm::raw_string_ostream(want) << resultTypes[i];
        throw ImportError("node '" + name + "' (" + target + "): output " + std::to_string(i) +
                          " was imported as " + got + " but the graph records " + want);
      }
    }
    values[name] = results;
  }
  if (!unsupported.empty()) {
    error = "unsupported operators (" + std::to_string(unsupported.size()) + "):";
    for (const std::string &u : unsupported)
      error += "\n  " + u;
    return nullptr;
  }

  SmallVector<Value> results;
  for (const json &out : graph.at("outputs"))
    results.push_back(lookup(out));
  builder.create<func::ReturnOp>(unknown, results);
  func.setFunctionType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  return module;
}

OwningOpRef<ModuleOp> importGraph(const std::string &text, MLIRContext &ctx, std::string &error) {
  ctx.getOrLoadDialect<ntorch::NTorchDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  try {
    json graph = json::parse(text);
    GraphImporter importer(ctx);
    OwningOpRef<ModuleOp> module = importer.run(graph, error);
    return module;
  } catch (const json::exception &e) {
    error = std::string("malformed graph file: ") + e.what();
  } catch (const ImportError &e) {
    error = std::string("invalid graph file: ") + e.what();
  }
  return nullptr;
}

} // namespace neuron::compiler
