//===- Passes.h - conversions out of the mithril dialect --------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CONVERSION_PASSES_H
#define MITHRIL_CONVERSION_PASSES_H

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

namespace mithril {
#define GEN_PASS_REGISTRATION
#include "mithril/Conversion/Passes.h.inc"
} // namespace mithril

#endif // MITHRIL_CONVERSION_PASSES_H
