//===- RewriteSelected.h - patterns on the ops that can match -----*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_SUPPORT_REWRITESELECTED_H
#define MITHRIL_SUPPORT_REWRITESELECTED_H

#include "mlir/IR/Iterators.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mithril {

/// Applies `patterns` to the ops under `root` that `selected` picks, and to
/// the ops the patterns create, instead of to every op. A module-wide greedy
/// rewrite visits and tries to fold each of the lowered module's 10,000 ops
/// (10-20 ms a pass for an MLP training step), while the ops these late
/// passes rewrite are a few hundred at most; with none, nothing runs.
/// (Upstream's lowerings used late in the pipeline, applied this way, are
/// mithril-lower-multi-reductions, -unroll-transfers and
/// -expand-strided-metadata.)
inline mlir::LogicalResult rewriteSelected(mlir::Operation *root,
                                           mlir::RewritePatternSet &&patterns,
                                           llvm::function_ref<bool(mlir::Operation *)> selected) {
  llvm::SmallVector<mlir::Operation *> ops;
  root->walk([&](mlir::Operation *op) {
    if (selected(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return mlir::success();
  mlir::GreedyRewriteConfig config;
  config.setStrictness(mlir::GreedyRewriteStrictness::ExistingAndNewOps);
  bool changed = false;
  mlir::LogicalResult converged = mlir::applyOpPatternsGreedily(
      ops, mlir::FrozenRewritePatternSet(std::move(patterns)), config, &changed);
  // The ops that fed the rewritten ones, now unused, are outside the set the
  // driver may erase: users before producers, so that chains go at once.
  if (changed)
    root->walk<mlir::WalkOrder::PostOrder, mlir::ReverseIterator>([](mlir::Operation *op) {
      if (mlir::isOpTriviallyDead(op))
        op->erase();
    });
  return converged;
}

} // namespace mithril

#endif // MITHRIL_SUPPORT_REWRITESELECTED_H
