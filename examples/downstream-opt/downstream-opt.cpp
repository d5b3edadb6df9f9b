//===- downstream-opt.cpp - a downstream tool using the mithril dialect ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// What another compiler needs to read, verify and transform mithril IR:
// register the dialect (and the passes it wants), then run MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mithril::MithrilDialect, mlir::func::FuncDialect>();
  mithril::registerMithrilTransformsPasses();
  mlir::registerCanonicalizerPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "A downstream tool with the mithril dialect\n", registry));
}
