// What an ATen-op importer sees of one graph node: its arguments, result types, a builder.
#pragma once

#include "mlir/IR/Builders.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <nlohmann/json.hpp>
#include <functional>
#include <stdexcept>
#include <string>

namespace neuron::compiler {

/// The most elements of a dense constant an importer builds (positions, masks): 2^24,
/// which also keeps every position exact in fp32.
inline constexpr int64_t kMaxExpandedElements = int64_t(1) << 24;

/// A JSON integer as int64; an ImportError when it does not fit (a uint64 above 2^63-1).
int64_t jsonInt64(const nlohmann::json &v);

/// Thrown by argument accessors for a node whose arguments do not fit the op;
/// turned into an error naming the node.
struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class NodeContext {
public:
  NodeContext(mlir::OpBuilder &builder, mlir::Location loc, const nlohmann::json &node,
              std::function<mlir::Value(const nlohmann::json &)> lookup,
              llvm::SmallVector<mlir::RankedTensorType> resultTypes)
      : b(builder), loc(loc), node(node), lookup(std::move(lookup)),
        resultTypes(std::move(resultTypes)) {}

  mlir::OpBuilder &b;
  mlir::Location loc;

  /// Positional argument i, or keyword `name` when given and present.
  const nlohmann::json *arg(size_t i, const char *name = nullptr) const;
  bool hasArg(size_t i, const char *name = nullptr) const { return arg(i, name) != nullptr; }
  bool isTensorArg(size_t i) const;
  mlir::Value tensor(size_t i) const;
  /// A list of tensors (aten.cat's first argument).
  llvm::SmallVector<mlir::Value> tensorList(size_t i, const char *name = nullptr) const;
  /// A list of tensors and Nones (aten.index.Tensor's indices): a null Value for None.
  llvm::SmallVector<mlir::Value> optionalTensorList(size_t i, const char *name = nullptr) const;
  double number(size_t i, const char *name, double fallback) const;
  int64_t integer(size_t i, const char *name, int64_t fallback) const;
  std::string string(size_t i, const char *name, const std::string &fallback) const;
  llvm::SmallVector<int64_t> intList(size_t i, const char *name = nullptr) const;
  /// A 2-D window parameter (kernel, stride, padding): one int applies to both dims;
  /// missing, null or empty gives `fallback`.
  llvm::SmallVector<int64_t> intPair(size_t i, const char *name,
                                     llvm::SmallVector<int64_t> fallback) const;

  /// A tensor operand: argument i itself, or a rank-0 constant of `elementType`
  /// when argument i is a number.
  mlir::Value tensorOrScalar(size_t i, mlir::Type elementType) const;

  /// The graph file's type of result i; an ImportError when the file records none.
  mlir::RankedTensorType resultType(size_t i = 0) const;
  bool hasResult(size_t i) const { return i < resultTypes.size() && resultTypes[i]; }

  /// Rank checks of operands and results: an ImportError naming `what` otherwise.
  void requireRank(mlir::Value v, int64_t rank, const std::string &what) const;
  void requireRankAtLeast(mlir::Value v, int64_t rank, const std::string &what) const;
  /// Dense constants the importer expands element by element (positions, triangles) are
  /// bounded, so that a crafted size cannot make the compiler build billions of values.
  void requireExpandable(int64_t elements, const std::string &what) const;

  // Builders for importers that expand one ATen op into several ntorch ops.
  /// A tensor of `type` filled with `value`.
  mlir::Value splat(mlir::RankedTensorType type, double value) const;
  /// A rank-0 constant of `elementType`.
  mlir::Value scalar(mlir::Type elementType, double value) const;
  mlir::Value unary(neuron::ntorch::UnaryFn fn, mlir::Value x) const;
  /// Broadcasting binary op; comparisons yield i1, others lhs's element type.
  mlir::Value binary(neuron::ntorch::BinaryFn fn, mlir::Value lhs, mlir::Value rhs) const;
  mlir::Value binaryScalar(neuron::ntorch::BinaryFn fn, mlir::Value lhs, double rhs) const;
  mlir::Value reduce(neuron::ntorch::ReduceFn fn, mlir::Value x, llvm::ArrayRef<int64_t> dims,
                     bool keepdim) const;
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) const;
  mlir::Value permute(mlir::Value x, llvm::ArrayRef<int64_t> dims) const;
  mlir::Value castTo(mlir::Value x, mlir::Type elementType) const;
  /// Normalizes a possibly negative dimension index.
  int64_t dim(int64_t d, int64_t rank) const;
  size_t numResults() const { return resultTypes.size(); }
  /// The node's name in the graph file (unique in its graph).
  std::string name() const;

private:
  const nlohmann::json &node;
  std::function<mlir::Value(const nlohmann::json &)> lookup;
  llvm::SmallVector<mlir::RankedTensorType> resultTypes;
};

/// Imports one node; returns the values for its outputs, in order.
using AtenOpImporter = llvm::SmallVector<mlir::Value> (*)(NodeContext &ctx);

/// The importer for `target` ("aten.mm.default"), or nullptr when unsupported.
AtenOpImporter findAtenOpImporter(const std::string &target);

} // namespace neuron::compiler
