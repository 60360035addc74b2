// compileGraph: import, the lowering stages, export; diagnostics collected into one message.
#include "compiler/Compile.h"
#include "compiler/Export/ProgramExport.h"
#include "compiler/Import/GraphImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/SourceHash.h"
#include "runtime/program/Serialize.h"
#include "runtime/program/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <filesystem>
#include <fstream>

using namespace mlir;

namespace neuron::compiler {

const char *compilerVersion() { return "0.1.0+" NEURONSIM_SOURCE_HASH; }

/// "model.py:12 (aten.mm.default): <message>" for diagnostics on imported ops.
static std::string formatDiagnostic(Diagnostic &diag) {
  std::string where;
  Location loc = diag.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc()))
      where = file.getFilename().str() + ":" + std::to_string(file.getLine()) + " ";
    where += "(" + name.getName().str() + "): ";
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    where = file.getFilename().str() + ":" + std::to_string(file.getLine()) + ": ";
  }
  std::string text = where + diag.str();
  for (Diagnostic &note : diag.getNotes())
    text += "\n  note: " + note.str();
  return text;
}

static void writeFile(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path) << text;
}

static std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/true));
  return text;
}

CompileResult compileGraph(const std::string &graphJson, const CompileOptions &options) {
  CompileResult result;
  if (!runtime::findTarget(options.target)) {
    result.error = "unknown target '" + options.target + "'; known targets:";
    for (const std::string &name : runtime::targetNames())
      result.error += " " + name;
    return result;
  }
  std::filesystem::path dump = options.dumpDir;
  if (!dump.empty()) {
    std::filesystem::create_directories(dump);
    writeFile(dump / "graph.json", graphJson);
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      messages.push_back(formatDiagnostic(diag));
    return success();
  });
  auto fail = [&](const std::string &what) {
    result.error = what;
    for (const std::string &m : messages)
      result.error += "\n" + m;
    return result;
  };

  std::string importError;
  OwningOpRef<ModuleOp> module = importGraph(graphJson, ctx, importError);
  if (!module)
    return fail(importError);
  if (failed(verify(*module)))
    return fail("the imported graph is invalid:");
  if (!dump.empty())
    writeFile(dump / "0-import.mlir", printModule(*module));

  PipelineOptions pipelineOptions{options.target};
  int index = 1;
  for (const Stage &stage : loweringStages()) {
    PassManager pm(&ctx);
    stage.build(pm, pipelineOptions);
    if (failed(pm.run(*module)))
      return fail(std::string("lowering to ") + stage.name + " failed:");
    if (!dump.empty())
      writeFile(dump / (std::to_string(index++) + "-" + stage.name + ".mlir"),
                printModule(*module));
  }
  if (failed(exportProgram(*module, options.target, result.program)))
    return fail("export of the program failed:");
  if (!dump.empty())
    writeFile(dump / "program.json", runtime::programToJson(result.program, 1));
  result.ok = true;
  return result;
}

} // namespace neuron::compiler
