//===- ir_fuzzer.cpp - libFuzzer target for mithril IR and the passes ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// What mithril-opt does with a file: parse, verify, then run the pipeline's
// front half (flatten, shapes, autodiff, decomposition, lowering to linalg).
// Any text must give diagnostics or a result, never a crash.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Runtime/CompiledModel.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<MLIRContext> ctx = [] {
    auto c = mithril::runtime::createContext();
    c->allowUnregisteredDialects(false);
    return c;
  }();
  // Diagnostics are expected; keep them off stderr.
  ScopedDiagnosticHandler quiet(ctx.get(), [](Diagnostic &) { return success(); });
  // MLIR's lexer reads one byte past the text to find its terminating NUL, as
  // files read through MemoryBuffer have; libFuzzer's data has none.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, ctx.get());
  if (!module || failed(verify(*module)))
    return 0;
  for (bool gradients : {false, true}) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(ctx.get());
    mithril::CpuPipelineOptions options;
    options.gradients = gradients;
    options.stopAfter = "linalg";
    if (failed(mithril::buildCpuPipeline(pm, options)))
      __builtin_trap();
    (void)pm.run(*copy);
  }
  return 0;
}
