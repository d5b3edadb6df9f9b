//===- GpuReductionsInner.cpp - parallel loops outermost for the GPU ------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// A linalg op whose reduction loops come before its parallel ones (a bias
// gradient: the sum over rows of [rows, features]) lowers to a host loop over
// the reduction around a parallel loop, which the GPU mapping turns into one
// kernel launch per reduction step: on an H200 the GPT example's training step
// launched kernels 256 times each and spent 70 of its 75 ms in launches. With
// the parallel loops first, each such op is one kernel whose threads own
// their outputs and loop over the reduction.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUREDUCTIONSINNER
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct GpuReductionsInnerPass
    : public mithril::impl::MithrilGpuReductionsInnerBase<GpuReductionsInnerPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      // The loops in their new order: the parallel ones, then the others,
      // each group in its own order.
      SmallVector<unsigned> order;
      for (auto [i, it] : llvm::enumerate(iterators))
        if (it == utils::IteratorType::parallel)
          order.push_back(i);
      for (auto [i, it] : llvm::enumerate(iterators))
        if (it != utils::IteratorType::parallel)
          order.push_back(i);
      if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitOpError("mithril-gpu-reductions-inner: cannot put its parallel loops first");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
