//===- Passes.h - mithril dialect transformations ---------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_H
#define MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_H

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mithril {

#define GEN_PASS_DECL
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"

/// Adds the patterns of mithril-decompose.
/// The mithril-decompose patterns; without `layerNorm`, layer_norm stays
/// (mithril-autodiff differentiates it as one op).
void populateMithrilDecomposePatterns(mlir::RewritePatternSet &patterns, bool layerNorm = true);

/// Parses `name:4x?x8` into a terminal name and a shape (`?` is dynamic).
llvm::FailureOr<std::pair<std::string, llvm::SmallVector<int64_t>>>
parseShapeSpec(llvm::StringRef spec);

/// Infers the shapes of `model` given shapes for some of its inputs; see
/// mithril-infer-shapes (`dynamicData` is its dynamic-data option).
llvm::LogicalResult
inferModelShapes(ModelOp model,
                 llvm::ArrayRef<std::pair<std::string, llvm::SmallVector<int64_t>>> given,
                 bool dynamicData = false);

/// The distribution over ranks of each output of `model` when the inputs at
/// `batchedInputs` are split along axis 0 (data parallelism; see
/// BatchSharding.h). The model's shapes must be inferred with those axes
/// dynamic and every other size static. An op that cannot run on batch
/// shards is an error on that op naming it and why.
llvm::FailureOr<llvm::SmallVector<BatchSharding>>
analyzeBatchSharding(ModelOp model, llvm::ArrayRef<unsigned> batchedInputs);

} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_TRANSFORMS_PASSES_H
