// Argument accessors for ATen-op importers, with errors that say what was expected.
#include "compiler/Import/ImportContext.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "runtime/program/JsonBrief.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>

using namespace mlir;
using json = nlohmann::json;

namespace neuron::compiler {

int64_t jsonInt64(const json &v) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)std::numeric_limits<int64_t>::max())
    throw ImportError("integer " + runtime::jsonBrief(v) + " is out of range (more than 2^63-1)");
  if (!v.is_number_integer())
    throw ImportError("expected an integer, got " + runtime::jsonBrief(v));
  return v.get<int64_t>();
}

RankedTensorType NodeContext::resultType(size_t i) const {
  if (!hasResult(i))
    throw ImportError("the graph file records " + std::to_string(resultTypes.size()) +
                      " output(s) for this node, without a tensor output " + std::to_string(i));
  return resultTypes[i];
}

static std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream(s) << t;
  return s;
}

void NodeContext::requireRank(Value v, int64_t rank, const std::string &what) const {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() != rank)
    throw ImportError(what + " must have rank " + std::to_string(rank) + ", got " +
                      typeString(t));
}

void NodeContext::requireRankAtLeast(Value v, int64_t rank, const std::string &what) const {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() < rank)
    throw ImportError(what + " must have rank " + std::to_string(rank) + " or more, got " +
                      typeString(t));
}

void NodeContext::requireExpandable(int64_t elements, const std::string &what) const {
  if (elements < 0 || elements > kMaxExpandedElements)
    throw ImportError(what + " needs a constant of " + std::to_string(elements) +
                      " elements, more than the " + std::to_string(kMaxExpandedElements) +
                      " this compiler expands");
}

const json *NodeContext::arg(size_t i, const char *name) const {
  const json &args = node.at("args");
  if (i < args.size())
    return &args[i];
  if (name && node.contains("kwargs") && node["kwargs"].contains(name))
    return &node["kwargs"][name];
  return nullptr;
}

std::string NodeContext::name() const {
  auto it = node.find("name");
  return it != node.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool NodeContext::isTensorArg(size_t i) const {
  const json *a = arg(i);
  return a && a->is_object() && a->contains("node");
}

Value NodeContext::tensor(size_t i) const {
  const json *a = arg(i);
  if (!a || !a->is_object() || !a->contains("node"))
    throw ImportError("argument " + std::to_string(i) + " should be a tensor, got " +
                      (a ? runtime::jsonBrief(*a) : "nothing"));
  return lookup(*a);
}

SmallVector<Value> NodeContext::tensorList(size_t i, const char *name) const {
  const json *a = arg(i, name);
  if (!a || !a->is_array())
    throw ImportError("argument " + std::to_string(i) + " should be a list of tensors");
  SmallVector<Value> values;
  for (const json &ref : *a)
    values.push_back(lookup(ref));
  return values;
}

SmallVector<Value> NodeContext::optionalTensorList(size_t i, const char *name) const {
  const json *a = arg(i, name);
  if (!a || !a->is_array())
    throw ImportError("argument " + std::to_string(i) + " should be a list of tensors");
  SmallVector<Value> values;
  for (const json &ref : *a)
    values.push_back(ref.is_null() ? Value() : lookup(ref));
  return values;
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
  throw ImportError("expected a number, got " + runtime::jsonBrief(v));
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
    throw ImportError("argument " + std::to_string(i) + " should be an integer, got " + runtime::jsonBrief(*a));
  return a->is_boolean() ? a->get<bool>() : jsonInt64(*a);
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
    return {jsonInt64(*a)};
  if (!a->is_array())
    throw ImportError("argument " + std::to_string(i) + " should be a list of integers, got " +
                      runtime::jsonBrief(*a));
  for (const json &v : *a) {
    if (!v.is_number_integer())
      throw ImportError("expected a list of integers, got " + runtime::jsonBrief(*a) +
                        " (symbolic sizes are not supported; use dynamic=False)");
    out.push_back(jsonInt64(v));
  }
  return out;
}

SmallVector<int64_t> NodeContext::intPair(size_t i, const char *name,
                                          SmallVector<int64_t> fallback) const {
  const json *a = arg(i, name);
  SmallVector<int64_t> v = (a && !a->is_null()) ? intList(i, name) : fallback;
  if (v.empty())
    v = fallback;
  if (v.size() == 1)
    v.push_back(v[0]);
  if (v.size() != 2)
    throw ImportError(std::string("argument ") + (name ? name : std::to_string(i)) +
                      " should be one or two integers, got " + std::to_string(v.size()));
  return v;
}

Value NodeContext::tensorOrScalar(size_t i, Type elementType) const {
  if (isTensorArg(i))
    return tensor(i);
  const json *a = arg(i, nullptr);
  double v = number(i, nullptr, 0.0);
  // A Python float stays fp32 beside bf16/fp16 tensors: eager computes in fp32 with it
  // and rounds the result once.
  if (isa<FloatType>(elementType) && elementType.getIntOrFloatBitWidth() < 32)
    elementType = b.getF32Type();
  // Beside an integer tensor, a Python float promotes the op to the default float dtype
  // (int_tensor * 0.5 is a float op in eager); it must not be truncated to an integer.
  if (a && (a->is_number_float() || a->is_object()) && isa<IntegerType>(elementType))
    elementType = b.getF32Type();
  // Scalars travel as doubles down to the instructions' immediates: an integer beyond
  // 2^53 would silently lose bits.
  constexpr uint64_t exactLimit = uint64_t(1) << 53;
  if (a && a->is_number_integer() &&
      (a->is_number_unsigned() ? a->get<uint64_t>() > exactLimit
                               : (a->get<int64_t>() > int64_t(exactLimit) ||
                                  a->get<int64_t>() < -int64_t(exactLimit))))
    throw ImportError("integer scalar " + runtime::jsonBrief(*a) +
                      " is beyond 2^53, which the neuron backend cannot represent exactly; "
                      "pass it as a tensor");
  return scalar(elementType, v);
}

static RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Value NodeContext::splat(RankedTensorType type, double value) const {
  return b.create<ntorch::ConstantOp>(loc, type,
                                      cast<ElementsAttr>(ntorch::splatAttr(type, value)));
}

Value NodeContext::scalar(Type elementType, double value) const {
  return splat(RankedTensorType::get({}, elementType), value);
}

Value NodeContext::unary(ntorch::UnaryFn fn, Value x) const {
  return b.create<ntorch::UnaryOp>(loc, x.getType(), fn, x);
}

static bool isComparison(ntorch::BinaryFn fn) {
  using F = ntorch::BinaryFn;
  return fn == F::eq || fn == F::ne || fn == F::lt || fn == F::le || fn == F::gt || fn == F::ge;
}

Value NodeContext::binary(ntorch::BinaryFn fn, Value lhs, Value rhs) const {
  auto l = typeOf(lhs), r = typeOf(rhs);
  SmallVector<int64_t> shape;
  int64_t rank = std::max(l.getRank(), r.getRank());
  for (int64_t i = 0; i < rank; ++i) {
    int64_t li = i - (rank - l.getRank()), ri = i - (rank - r.getRank());
    int64_t a = li >= 0 ? l.getDimSize(li) : 1, c = ri >= 0 ? r.getDimSize(ri) : 1;
    if (a != c && a != 1 && c != 1)
      throw ImportError("shapes do not broadcast");
    shape.push_back(a == 1 ? c : a);
  }
  Type et = isComparison(fn) ? b.getI1Type() : l.getElementType();
  return b.create<ntorch::BinaryOp>(loc, RankedTensorType::get(shape, et), fn, lhs, rhs);
}

Value NodeContext::binaryScalar(ntorch::BinaryFn fn, Value lhs, double rhs) const {
  Type et = typeOf(lhs).getElementType();
  if (isa<FloatType>(et) && et.getIntOrFloatBitWidth() < 32)
    et = b.getF32Type(); // kept exact, as eager keeps Python scalars
  return binary(fn, lhs, scalar(et, rhs));
}

Value NodeContext::reduce(ntorch::ReduceFn fn, Value x, ArrayRef<int64_t> dims,
                          bool keepdim) const {
  auto t = typeOf(x);
  SmallVector<bool> reduced(t.getRank(), false);
  SmallVector<int64_t> normalized;
  for (int64_t d : t.getRank() == 0 ? ArrayRef<int64_t>() : dims) { // dim 0 of a 0-d tensor
    int64_t n = dim(d, t.getRank());
    if (!reduced[n])
      normalized.push_back(n);
    reduced[n] = true;
  }
  llvm::sort(normalized); // a set of dims: (-1, -2) reduces what (-2, -1) does
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (!reduced[i])
      shape.push_back(t.getDimSize(i));
    else if (keepdim)
      shape.push_back(1);
  return b.create<ntorch::ReduceOp>(loc, RankedTensorType::get(shape, t.getElementType()), fn, x,
                                    normalized, keepdim);
}

Value NodeContext::reshape(Value x, ArrayRef<int64_t> shape) const {
  auto t = typeOf(x);
  if (t.getShape() == shape)
    return x;
  return b.create<ntorch::ReshapeOp>(loc, RankedTensorType::get(shape, t.getElementType()), x);
}

Value NodeContext::permute(Value x, ArrayRef<int64_t> dims) const {
  auto t = typeOf(x);
  SmallVector<int64_t> shape;
  for (int64_t d : dims)
    shape.push_back(t.getDimSize(d));
  return b.create<ntorch::PermuteOp>(loc, RankedTensorType::get(shape, t.getElementType()), x,
                                     dims);
}

Value NodeContext::castTo(Value x, Type elementType) const {
  auto t = typeOf(x);
  if (t.getElementType() == elementType)
    return x;
  return b.create<ntorch::CastOp>(loc, RankedTensorType::get(t.getShape(), elementType), x);
}

int64_t NodeContext::dim(int64_t d, int64_t rank) const {
  int64_t n = d < 0 ? d + rank : d;
  if (n < 0 || n >= std::max<int64_t>(rank, 1))
    throw ImportError("dimension " + std::to_string(d) + " out of range for rank " +
                      std::to_string(rank));
  return n;
}

} // namespace neuron::compiler
