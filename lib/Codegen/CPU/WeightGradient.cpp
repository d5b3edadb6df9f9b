//===- WeightGradient.cpp - bf16 convolution weight gradients as vdpbf16ps ===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

void Scheduler::lowerBF16WeightGradTiles(IRRewriter &rewriter, ModuleOp module) const {
  SmallVector<linalg::GenericOp> tiles;
  module.walk([&](linalg::GenericOp op) {
    if (hasKernel(op, CpuKernel::ConvFlatWeightGrad) && op.hasPureTensorSemantics() &&
        op.getNumLoops() == 8 && op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
        op->getParentOfType<scf::ForOp>() &&
        getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()).isBF16() &&
        getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType()).isBF16())
      tiles.push_back(op);
  });
  constexpr int64_t lanes = kConvFlatLanes;
  for (linalg::GenericOp op : tiles) {
    // Loops f, c, kh, kw, lane, n / 2, block, pair: one kernel position,
    // image pair and block of lanes per tile.
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[2] != 1 || ranges[3] != 1 ||
        ranges[4] != lanes || ranges[5] != 1 || ranges[6] != 1 || ranges[7] != 2)
      continue;
    int64_t rows = ranges[0], cols = ranges[1];
    Value input = op.getDpsInputOperand(0)->get(), grad = op.getDpsInputOperand(1)->get();
    Value init = op.getDpsInitOperand(0)->get();
    auto shapeIs = [](Value v, ArrayRef<int64_t> shape) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      return type && type.getShape() == shape;
    };
    // The tiles of the interleaved input [1, c, 16, 2], of the interleaved
    // output gradient [1, f, 1, 16, 2] and of the partial sums [f, c, 1, 1,
    // 16].
    if (!shapeIs(input, {1, cols, lanes, 2}) || !shapeIs(grad, {1, rows, 1, lanes, 2}) ||
        !shapeIs(init, {rows, cols, 1, 1, lanes}))
      continue;
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
    // Each channel's 16 lanes x 2 images: 32 contiguous bf16.
    auto channelsOf = [&](Value tile, SmallVector<ReassociationIndices> groups, int64_t count) {
      Value flat = tensor::CollapseShapeOp::create(rewriter, loc, tile, groups);
      return readWholeTile(rewriter, loc, flat, VectorType::get({count, 2 * lanes}, bf16));
    };
    Value x = channelsOf(input, {{0, 1}, {2, 3}}, cols);
    Value g = channelsOf(grad, {{0, 1, 2}, {3, 4}}, rows);
    // The partial sums read and written whole on the init, so that the
    // reduction loops carry them in registers.
    auto sumsType = VectorType::get({rows, cols, 1, 1, lanes}, f32);
    auto flatSums = VectorType::get({rows, cols, lanes}, f32);
    Value sums = vector::ShapeCastOp::create(rewriter, loc, flatSums,
                                             readWholeTile(rewriter, loc, init, sumsType));
    sums = addBF16DotProducts(rewriter, loc, sums, g, x);
    Value written = writeWholeTile(
        rewriter, loc, vector::ShapeCastOp::create(rewriter, loc, sumsType, sums), init);
    rewriter.replaceOp(op, written);
  }
}
