//===- SwapWeightProducts.cpp - a few rows by a large weight, transposed --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// C = A * W^T with a weight much larger than A (a Linear layer of a training
// batch) computed as C = (W * A^T)^T: the packed kernel copies its right
// operand into panels, and that operand is then A, not the weight.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// `value` transposed ([r, c] -> [c, r]) into a new tensor.
static Value transposed(IRRewriter &rewriter, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(rewriter, loc,
                                       ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
                                       type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, value, init, ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

void Scheduler::swapWeightProducts(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  for (linalg::LinalgOp op : ops) {
    auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!matmul || !matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps())
      continue;
    auto transpose = matmul.getDpsInputOperand(1)->get().getDefiningOp<linalg::TransposeOp>();
    if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      continue;
    // Float products of one type (bf16 and int8 have their own forms).
    Value a = matmul.getDpsInputOperand(0)->get(), weight = transpose.getInput();
    Value c = matmul.getDpsInitOperand(0)->get();
    Type et = getElementTypeOrSelf(c.getType());
    if (!isa<Float32Type, Float64Type>(et) || getElementTypeOrSelf(a.getType()) != et ||
        getElementTypeOrSelf(weight.getType()) != et)
      continue;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      continue;
    int64_t rows = ranges[0], columns = ranges[1], depth = ranges[2];
    // The weight at least kSwapWeightRatio times A: packing it cost more
    // than packing A and transposing the (rows x columns) result back.
    if (columns < kSwapWeightRatio * rows)
      continue;
    // On several threads only while A^T stays a small part of the L2
    // (measured: the MLP at batch 256 on two threads, A^T 800 KiB, was 10%
    // slower swapped; at batch 64, 200 KiB, it gains).
    int64_t packedBytes = rows * depth * static_cast<int64_t>(et.getIntOrFloatBitWidth() / 8);
    if (strategy.threads > 1 && packedBytes > strategy.l2Bytes / 4)
      continue;
    Location loc = matmul.getLoc();
    rewriter.setInsertionPoint(matmul);
    Value aT = transposed(rewriter, loc, a);
    // C^T starts from what C started from: zeros, or C transposed.
    // (A fill of its own, into an alloc_tensor as unshareFills makes them:
    // two equal fills of empty tensors would merge, and bufferization copy
    // the shared one.)
    Value cT;
    auto fill = c.getDefiningOp<linalg::FillOp>();
    if (fill) {
      Value dest = bufferization::AllocTensorOp::create(
          rewriter, loc, RankedTensorType::get({columns, rows}, et), ValueRange{});
      cT = linalg::FillOp::create(rewriter, loc, fill.getInputs(), dest)->getResult(0);
    } else {
      cT = transposed(rewriter, loc, c);
    }
    auto swapped = linalg::MatmulOp::create(rewriter, loc, TypeRange{cT.getType()},
                                            ValueRange{weight, aT}, ValueRange{cT});
    rewriter.replaceOp(matmul, transposed(rewriter, loc, swapped->getResult(0)));
    if (transpose->use_empty())
      rewriter.eraseOp(transpose);
    if (fill && fill->use_empty())
      rewriter.eraseOp(fill);
  }
}
