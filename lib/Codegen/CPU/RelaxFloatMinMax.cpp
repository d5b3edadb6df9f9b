//===- RelaxFloatMinMax.cpp - float min and max without zero ordering -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILRELAXFLOATMINMAX
#include "mithril/Codegen/CPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct RelaxFloatMinMaxPass
    : public mithril::impl::MithrilRelaxFloatMinMaxBase<RelaxFloatMinMaxPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The op's flags (none when unset) and nsz.
    auto relax = [&](Operation *op) {
      auto fastMath = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlagsAttr flags = fastMath.getFastMathFlagsAttr();
      arith::FastMathFlags value = flags ? flags.getValue() : arith::FastMathFlags::none;
      op->setAttr(fastMath.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(ctx, value | arith::FastMathFlags::nsz));
    };
    getOperation()->walk([&](Operation *op) {
      if (isa<arith::MinimumFOp, arith::MaximumFOp>(op))
        return relax(op);
      if (auto reduction = dyn_cast<vector::ReductionOp>(op))
        if (reduction.getKind() == vector::CombiningKind::MINIMUMF ||
            reduction.getKind() == vector::CombiningKind::MAXIMUMF)
          relax(op);
    });
  }
};
} // namespace
