//===- Passes.h - GPU code generation passes --------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_GPU_PASSES_H
#define MITHRIL_CODEGEN_GPU_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mithril {
#define GEN_PASS_DECL
#include "mithril/Codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

#endif // MITHRIL_CODEGEN_GPU_PASSES_H
