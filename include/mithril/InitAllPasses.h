//===- InitAllPasses.h - register the mithril passes ------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_INITALLPASSES_H
#define MITHRIL_INITALLPASSES_H

#include "mithril/Codegen/CPU/Passes.h"
#include "mithril/Codegen/GPU/Passes.h"
#include "mithril/Conversion/Passes.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"
#include "mithril/Pipelines/Pipelines.h"

namespace mithril {
/// Registers the project's passes and named pipelines with the global
/// registry, so that `-pass-pipeline` strings can name them.
inline void registerAllPasses() {
  registerMithrilTransformsPasses();
  registerMithrilConversionPasses();
  registerMithrilCodegenCPUPasses();
  registerMithrilCodegenGPUPasses();
  registerPipelines();
}
} // namespace mithril

#endif // MITHRIL_INITALLPASSES_H
