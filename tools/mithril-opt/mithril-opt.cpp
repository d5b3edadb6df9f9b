//===- mithril-opt.cpp - the mithril optimizer driver ---------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// MlirOptMain with every upstream dialect and pass and the project's own, and
// --host-cpu to take a named CPU for the host.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Dialect/Mithril/Transforms/BufferizableOpInterfaceImpl.h"
#include "mithril/Dialect/Mithril/Transforms/SliceSubsetModels.h"
#include "mithril/InitAllDialects.h"
#include "mithril/InitAllPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // Before upstream's models of the same interfaces: the first one wins.
  mithril::registerSliceSubsetModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mithril::registerAllDialects(registry);
  mithril::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::registerAllPasses();
  mithril::registerAllPasses();
  static llvm::cl::opt<std::string> hostCpu(
      "host-cpu",
      llvm::cl::desc("Choose kernels as if the host were this x86-64 CPU (LLVM's name: "
                     "znver4, sapphirerapids, ...; then optionally features it lacks or has "
                     "besides LLVM's table: sapphirerapids,-amx-tile) where no target-cpu is "
                     "given: lit's IR tests check the same output on every machine"),
      llvm::cl::init(""));
  auto [input, output] =
      mlir::registerAndParseCLIOptions(argc, argv, "Mithril optimizer driver\n", registry);
  if (!hostCpu.empty() && !mithril::pinHostCpu(hostCpu)) {
    llvm::errs() << "mithril-opt: unknown --host-cpu '" << hostCpu
                 << "' (an x86-64 CPU LLVM knows: znver2, znver4, sapphirerapids, ...; then "
                    "optionally +FEATURE or -FEATURE, comma-separated: sapphirerapids,-amx-tile)\n";
    return EXIT_FAILURE;
  }
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, input, output, registry));
}
