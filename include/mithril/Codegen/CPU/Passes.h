//===- Passes.h - CPU code generation passes --------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_CPU_PASSES_H
#define MITHRIL_CODEGEN_CPU_PASSES_H

#include "mithril/Codegen/CPU/CpuTarget.h"
#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"

#include "mlir/Pass/Pass.h"

namespace mithril {
#define GEN_PASS_DECL
#include "mithril/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

#endif // MITHRIL_CODEGEN_CPU_PASSES_H
