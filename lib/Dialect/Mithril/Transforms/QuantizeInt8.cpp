//===- QuantizeInt8.cpp - int8 matrix products of weights ----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The quantization is written in mithril ops (reductions, divisions,
// floor, casts, an integer matmul), so every target and schedule that
// lowers those lowers it, and the numbers are the integer product's exactly.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILQUANTIZEINT8
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

/// The 127 levels on each side of zero of symmetric int8.
constexpr double kLevels = 127.0;

bool isParameter(ModelOp model, Value v) {
  if (auto transpose = v.getDefiningOp<TransposeOp>())
    v = transpose.getInput();
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &model.getBodyBlock() &&
         model.getInputKind(arg.getArgNumber()) == InputKind::Param;
}

struct QuantizeInt8Pass : public mithril::impl::MithrilQuantizeInt8Base<QuantizeInt8Pass> {
  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      SmallVector<MatmulOp> products;
      model.getBodyBlock().walk([&](MatmulOp mm) {
        auto lt = mm.getLhs().getType(), rt = mm.getRhs().getType();
        if (isa<FloatType>(lt.getElementType()) && rt.getRank() == 2 && lt.getRank() >= 1 &&
            isParameter(model, mm.getRhs()))
          products.push_back(mm);
      });
      for (MatmulOp mm : products)
        quantize(mm);
    }
  }

  void quantize(MatmulOp mm) {
    OpBuilder b(mm);
    Location loc = mm.getLoc();
    Value x = mm.getLhs(), w = mm.getRhs();
    Type et = cast<RankedTensorType>(x.getType()).getElementType();
    Type i32 = b.getI32Type();
    auto scalar = [&](double v) { return scalarConstant(b, loc, et, v); };
    // s = max(max|v| over axes, tiny) / 127: an all-zero tensor keeps s > 0.
    auto scale = [&](Value v, ArrayRef<int64_t> axes) -> Value {
      Value amax = MaxOp::create(b, loc, AbsOp::create(b, loc, v),
                                 axes.empty() ? DenseI64ArrayAttr() : b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(!axes.empty()));
      Value floor = MaximumOp::create(b, loc, amax, scalar(1e-30));
      return DivideOp::create(b, loc, floor, scalar(kLevels));
    };
    // round(v / s), half away from zero: sign(t) * floor(|t| + 1/2).
    auto levels = [&](Value v, Value s) -> Value {
      Value t = DivideOp::create(b, loc, v, s);
      Value magnitude = FloorDivideOp::create(
          b, loc, AddOp::create(b, loc, AbsOp::create(b, loc, t), scalar(0.5)), scalar(1.0));
      Value rounded = MultiplyOp::create(b, loc, SignOp::create(b, loc, t), magnitude);
      // Stored in 8 bits, read by the product as 32-bit integers: the
      // lowering's matmul then multiplies the bytes and accumulates in 32
      // bits (vpdpbusd where the CPU has AVX512-VNNI).
      Value bytes = CastOp::create(b, loc, rounded, TypeAttr::get(b.getI8Type()));
      return CastOp::create(b, loc, bytes, TypeAttr::get(i32));
    };
    Value sx = scale(x, {});
    Value sw = scale(w, {0}); // [1, N]: one scale per output column
    Value acc = MatmulOp::create(b, loc, levels(x, sx), levels(w, sw));
    Value y = CastOp::create(b, loc, acc, TypeAttr::get(et));
    y = MultiplyOp::create(b, loc, MultiplyOp::create(b, loc, y, sx), sw);
    if (y.getType() != mm.getType())
      y.setType(mm.getType()); // the static sizes shape inference found
    mm.getResult().replaceAllUsesWith(y);
    mm.erase();
  }
};
} // namespace
