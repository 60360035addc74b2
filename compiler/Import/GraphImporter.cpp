// Graph file -> func.func @main of ntorch ops, with each node's ATen op and source line as its location.
#include "compiler/Import/GraphImporter.h"
#include "compiler/Import/ImportContext.h"
#include "runtime/program/JsonBrief.h"
#include "dialects/NTorch/IR/NTorchOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <cctype>
#include <cstdio>

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
  if (name == "f8e4m3fn") // torch.float8_e4m3fn (kernels' tensors)
    return Float8E4M3FNType::get(&ctx);
  if (name == "f8e5m2") // torch.float8_e5m2 (kernels' tensors)
    return Float8E5M2Type::get(&ctx);
  if (name == "u8") // torch.uint8: unsigned, exported as the program's u8
    return IntegerType::get(&ctx, 8, IntegerType::Unsigned);
  if (name == "u32") // torch.uint32 (kernels' tensors only: NKI's uint32), the program's u32
    return IntegerType::get(&ctx, 32, IntegerType::Unsigned);
  if (name == "u16") // torch.uint16 (kernels' tensors only: NKI's uint16), the program's u16
    return IntegerType::get(&ctx, 16, IntegerType::Unsigned);
  static const std::pair<const char *, unsigned> ints[] = {
      {"i64", 64}, {"i32", 32}, {"i16", 16}, {"i8", 8}, {"i1", 1}};
  for (auto [n, w] : ints)
    if (name == n)
      return IntegerType::get(&ctx, w);
  throw ImportError("unknown dtype '" + name + "'");
}

/// Bytes of one element as the device stores it (i1 takes a byte).
static int64_t elementBytes(Type t) { return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8); }

/// A source string short enough for a message.
static std::string shortened(const std::string &s) {
  return s.size() <= 200 ? s : s.substr(0, 200) + "...";
}

/// A tensor description {"shape": [...], "dtype": ...}, checked before anything is built:
/// static sizes, an element count and a byte size that fit int64 and the target's memory.
static RankedTensorType checkedTensorType(MLIRContext &ctx, const json &desc,
                                          const std::string &what, const ImportLimits &limits);

static RankedTensorType parseTensorType(MLIRContext &ctx, const json &desc, const std::string &what,
                                        const ImportLimits &limits) {
  try {
    return checkedTensorType(ctx, desc, what, limits);
  } catch (const ImportError &e) {
    std::string message = e.what();
    if (message.rfind(what, 0) == 0) // already names the tensor
      throw;
    throw ImportError(what + ": " + message);
  }
}

static RankedTensorType checkedTensorType(MLIRContext &ctx, const json &desc,
                                          const std::string &what, const ImportLimits &limits) {
  if (!desc.is_object())
    throw ImportError(what + ": expected {\"shape\": [...], \"dtype\": ...}, got " +
                      runtime::jsonBrief(desc));
  const json &dims = desc.at("shape");
  if (!dims.is_array())
    throw ImportError(what + ": shape should be a list, got " + runtime::jsonBrief(dims));
  constexpr size_t kMaxRank = 64; // PyTorch's limit
  if (dims.size() > kMaxRank)
    throw ImportError(what + ": rank " + std::to_string(dims.size()) + " is more than " +
                      std::to_string(kMaxRank));
  SmallVector<int64_t> shape;
  int64_t elements = 1;
  bool overflow = false;
  for (const json &d : dims) {
    if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() &&
                                   d.get<int64_t>() < 0))
      throw ImportError(what + ": shape " + runtime::jsonBrief(dims) +
                        " is not static; the neuron backend needs static shapes "
                        "(torch.compile(..., dynamic=False))");
    int64_t n = jsonInt64(d);
    overflow |= __builtin_mul_overflow(elements, n, &elements);
    shape.push_back(n);
  }
  Type et = parseElementType(ctx, desc.at("dtype").get<std::string>());
  int64_t bytes = 0;
  overflow |= __builtin_mul_overflow(elements, elementBytes(et), &bytes);
  if (overflow)
    throw ImportError(what + ": shape " + runtime::jsonBrief(dims) +
                      " has more elements than a 64-bit count holds");
  if (bytes > limits.maxTensorBytes) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.1f GiB", bytes / double(int64_t(1) << 30));
    throw ImportError(what + ": shape " + runtime::jsonBrief(dims) + " " + desc.at("dtype").get<std::string>() +
                      " needs " + gib + " (" + std::to_string(bytes) + " bytes), more than " +
                      limits.memoryName);
  }
  return RankedTensorType::get(shape, et);
}

/// "model.py:12 in forward: y = x + 1" -> FileLineColLoc(model.py, 12) named by the op.
/// Parsed by hand: the file is everything before the first ':' that a digit follows.
static Location nodeLocation(MLIRContext &ctx, const json &node) {
  std::string target = node.value("target", "?"), source = node.value("source", "");
  Location at = UnknownLoc::get(&ctx);
  for (size_t colon = source.find(':'); colon != std::string::npos;
       colon = source.find(':', colon + 1)) {
    size_t end = colon + 1;
    uint64_t line = 0;
    while (end < source.size() && std::isdigit((unsigned char)source[end])) {
      line = line * 10 + (source[end++] - '0');
      if (line > std::numeric_limits<unsigned>::max())
        throw ImportError("the source line number in '" + shortened(source) + "' is out of range");
    }
    if (end == colon + 1)
      continue;
    at = FileLineColLoc::get(&ctx, source.substr(0, colon), (unsigned)line, 0);
    break;
  }
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
    if (s == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    throw ImportError("unknown float value '" + shortened(s) + "'");
  }
  if (!v.is_number())
    throw ImportError("expected a number, got " + runtime::jsonBrief(v));
  return v.get<double>();
}

/// An integer constant's element, exactly (int64 values beyond 2^53 stay exact); a value
/// out of the dtype's range (0..255 for uint8) is an error.
static APInt integerElement(const json &v, IntegerType type) {
  unsigned width = type.getWidth();
  if (v.is_boolean())
    return APInt(width, v.get<bool>() ? 1 : 0);
  if (!v.is_number_integer())
    throw ImportError("integer constant has the non-integer value " + runtime::jsonBrief(v));
  int64_t x = jsonInt64(v);
  bool fits = width == 64 ||
              (width == 1                 ? (x == 0 || x == 1)
               : type.isUnsignedInteger() ? (x >= 0 && x < (int64_t(1) << width))
                                          : (x >= -(int64_t(1) << (width - 1)) &&
                                             x < (int64_t(1) << (width - 1))));
  if (!fits)
    throw ImportError("value " + std::to_string(x) + " does not fit " +
                      (type.isUnsignedInteger() ? "a uint" : "an i") + std::to_string(width) +
                      " constant");
  return APInt(64, (uint64_t)x).trunc(width);
}

static DenseElementsAttr constantValue(RankedTensorType type, const json &data) {
  Type et = type.getElementType();
  if (!data.is_array() || (int64_t)data.size() != type.getNumElements())
    throw ImportError("constant has " + std::to_string(data.is_array() ? data.size() : 0) +
                      " values for " + std::to_string(type.getNumElements()) + " elements");
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
    values.push_back(integerElement(v, cast<IntegerType>(et)));
  return DenseElementsAttr::get(type, values);
}

/// aten.index takes a bool or uint8 index tensor as a mask (the positions of its nonzero
/// elements), where its importer reads positions: rejected, not miscomputed. (index_put's
/// importer takes the masks it can handle and rejects the others itself.)
static void rejectMaskIndices(const std::string &target, const json &node,
                              const std::function<Value(const json &)> &lookup) {
  llvm::StringRef op(target);
  if (!op.starts_with("aten.index.") && !op.starts_with("aten._unsafe_index"))
    return;
  const json &args = node.at("args");
  const json *indices = args.is_array() && args.size() > 1 ? &args[1] : nullptr;
  if ((!indices || indices->is_null()) && node.contains("kwargs") &&
      node["kwargs"].contains("indices"))
    indices = &node["kwargs"]["indices"];
  if (!indices || !indices->is_array())
    return;
  for (const json &ref : *indices) {
    if (!ref.is_object() || !ref.contains("node"))
      continue;
    Type et = cast<RankedTensorType>(lookup(ref).getType()).getElementType();
    if (et.isInteger(1) || et.isUnsignedInteger(8))
      throw ImportError(std::string("a ") + (et.isInteger(1) ? "bool" : "uint8") +
                        " index tensor is a mask in torch (boolean indexing), which is not "
                        "supported; index with int64 positions instead");
  }
}

namespace {
class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const ImportLimits &limits)
      : ctx(ctx), builder(&ctx), limits(limits) {}

  OwningOpRef<ModuleOp> run(const json &graph, std::string &error);

private:
  Value lookup(const json &ref);

  MLIRContext &ctx;
  OpBuilder builder;
  const ImportLimits &limits;
  llvm::StringMap<SmallVector<Value>> values;
};
} // namespace

Value GraphImporter::lookup(const json &ref) {
  std::string name = ref.at("node").get<std::string>();
  auto it = values.find(name);
  if (it == values.end())
    throw ImportError("reference to unknown node '" + name + "'");
  int64_t index = ref.contains("index") ? jsonInt64(ref.at("index")) : 0;
  if (index < 0 || index >= (int64_t)it->second.size() || !it->second[index])
    throw ImportError("node '" + name + "' has no tensor output " + std::to_string(index));
  return it->second[index];
}

OwningOpRef<ModuleOp> GraphImporter::run(const json &graph, std::string &error) {
  if (graph.value("format", "") != "neuronsim-graph")
    throw ImportError("not a neuronsim graph file (field 'format' is " +
                      runtime::jsonBrief(graph.value("format", json("missing"))) + ")");
  if (graph.value("version", -1) != kGraphFormatVersion)
    throw ImportError("graph file version " + runtime::jsonBrief(graph.value("version", json("missing"))) +
                      " is not supported; this compiler reads version " +
                      std::to_string(kGraphFormatVersion));

  Location unknown = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  SmallVector<Type> argTypes;
  for (const json &in : graph.at("inputs"))
    argTypes.push_back(
        parseTensorType(ctx, in, "graph input '" + in.value("name", "?") + "'", limits));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(unknown, "main",
                                           builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  for (auto [i, in] : llvm::enumerate(graph.at("inputs")))
    values[in.at("name").get<std::string>()] = {body->getArgument(i)};

  for (const json &c : graph.value("constants", json::array())) {
    std::string what = "constant '" + c.value("name", "?") + "'";
    RankedTensorType type = parseTensorType(ctx, c, what, limits);
    DenseElementsAttr value;
    try {
      value = constantValue(type, c.at("data"));
    } catch (const ImportError &e) {
      throw ImportError(what + ": " + e.what());
    }
    auto op = builder.create<ntorch::ConstantOp>(NameLoc::get(builder.getStringAttr(
                                                     c.at("name").get<std::string>())),
                                                 type, value);
    values[c.at("name").get<std::string>()] = {op};
  }

  std::vector<std::string> unsupported;
  for (const json &node : graph.at("nodes")) {
    std::string target = node.at("target").get<std::string>();
    std::string name = node.at("name").get<std::string>();
    AtenOpImporter importer = findAtenOpImporter(target);
    if (!importer) {
      std::string source = shortened(node.value("source", ""));
      unsupported.push_back(target + (source.empty() ? "" : " at " + source));
      values[name] = {};
      continue;
    }
    if (!unsupported.empty())
      continue; // keep collecting unsupported ops, stop building
    std::string source = shortened(node.value("source", ""));
    std::string where = "node '" + name + "' (" + target + (source.empty() ? "" : " at " + source) + ")";
    SmallVector<Value> results;
    Operation *last = body->empty() ? nullptr : &body->back();
    SmallVector<RankedTensorType> resultTypes;
    try {
      const json &outs = node.at("outputs");
      if (!outs.is_array())
        throw ImportError("'outputs' should be a list, got " + runtime::jsonBrief(outs));
      for (auto [i, out] : llvm::enumerate(outs))
        resultTypes.push_back(out.is_null() ? RankedTensorType()
                                            : parseTensorType(ctx, out, "output " + std::to_string(i),
                                                              limits));
      Location loc = nodeLocation(ctx, node);
      auto lookupRef = [this](const json &ref) { return lookup(ref); };
      rejectMaskIndices(target, node, lookupRef);
      NodeContext nc(builder, loc, node, lookupRef, resultTypes);
      results = importer(nc);
    } catch (const ImportError &e) {
      throw ImportError(where + ": " + e.what());
    }
    // Verify the node's ops now, so that the next importers only see consistent types.
    for (Operation &op : llvm::make_range(last ? std::next(last->getIterator()) : body->begin(),
                                          body->end()))
      if (failed(verify(&op)))
        throw ImportError(where + ": its arguments do not fit the op (see the diagnostics)");
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

OwningOpRef<ModuleOp> importGraph(const std::string &text, MLIRContext &ctx, std::string &error,
                                  const ImportLimits &limits) {
  ctx.getOrLoadDialect<ntorch::NTorchDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  try {
    json graph = json::parse(text);
    GraphImporter importer(ctx, limits);
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
