//===- mithril-opt.cpp - the mithril optimizer driver ---------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// MlirOptMain with every upstream dialect and pass and the project's own.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/BufferizableOpInterfaceImpl.h"
#include "mithril/Dialect/Mithril/Transforms/SliceSubsetModels.h"
#include "mithril/InitAllDialects.h"
#include "mithril/InitAllPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

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
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Mithril optimizer driver\n", registry));
}
