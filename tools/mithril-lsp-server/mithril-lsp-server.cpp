//===- mithril-lsp-server.cpp - language server for mithril IR ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Editors get diagnostics, hover and go-to-definition on .mlir files that
// use the mithril dialect alongside every upstream dialect.
//
//===----------------------------------------------------------------------===//

#include "mithril/InitAllDialects.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mithril::registerAllDialects(registry);
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry));
}
