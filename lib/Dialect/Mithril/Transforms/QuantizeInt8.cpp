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
  using MithrilQuantizeInt8Base::MithrilQuantizeInt8Base;

  void runOnOperation() override {
    unsigned index = 0;
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      SmallVector<MatmulOp> products;
      model.getBodyBlock().walk([&](MatmulOp mm) {
        auto lt = mm.getLhs().getType(), rt = mm.getRhs().getType();
        if (isa<FloatType>(lt.getElementType()) && rt.getRank() == 2 && lt.getRank() >= 1 &&
            isParameter(model, mm.getRhs()))
          products.push_back(mm);
      });
      if (observe) {
        addCalibrationOutputs(model, products, index);
        continue;
      }
      for (MatmulOp mm : products) {
        std::optional<double> scale;
        if (!activationScales.empty()) {
          if (index >= activationScales.size()) {
            ++index;
            continue;
          }
          scale = activationScales[index];
          if (!(*scale > 0.0)) {
            mm.emitOpError("mithril-quantize-int8: activation scale ")
                << index << " must be positive, got " << *scale;
            return signalPassFailure();
          }
        }
        quantize(mm, scale);
        ++index;
      }
    }
    if (!observe && !activationScales.empty() && index != activationScales.size()) {
      getOperation().emitError("mithril-quantize-int8: activation-scales has ")
          << activationScales.size() << " values, but the model has " << index
          << " matrix products of weights to quantize";
      signalPassFailure();
    }
  }

  /// The calibration run: each product's max|x| over its activation as an
  /// output named calibration:<i>.
  void addCalibrationOutputs(ModelOp model, ArrayRef<MatmulOp> products, unsigned &index) {
    OutputOp output = model.getOutputOp();
    if (!output)
      return;
    OpBuilder b(output);
    SmallVector<Value> values(output.getValues());
    SmallVector<Attribute> names;
    if (ArrayAttr attrs = model.getResAttrsAttr())
      names.append(attrs.begin(), attrs.end());
    for (MatmulOp mm : products) {
      Location loc = mm.getLoc();
      values.push_back(MaxOp::create(b, loc, AbsOp::create(b, loc, mm.getLhs()),
                                     DenseI64ArrayAttr(), b.getBoolAttr(false)));
      names.push_back(b.getDictionaryAttr({b.getNamedAttr(
          kTerminalNameAttr, b.getStringAttr("calibration:" + std::to_string(index++)))}));
    }
    output.getValuesMutable().assign(values);
    model.setResAttrsAttr(b.getArrayAttr(names));
    model.syncFunctionType();
  }

  /// `mm` on int8 levels; the activation's scale is `staticScale` when
  /// given (its levels clamped to +-127), else computed on each call.
  void quantize(MatmulOp mm, std::optional<double> staticScale) {
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
    auto levels = [&](Value v, Value s, bool clamp) -> Value {
      Value t = DivideOp::create(b, loc, v, s);
      Value magnitude = FloorDivideOp::create(
          b, loc, AddOp::create(b, loc, AbsOp::create(b, loc, t), scalar(0.5)), scalar(1.0));
      // A static scale may not cover values beyond the calibrated range.
      if (clamp)
        magnitude = MinimumOp::create(b, loc, magnitude, scalar(kLevels));
      Value rounded = MultiplyOp::create(b, loc, SignOp::create(b, loc, t), magnitude);
      // Stored in 8 bits, read by the product as 32-bit integers: the
      // lowering's matmul then multiplies the bytes and accumulates in 32
      // bits (vpdpbusd where the CPU has AVX512-VNNI).
      Value bytes = CastOp::create(b, loc, rounded, TypeAttr::get(b.getI8Type()));
      return CastOp::create(b, loc, bytes, TypeAttr::get(i32));
    };
    Value sx = staticScale ? scalar(*staticScale) : scale(x, {});
    Value sw = scale(w, {0}); // [1, N]: one scale per output column
    Value acc = MatmulOp::create(b, loc, levels(x, sx, staticScale.has_value()),
                                 levels(w, sw, /*clamp=*/false));
    Value y = CastOp::create(b, loc, acc, TypeAttr::get(et));
    y = MultiplyOp::create(b, loc, MultiplyOp::create(b, loc, y, sx), sw);
    if (y.getType() != mm.getType())
      y.setType(mm.getType()); // the static sizes shape inference found
    mm.getResult().replaceAllUsesWith(y);
    mm.erase();
  }
};
} // namespace
