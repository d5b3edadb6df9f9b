//===- WidenBF16Products.cpp - bf16 weights compiled in, as float32 --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// On a target whose bf16 products widen to float32 (no fast vdpbf16ps, see
// CpuTarget::bf16PairProducts), a weight compiled in is widened once, when
// compiling, instead of in every call's packing or register tile: the
// product is then a float32 one, with float32's kernels (its panels packed
// when compiling, the matrix-vector lanes, swapped operands).
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// `constant` (bf16) converted to float32 when compiling.
static DenseElementsAttr widenedConstant(DenseElementsAttr constant) {
  Type f32 = Float32Type::get(constant.getContext());
  return cast<DenseFPElementsAttr>(constant).mapValues(f32, [](const APFloat &v) {
    APFloat wide = v;
    bool lost = false;
    wide.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    return wide.bitcastToAPInt();
  });
}

/// `value` (bf16) widened to float32 by an element-wise op of its own.
static Value widened(IRRewriter &rewriter, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  MLIRContext *ctx = rewriter.getContext();
  Type f32 = Float32Type::get(ctx);
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), f32);
  SmallVector<AffineMap> maps(2, AffineMap::getMultiDimIdentityMap(type.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{init.getType()}, ValueRange{value}, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &b, Location nested, ValueRange args) {
               linalg::YieldOp::create(b, nested,
                                       ValueRange{arith::ExtFOp::create(b, nested, f32, args[0])});
             })
      ->getResult(0);
}

void Scheduler::widenCompiledInBF16Products(IRRewriter &rewriter, ArrayRef<linalg::LinalgOp> ops) {
  // (AVX2 targets, which widen too, were not measured.)
  if (strategy.registers.bf16DotProduct || strategy.registers.bits < 512)
    return;
  for (linalg::LinalgOp op : ops) {
    auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
    if (!matmul || !matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps())
      continue;
    Value a = matmul.getDpsInputOperand(0)->get(), b = matmul.getDpsInputOperand(1)->get();
    Value c = matmul.getDpsInitOperand(0)->get();
    auto aType = dyn_cast<RankedTensorType>(a.getType());
    if (!aType || !aType.hasStaticShape() || !aType.getElementType().isBF16() ||
        !getElementTypeOrSelf(b.getType()).isBF16() || !getElementTypeOrSelf(c.getType()).isF32())
      continue;
    // Emerald Rapids without AMX, one core, the bf16 MLP 784-512-512-10 with
    // its weights compiled in, alternated in one process: batch 8 0.142 ->
    // 0.112 ms, 12 0.278 -> 0.156, 16 0.225 -> 0.174, 256 2.36 -> 2.26 (the
    // outputs bit-identical); batch 4 0.076 -> 0.092 and 1 0.030 -> 0.089,
    // where the float32 weight is twice the bytes to read.
    if (aType.getDimSize(0) < kWidenCompiledInRows)
      continue;
    // The weight compiled in: a constant, or a transposed one (A, the
    // activations, is widened by an op of its own).
    auto transpose = b.getDefiningOp<linalg::TransposeOp>();
    Value source = transpose ? transpose.getInput() : b;
    DenseElementsAttr constant;
    if (!matchPattern(source, m_Constant(&constant)) || (transpose && !transpose->hasOneUse()))
      continue;
    Location loc = matmul.getLoc();
    rewriter.setInsertionPoint(matmul);
    Value wideB = arith::ConstantOp::create(rewriter, loc, widenedConstant(constant));
    if (transpose) {
      Value init = tensor::EmptyOp::create(
          rewriter, loc, cast<RankedTensorType>(b.getType()).getShape(), rewriter.getF32Type());
      wideB = linalg::TransposeOp::create(rewriter, loc, wideB, init, transpose.getPermutation())
                  ->getResult(0);
    }
    Value wideA = widened(rewriter, loc, a);
    auto product = linalg::MatmulOp::create(rewriter, loc, TypeRange{c.getType()},
                                            ValueRange{wideA, wideB}, ValueRange{c});
    product->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    product->removeAttr(LoweringConfigAttr::opAttrName);
    rewriter.replaceOp(matmul, product->getResults());
    if (transpose && transpose->use_empty())
      rewriter.eraseOp(transpose);
  }
}
