// Importers of the functional collectives (torch.distributed's _c10d_functional ops, as
// DTensor and compiled FSDP2 put them into graphs): one ntorch.collective each.
//
// The graph file gives every collective node a `group_size` keyword (the exporter resolves
// the group's name to its size; all_reduce and all_to_all_single do not carry it).
// wait_tensor is the identity: the program's semaphores make a collective's readers wait.
#include "compiler/Import/AtenImporters.h"

namespace neuron::compiler::aten {
namespace {

using neuron::AluOp;
using neuron::CollectiveKind;

int64_t groupSize(NodeContext &ctx) {
  const nlohmann::json *size = ctx.arg(~size_t(0), "group_size");
  if (!size || !size->is_number_integer() || jsonInt64(*size) < 1)
    throw ImportError("the collective has no positive 'group_size' (the graph exporter "
                      "writes the size of its process group)");
  return jsonInt64(*size);
}

std::string groupName(NodeContext &ctx, size_t i) {
  std::string name = ctx.string(i, "group_name", "");
  if (name.empty())
    throw ImportError("the collective names no process group (group_name)");
  return name;
}

/// The reduction of a reduce_op name, and whether the result is divided by the ranks.
AluOp reduction(const std::string &op, bool &average) {
  average = op == "avg";
  if (op == "sum" || op == "avg")
    return AluOp::add;
  if (op == "max")
    return AluOp::max;
  if (op == "min")
    return AluOp::min;
  if (op == "product")
    return AluOp::mul;
  throw ImportError("reduce_op '" + op + "' is not supported (sum, avg, max, min, product)");
}

mlir::Value collective(NodeContext &ctx, CollectiveKind kind, AluOp reduce, mlir::Value input,
                       mlir::RankedTensorType type, const std::string &group, int64_t size) {
  return ctx.b.create<ntorch::CollectiveOp>(ctx.loc, type, kind, reduce, group, size, input);
}

/// reduce_op, then the average's division.
mlir::Value reduced(NodeContext &ctx, CollectiveKind kind, size_t opArg, size_t groupArg,
                    mlir::Value input, mlir::RankedTensorType type) {
  bool average = false;
  AluOp reduce = reduction(ctx.string(opArg, "reduce_op", ""), average);
  const int64_t size = groupSize(ctx);
  mlir::Value out = collective(ctx, kind, reduce, input, type,
                               groupName(ctx, groupArg), size);
  return average ? ctx.binaryScalar(ntorch::BinaryFn::div, out, double(size)) : out;
}

} // namespace

Values allReduce(NodeContext &ctx) {
  // all_reduce(Tensor input, str reduce_op, str group_name)
  return {reduced(ctx, CollectiveKind::all_reduce, 1, 2, ctx.tensor(0), ctx.resultType())};
}

Values allGather(NodeContext &ctx) {
  // all_gather_into_tensor(Tensor input, int group_size, str group_name)
  return {collective(ctx, CollectiveKind::all_gather, AluOp::add, ctx.tensor(0),
                     ctx.resultType(), groupName(ctx, 2), groupSize(ctx))};
}

Values reduceScatter(NodeContext &ctx) {
  // reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, str group_name)
  return {reduced(ctx, CollectiveKind::reduce_scatter, 1, 3, ctx.tensor(0), ctx.resultType())};
}

Values allToAll(NodeContext &ctx) {
  // all_to_all_single(Tensor input, SymInt[]? output_split_sizes,
  //                   SymInt[]? input_split_sizes, str group_name)
  mlir::Value input = ctx.tensor(0);
  auto type = llvm::cast<mlir::RankedTensorType>(input.getType());
  const int64_t size = groupSize(ctx);
  ctx.requireRankAtLeast(input, 1, "all_to_all_single input");
  for (auto [i, name] : {std::pair<size_t, const char *>{1, "output_split_sizes"},
                         {2, "input_split_sizes"}}) {
    const nlohmann::json *splits = ctx.arg(i, name);
    if (!splits || splits->is_null())
      continue;
    for (int64_t s : ctx.intList(i, name))
      if (s * size != type.getDimSize(0))
        throw ImportError(std::string("all_to_all_single with unequal ") + name +
                          " is not supported (each rank's block must be dim 0 / " +
                          std::to_string(size) + ")");
  }
  return {collective(ctx, CollectiveKind::all_to_all, AluOp::add, input, ctx.resultType(),
                     groupName(ctx, 3), size)};
}

Values allReduceCoalesced(NodeContext &ctx) {
  // all_reduce_coalesced(Tensor[] inputs, str reduce_op, str group_name) -> Tensor[]
  Values out;
  llvm::SmallVector<mlir::Value> inputs = ctx.tensorList(0, "inputs");
  for (auto [i, input] : llvm::enumerate(inputs))
    out.push_back(reduced(ctx, CollectiveKind::all_reduce, 1, 2, input, ctx.resultType(i)));
  return out;
}

Values allGatherCoalesced(NodeContext &ctx) {
  // all_gather_into_tensor_coalesced(Tensor[] inputs, int group_size, str group_name)
  Values out;
  llvm::SmallVector<mlir::Value> inputs = ctx.tensorList(0, "inputs");
  for (auto [i, input] : llvm::enumerate(inputs))
    out.push_back(collective(ctx, CollectiveKind::all_gather, AluOp::add, input,
                             ctx.resultType(i), groupName(ctx, 2),
                             groupSize(ctx)));
  return out;
}

Values reduceScatterCoalesced(NodeContext &ctx) {
  // reduce_scatter_tensor_coalesced(Tensor[] inputs, str reduce_op, int group_size,
  //                                 str group_name)
  Values out;
  llvm::SmallVector<mlir::Value> inputs = ctx.tensorList(0, "inputs");
  for (auto [i, input] : llvm::enumerate(inputs))
    out.push_back(
        reduced(ctx, CollectiveKind::reduce_scatter, 1, 3, input, ctx.resultType(i)));
  return out;
}

} // namespace neuron::compiler::aten
