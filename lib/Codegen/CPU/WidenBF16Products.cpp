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
#include "mithril/Support/BFloat16.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace mithril;
using namespace mithril::cpu;
using namespace mithril::cpu::detail;

/// `constant` (bf16) as float32, widened on its bits (exact; a splat stays
/// one element): an APFloat per element took tens of milliseconds for a
/// large weight.
static DenseElementsAttr widenedConstant(DenseElementsAttr constant) {
  ArrayRef<char> raw = constant.getRawData();
  std::vector<uint32_t> wide(raw.size() / sizeof(uint16_t));
  for (size_t i = 0; i < wide.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + i * sizeof(bits), sizeof(bits));
    wide[i] = floatBitsFromBFloat16(bits);
  }
  auto type =
      cast<RankedTensorType>(constant.getType()).clone(Float32Type::get(constant.getContext()));
  return DenseElementsAttr::getFromRawBuffer(
      type,
      ArrayRef<char>(reinterpret_cast<const char *>(wide.data()), wide.size() * sizeof(uint32_t)));
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
    // The weight compiled in: by now a constant W^T (the elementwise fusion
    // folds its transpose when compiling).
    DenseElementsAttr constant;
    if (!matchPattern(b, m_Constant(&constant)))
      continue;
    Location loc = matmul.getLoc();
    rewriter.setInsertionPoint(matmul);
    Value wideB = arith::ConstantOp::create(rewriter, loc, widenedConstant(constant));
    Value wideA = widenElements(rewriter, loc, a, rewriter.getF32Type());
    auto product = linalg::MatmulOp::create(rewriter, loc, TypeRange{c.getType()},
                                            ValueRange{wideA, wideB}, ValueRange{c});
    product->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    product->removeAttr(LoweringConfigAttr::opAttrName);
    rewriter.replaceOp(matmul, product->getResults());
  }
}
