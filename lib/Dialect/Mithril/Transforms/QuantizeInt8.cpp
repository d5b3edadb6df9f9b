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

#include <algorithm>
#include <cmath>

namespace mithril {
#define GEN_PASS_DEF_MITHRILQUANTIZEINT8
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

namespace {

/// The 127 levels on each side of zero of symmetric int8.
constexpr double kLevels = 127.0;
/// The 255 steps of an unsigned 8-bit activation with a zero point, stored
/// offset by -128 in a signed byte.
constexpr double kUnsignedSteps = 255.0;
constexpr double kUnsignedOffset = 128.0;

/// A float constant, or the 2-D transpose of one: weights compiled in
/// (constant_keys) are quantized once, when the model is compiled.
ConstantOp constantWeight(Value v, bool &transposed) {
  transposed = false;
  if (auto transpose = v.getDefiningOp<TransposeOp>()) {
    std::optional<ArrayRef<int64_t>> perm = transpose.getPermutation();
    if (perm && !(perm->size() == 2 && (*perm)[0] == 1 && (*perm)[1] == 0))
      return {};
    v = transpose.getInput();
    transposed = true;
  }
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant || !isa<DenseElementsAttr>(constant.getValue()) ||
      !isa<FloatType>(cast<ShapedType>(constant.getType()).getElementType()))
    return {};
  return constant;
}

bool isParameter(ModelOp model, Value v) {
  bool transposed;
  if (constantWeight(v, transposed))
    return true;
  if (auto transpose = v.getDefiningOp<TransposeOp>())
    v = transpose.getInput();
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &model.getBodyBlock() &&
         model.getInputKind(arg.getArgNumber()) == InputKind::Param;
}

/// The levels and per-column scales of a constant weight `w` ([K, N] as the
/// product reads it), computed as the ops of a quantization at run time
/// would compute them, in the element type `Real`.
template <typename Real>
void quantizeColumns(ArrayRef<Real> w, int64_t rows, int64_t cols, bool transposed,
                     SmallVectorImpl<int8_t> &levels, SmallVectorImpl<Real> &scales) {
  auto at = [&](int64_t k, int64_t n) { return transposed ? w[n * rows + k] : w[k * cols + n]; };
  scales.assign(cols, Real(0));
  for (int64_t n = 0; n < cols; ++n) {
    Real amax = 0;
    for (int64_t k = 0; k < rows; ++k)
      amax = std::max(amax, std::abs(at(k, n)));
    scales[n] = std::max(amax, Real(1e-30)) / Real(kLevels);
  }
  levels.resize(rows * cols);
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t n = 0; n < cols; ++n) {
      Real t = at(k, n) / scales[n];
      Real magnitude = std::floor(std::abs(t) + Real(0.5));
      levels[k * cols + n] = static_cast<int8_t>(t < 0 ? -magnitude : magnitude);
    }
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
        std::optional<std::pair<double, double>> range;
        if (!activationRanges.empty()) {
          if (2 * index + 1 >= activationRanges.size()) {
            ++index;
            continue;
          }
          range = {activationRanges[2 * index], activationRanges[2 * index + 1]};
          if (!(range->first <= range->second)) {
            mm.emitOpError("mithril-quantize-int8: activation range ")
                << index << " must have lo <= hi, got [" << range->first << ", " << range->second
                << "]";
            return signalPassFailure();
          }
        } else if (!activationScales.empty()) {
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
        quantize(mm, scale, range);
        ++index;
      }
    }
    if (observe)
      return;
    if (!activationScales.empty() && !activationRanges.empty()) {
      getOperation().emitError("mithril-quantize-int8: give activation-scales or "
                               "activation-ranges, not both");
      return signalPassFailure();
    }
    if (!activationScales.empty() && index != activationScales.size()) {
      getOperation().emitError("mithril-quantize-int8: activation-scales has ")
          << activationScales.size() << " values, but the model has " << index
          << " matrix products of weights to quantize";
      signalPassFailure();
    }
    if (!activationRanges.empty() && 2 * index != activationRanges.size()) {
      getOperation().emitError("mithril-quantize-int8: activation-ranges has ")
          << activationRanges.size() << " values, but the model has " << index
          << " matrix products of weights to quantize (a lo, hi pair each)";
      signalPassFailure();
    }
  }

  /// The calibration run: each product's activation range, [min x, max x],
  /// as an output named calibration:<i>.
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
      Value x = mm.getLhs();
      Value lo = ReshapeOp::create(
          b, loc, MinOp::create(b, loc, x, DenseI64ArrayAttr(), b.getBoolAttr(false)),
          b.getDenseI64ArrayAttr({1}));
      Value hi = ReshapeOp::create(
          b, loc, MaxOp::create(b, loc, x, DenseI64ArrayAttr(), b.getBoolAttr(false)),
          b.getDenseI64ArrayAttr({1}));
      values.push_back(ConcatOp::create(b, loc, ValueRange{lo, hi}, b.getI64IntegerAttr(0)));
      names.push_back(b.getDictionaryAttr({b.getNamedAttr(
          kTerminalNameAttr, b.getStringAttr("calibration:" + std::to_string(index++)))}));
    }
    output.getValuesMutable().assign(values);
    model.setResAttrsAttr(b.getArrayAttr(names));
    model.syncFunctionType();
  }

  /// A constant weight's scales ([1, N]), levels (i32 of i8 constants) and
  /// the levels' column sums ([1, N] i32), computed now; false for a weight
  /// given at run time.
  static bool compiledIn(OpBuilder &b, Location loc, Value w, Type et, Value &scales,
                         Value &levelsI32, Value &columnSums) {
    bool transposed;
    ConstantOp constant = constantWeight(w, transposed);
    auto type = cast<RankedTensorType>(w.getType());
    if (!constant || !type.hasStaticShape() || !(et.isF32() || et.isF64()) ||
        cast<ShapedType>(constant.getType()).getElementType() != et)
      return false;
    auto data = cast<DenseElementsAttr>(constant.getValue());
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    SmallVector<int8_t> levels;
    auto scaleType = RankedTensorType::get({1, cols}, et);
    DenseElementsAttr scaleAttr;
    if (et.isF32()) {
      SmallVector<float> values(data.getValues<float>()), perColumn;
      quantizeColumns<float>(values, rows, cols, transposed, levels, perColumn);
      scaleAttr = DenseElementsAttr::get(scaleType, ArrayRef<float>(perColumn));
    } else {
      SmallVector<double> values(data.getValues<double>()), perColumn;
      quantizeColumns<double>(values, rows, cols, transposed, levels, perColumn);
      scaleAttr = DenseElementsAttr::get(scaleType, ArrayRef<double>(perColumn));
    }
    scales = ConstantOp::create(b, loc, scaleAttr);
    auto levelType = RankedTensorType::get({rows, cols}, b.getI8Type());
    Value bytes =
        ConstantOp::create(b, loc, DenseElementsAttr::get(levelType, ArrayRef<int8_t>(levels)));
    levelsI32 = CastOp::create(b, loc, bytes, TypeAttr::get(b.getI32Type()));
    SmallVector<int32_t> sums(cols, 0);
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t n = 0; n < cols; ++n)
        sums[n] += levels[k * cols + n];
    columnSums =
        ConstantOp::create(b, loc,
                           DenseElementsAttr::get(RankedTensorType::get({1, cols}, b.getI32Type()),
                                                  ArrayRef<int32_t>(sums)));
    return true;
  }

  /// `mm` on int8 levels; the activation's scale is `staticScale` when
  /// given (symmetric, its levels clamped to +-127), else its range is
  /// `staticRange` when given or computed on each call.
  void quantize(MatmulOp mm, std::optional<double> staticScale,
                std::optional<std::pair<double, double>> staticRange) {
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
    Value sw, wLevels, wSums;
    if (!compiledIn(b, loc, w, et, sw, wLevels, wSums)) {
      sw = scale(w, {0}); // [1, N]: one scale per output column
      wLevels = levels(w, sw, /*clamp=*/false);
    }
    Value sx, acc;
    if (staticScale) {
      sx = scalar(*staticScale);
      acc = MatmulOp::create(b, loc, levels(x, sx, /*clamp=*/true), wLevels);
    } else {
      // The activation over its range [lo, hi] (zero included), computed on
      // each call as ONNX Runtime's DynamicQuantizeLinear does or fixed by
      // calibration as its static QuantizeLinear, in unsigned 8 bits with a
      // zero point, q = clamp(round(x / s) + z, 0, 255), s = (hi - lo) / 255,
      // z = round(-lo / s): a ReLU's output gets all 255 steps, where
      // symmetric levels would leave the negative half unused (values beyond
      // a calibrated range clamp). q - 128 is stored in a signed byte, so the
      // product is the same integer matmul; sum (q - z) w = sum (q - 128) w
      // + (128 - z) sum w.
      Value lo, hi;
      if (staticRange) {
        lo = scalar(std::min(staticRange->first, 0.0));
        hi = scalar(std::max(staticRange->second, 0.0));
      } else {
        lo = MinimumOp::create(
            b, loc, MinOp::create(b, loc, x, DenseI64ArrayAttr(), b.getBoolAttr(false)), scalar(0));
        hi = MaximumOp::create(
            b, loc, MaxOp::create(b, loc, x, DenseI64ArrayAttr(), b.getBoolAttr(false)), scalar(0));
      }
      sx = DivideOp::create(
          b, loc, MaximumOp::create(b, loc, SubtractOp::create(b, loc, hi, lo), scalar(1e-30)),
          scalar(kUnsignedSteps));
      // round(v) = floor(v + 1/2): the steps are never negative here.
      auto round = [&](Value v) {
        return FloorDivideOp::create(b, loc, AddOp::create(b, loc, v, scalar(0.5)), scalar(1.0));
      };
      Value zero = round(DivideOp::create(b, loc, SubtractOp::create(b, loc, scalar(0), lo), sx));
      Value q = AddOp::create(b, loc, round(DivideOp::create(b, loc, x, sx)), zero);
      q = MinimumOp::create(b, loc, MaximumOp::create(b, loc, q, scalar(0)),
                            scalar(kUnsignedSteps));
      Value bytes = CastOp::create(b, loc, SubtractOp::create(b, loc, q, scalar(kUnsignedOffset)),
                                   TypeAttr::get(b.getI8Type()));
      acc = MatmulOp::create(b, loc, CastOp::create(b, loc, bytes, TypeAttr::get(i32)), wLevels);
      if (!wSums)
        wSums = SumOp::create(b, loc, wLevels, b.getDenseI64ArrayAttr({0}), b.getBoolAttr(true));
      Value shift = CastOp::create(
          b, loc, SubtractOp::create(b, loc, scalar(kUnsignedOffset), zero), TypeAttr::get(i32));
      acc = AddOp::create(b, loc, acc, MultiplyOp::create(b, loc, wSums, shift));
    }
    Value y = CastOp::create(b, loc, acc, TypeAttr::get(et));
    y = MultiplyOp::create(b, loc, MultiplyOp::create(b, loc, y, sx), sw);
    if (y.getType() != mm.getType())
      y.setType(mm.getType()); // the static sizes shape inference found
    mm.getResult().replaceAllUsesWith(y);
    mm.erase();
  }
};
} // namespace
