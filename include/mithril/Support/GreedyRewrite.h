//===- GreedyRewrite.h - greedy rewrites that leave blocks alone --*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_SUPPORT_GREEDYREWRITE_H
#define MITHRIL_SUPPORT_GREEDYREWRITE_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {

/// The configuration of the CPU pipeline's greedy rewrites (its
/// canonicalizations, the schedule's and the elementwise fusion's pattern
/// sets): they fold and erase ops but leave blocks as they are. Region
/// simplification (unreachable blocks, identical blocks merged, unused block
/// arguments) walked every region of the module after each rewrite for
/// nothing the code needs: with it off, the LLVM IR of 34 models and options
/// came out the same (MLPs and CNNs, their SGD and Adam steps, bf16, int8,
/// dynamic shapes, residual and hierarchical models, sgemm and dgemm, one
/// and two threads, AVX-512 and AVX2 code).
inline mlir::GreedyRewriteConfig withoutRegionSimplification() {
  mlir::GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);
  return config;
}

} // namespace mithril

#endif // MITHRIL_SUPPORT_GREEDYREWRITE_H
