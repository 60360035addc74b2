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

#include <cstdio>
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

/// The module as neuron-opt reads it back: locations in the generic form (the pretty
/// form prints `[unknown]`, which does not parse).
static std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false));
  return text;
}

int64_t hbmBytesPerCore(const std::string &target) {
  const runtime::Target *t = runtime::findTarget(target);
  return t ? t->hbmBytesPerCore : 0;
}

std::string hbmDescription(const std::string &target) {
  char text[96];
  std::snprintf(text, sizeof text, "the %.1f GiB of HBM of one %s NeuronCore",
                hbmBytesPerCore(target) / double(int64_t(1) << 30), target.c_str());
  return text;
}

std::string validUtf8(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = text[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k)
      ok = ((unsigned char)text[i + k] >> 6) == 0x2;
    if (ok && n > 1) { // no overlong forms, surrogates or code points past U+10FFFF
      unsigned c1 = (unsigned char)text[i + 1];
      ok = !(n == 2 && c < 0xC2) && !(n == 3 && c == 0xE0 && c1 < 0xA0) &&
           !(n == 3 && c == 0xED && c1 >= 0xA0) && !(n == 4 && c == 0xF0 && c1 < 0x90) &&
           !(n == 4 && (c > 0xF4 || (c == 0xF4 && c1 >= 0x90)));
    }
    if (ok) {
      out.append(text, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
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
    std::error_code ec;
    std::filesystem::create_directories(dump, ec);
    if (ec) {
      result.error = "cannot create the dump directory '" + dump.string() + "': " + ec.message();
      return result;
    }
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
    result.error = validUtf8(result.error);
    return result;
  };

  std::string importError;
  ImportLimits limits{hbmBytesPerCore(options.target), hbmDescription(options.target)};
  OwningOpRef<ModuleOp> module = importGraph(graphJson, ctx, importError, limits);
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
