//===- InitAllDialects.h - register the mithril dialects --------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_INITALLDIALECTS_H
#define MITHRIL_INITALLDIALECTS_H

#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"
#include "mlir/IR/DialectRegistry.h"

namespace mithril {
/// Adds the project's dialects to `registry`. This is all another tool needs
/// to parse and print mithril IR.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<MithrilDialect>();
}
} // namespace mithril

#endif // MITHRIL_INITALLDIALECTS_H
