//===- MithrilToGPU.h - GPU lowering support --------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The GPU passes moved to mithril/Codegen/GPU/Passes.h; this header stays for
// the code that includes it by its old name.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H
#define MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H

#include "mithril/Codegen/GPU/Passes.h"

#endif // MITHRIL_CONVERSION_MITHRILTOGPU_MITHRILTOGPU_H
