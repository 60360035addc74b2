// The lowering pipeline: the only place that orders the passes.
#include "compiler/Pipeline.h"
#include "compiler/Compile.h"
#include "compiler/Passes.h"
#include "dialects/NTorch/IR/NTorchOps.h"
#include "runtime/program/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdio>

using namespace mlir;

namespace neuron::compiler {
namespace {

std::string gib(int64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f GiB (%lld bytes)", bytes / double(int64_t(1) << 30),
                (long long)bytes);
  return text;
}

/// Bytes of a static tensor type, or -1 when its size overflows int64 (0 when dynamic:
/// convert-ntorch-to-ntile rejects dynamic dims).
int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t n = std::max<int64_t>(1, t.getElementType().getIntOrFloatBitWidth() / 8);
  for (int64_t d : t.getShape())
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

/// Checks sizes before tiles are expanded, after fusion (whose inner values never reach
/// HBM): no tensor size overflows, and the tensors live in HBM at once - the inputs and
/// outputs throughout, each other top-level result from its op to its last use (views
/// share their input's bytes) - fit the target's HBM. A graph that cannot run fails here
/// with the op and the sizes, instead of in a lowering that runs for minutes.
struct CheckSizesPass : PassWrapper<CheckSizesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckSizesPass)
  explicit CheckSizesPass(std::string target) : target(std::move(target)) {}
  StringRef getArgument() const final { return "neuron-check-sizes"; }
  StringRef getDescription() const final { return "Reject tensors that do not fit HBM"; }

  void runOnOperation() override {
    int64_t capacity = hbmBytesPerCore(target);
    if (capacity == 0) {
      getOperation().emitError("unknown target '") << target << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.getBody().empty() && failed(check(func, capacity)))
        return signalPassFailure();
  }

  LogicalResult check(func::FuncOp func, int64_t capacity) {
    Block &body = func.getBody().front();
    auto tooBig = [&](Operation *op, Value v, int64_t bytes) {
      InFlightDiagnostic d = op ? op->emitError() : func.emitError();
      if (op)
        d << "'" << op->getName() << "' result " << v.getType() << " ";
      else
        d << "argument " << cast<BlockArgument>(v).getArgNumber() << " of @" << func.getSymName()
          << " (" << v.getType() << ") ";
      if (bytes < 0)
        d << "has more elements than a 64-bit count holds";
      else
        d << "needs " << gib(bytes) << ", more than " << hbmDescription(target);
      return failure();
    };
    int64_t fixed = 0; // inputs and outputs, live throughout
    for (BlockArgument arg : body.getArguments()) {
      int64_t bytes = tensorBytes(arg.getType());
      if (bytes < 0 || bytes > capacity)
        return tooBig(nullptr, arg, bytes);
      fixed += bytes;
    }
    // The last top-level user of each value (returned values live to the end).
    llvm::DenseMap<Value, Operation *> lastUse;
    for (Operation &op : body)
      op.walk([&](Operation *inner) { // fused bodies may read top-level values
        for (Value operand : inner->getOperands())
          lastUse[operand] = &op;
      });
    llvm::SmallPtrSet<Value, 8> returned;
    for (Value v : body.getTerminator()->getOperands())
      returned.insert(v);
    llvm::DenseMap<Operation *, int64_t> freedAfter;
    int64_t live = 0;
    for (Operation &op : body) {
      bool view = isa<ntorch::ReshapeOp>(op);
      for (Value r : op.getResults()) {
        int64_t bytes = tensorBytes(r.getType());
        if (bytes < 0 || bytes > capacity)
          return tooBig(&op, r, bytes);
        if (view)
          continue;
        if (returned.contains(r)) {
          fixed += bytes;
          continue;
        }
        live += bytes;
        Operation *last = lastUse.lookup(r);
        freedAfter[last ? last : &op] += bytes;
      }
      if (fixed + live > capacity)
        return op.emitError("the tensors live in HBM at this op (inputs, outputs and "
                            "intermediates still to be read) need ")
               << gib(fixed + live) << ", more than " << hbmDescription(target);
      live -= freedAfter.lookup(&op);
    }
    return success();
  }

  std::string target;
};

} // namespace

static void buildNTorchStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  const runtime::Target *target = runtime::findTarget(options.target);
  pm.addNestedPass<func::FuncOp>(createNeuronFoldPartitions(
      NeuronFoldPartitionsOptions{target ? int64_t(target->partitions) : 128}));
  pm.addPass(createCanonicalizerPass()); // cancels the reshapes between folded ops
  pm.addNestedPass<func::FuncOp>(createNeuronFuseElementwise());
  pm.addNestedPass<func::FuncOp>(
      createNeuronFuseMatmulEpilogue(NeuronFuseMatmulEpilogueOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronOverlapCollectives());
}

static void buildNTileStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(std::make_unique<CheckSizesPass>(options.target));
  pm.addPass(createConvertNTorchToNTile(ConvertNTorchToNTileOptions{options.target}));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(
      createNeuronScalarTensorTensor(NeuronScalarTensorTensorOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronSplitCores(NeuronSplitCoresOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronHoistInvariantLoads());
  pm.addNestedPass<func::FuncOp>(createNeuronMultiBuffer(NeuronMultiBufferOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(
      createNeuronAllocateTiles(NeuronAllocateTilesOptions{options.target}));
}

static void buildNIsaStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createConvertNTileToNIsa(ConvertNTileToNIsaOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(
      createNeuronBalanceEngines(NeuronBalanceEnginesOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronConstantFills()); // before DMAs split by rows
  pm.addNestedPass<func::FuncOp>(
      createNeuronAssignDmaQueues(NeuronAssignDmaQueuesOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(
      createNeuronDmaTranspose(NeuronDmaTransposeOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronInsertSemaphores());
}

const std::vector<Stage> &loweringStages() {
  static const std::vector<Stage> stages = {
      {"ntorch", buildNTorchStage},
      {"ntile", buildNTileStage},
      {"nisa", buildNIsaStage},
  };
  return stages;
}

void buildLoweringPipeline(OpPassManager &pm, const PipelineOptions &options) {
  for (const Stage &stage : loweringStages())
    stage.build(pm, options);
}

namespace {
struct LoweringPipelineCLOptions : PassPipelineOptions<LoweringPipelineCLOptions> {
  Option<std::string> target{*this, "target", llvm::cl::desc("target name"),
                             llvm::cl::init("trn2")};
};
} // namespace

void registerLoweringPipeline() {
  PassPipelineRegistration<LoweringPipelineCLOptions>(
      "neuron-lower", "Lower ntorch to nisa instructions (the full pipeline)",
      [](OpPassManager &pm, const LoweringPipelineCLOptions &cl) {
        buildLoweringPipeline(pm, PipelineOptions{cl.target});
      });
}

} // namespace neuron::compiler
