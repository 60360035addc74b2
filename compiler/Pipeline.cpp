// The lowering pipeline: the only place that orders the passes.
#include "compiler/Pipeline.h"
#include "compiler/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace neuron::compiler {

static void buildNTorchStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createNeuronFuseElementwise());
  pm.addNestedPass<func::FuncOp>(
      createNeuronFuseMatmulEpilogue(NeuronFuseMatmulEpilogueOptions{options.target}));
}

static void buildNTileStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createConvertNTorchToNTile(ConvertNTorchToNTileOptions{options.target}));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createNeuronHoistInvariantLoads());
  pm.addNestedPass<func::FuncOp>(createNeuronMultiBuffer(NeuronMultiBufferOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(
      createNeuronAllocateTiles(NeuronAllocateTilesOptions{options.target}));
}

static void buildNIsaStage(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createConvertNTileToNIsa(ConvertNTileToNIsaOptions{options.target}));
  pm.addNestedPass<func::FuncOp>(createNeuronAssignDmaQueues());
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
