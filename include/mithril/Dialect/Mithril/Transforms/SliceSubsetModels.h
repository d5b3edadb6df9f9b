//===- SliceSubsetModels.h - slices compared term by term first -*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// One-Shot Bufferize asks, for each read of a tensor that a loop writes back,
// whether an insert_slice writes the subset an extract_slice read. Upstream's
// SubsetOpInterface models of the tensor slices answer through
// ValueBoundsConstraintSet, an affine constraint set built for each offset,
// size and stride: a third of the analysis of the bench CNN's training step,
// where nearly every pair is the same SSA values. These models answer that
// case by comparing the terms first and ask the constraint sets only when
// the terms differ.
//
// They must be registered before upstream's (the first model of an
// interface attached to an op is the one it keeps): call this before
// mlir::registerAllDialects. Registered after, upstream's answer the same,
// only slower.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_TRANSFORMS_SLICESUBSETMODELS_H
#define MITHRIL_DIALECT_MITHRIL_TRANSFORMS_SLICESUBSETMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mithril {
void registerSliceSubsetModels(mlir::DialectRegistry &registry);
} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_TRANSFORMS_SLICESUBSETMODELS_H
