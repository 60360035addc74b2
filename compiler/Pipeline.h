// The lowering pipeline, defined once: ntorch -> ntile -> nisa, in named stages.
#pragma once

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace neuron::compiler {

struct PipelineOptions {
  std::string target = "trn2";
};

/// One stage of the lowering; the IR after each stage can be dumped.
struct Stage {
  const char *name; // "ntorch", "ntile", "nisa"
  void (*build)(mlir::OpPassManager &pm, const PipelineOptions &options);
};

/// The stages, in order.
const std::vector<Stage> &loweringStages();

/// All stages into one pass manager.
void buildLoweringPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `neuron-lower` (the whole pipeline) for neuron-opt.
void registerLoweringPipeline();

} // namespace neuron::compiler
