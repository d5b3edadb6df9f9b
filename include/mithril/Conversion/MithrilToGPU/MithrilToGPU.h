//===- MithrilToGPU.h - GPU lowering support --------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H
#define MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mithril {
#define GEN_PASS_DECL_MITHRILGPUHOSTMEMORY
#define GEN_PASS_DECL_MITHRILGPUMERGEMODULES
#define GEN_PASS_DECL_MITHRILGPUSERIALKERNELS
#define GEN_PASS_DECL_MITHRILGPUMAPFORALL
#define GEN_PASS_DECL_MITHRILGPUTILECONTRACTIONS
#include "mithril/Conversion/Passes.h.inc"
} // namespace mithril

#endif // MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H
