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
#include <cstring>
#include <vector>

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

/// Whether `transpose` swaps the two dimensions of a matrix.
bool isMatrixTranspose(TransposeOp transpose) {
  return transpose.getType().getRank() == 2 &&
         transpose.getPermutationOrDefault() == ArrayRef<int64_t>{1, 0};
}

/// A float constant, or the 2-D transpose of one, either of them possibly
/// through a reshape (a convolution's weight read as a matrix): weights
/// compiled in (constant_keys) are quantized once, when the model is
/// compiled. A reshape keeps the data's order, so the constant's data is the
/// matrix's (or its transpose's) in row-major order.
ConstantOp constantWeight(Value v, bool &transposed) {
  transposed = false;
  if (auto transpose = v.getDefiningOp<TransposeOp>()) {
    if (!isMatrixTranspose(transpose))
      return {};
    v = transpose.getInput();
    transposed = true;
  }
  if (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
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
  SmallVector<Real> inverses;
  for (Real s : scales)
    inverses.push_back(Real(1) / s);
  levels.resize(rows * cols);
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t n = 0; n < cols; ++n) {
      Real t = at(k, n) * inverses[n];
      Real magnitude = std::floor(std::abs(t) + Real(0.5));
      levels[k * cols + n] = static_cast<int8_t>(t < 0 ? -magnitude : magnitude);
    }
}

/// The shortest window (C KH KW) a convolution is quantized for. A shorter
/// one is an image model's first layer (1 or 3 channels): its product is a
/// few multiply-adds per output over 8-bit rows padded to whole dot
/// products, and int8 made it slower than float32's direct kernel (the bench
/// CNN's 3 x 3 over 1 channel: 3.2 against 0.1 ms at batch 16 on Zen 4), as
/// well as less precise where precision matters most.
constexpr int64_t kMinConvWindow = 32;

/// A convolution this pass takes to int8: 1-D or 2-D, ungrouped, of a
/// weight, with static channels, spatial sizes and kernel (the batch may be
/// dynamic), and windows of at least kMinConvWindow elements.
template <typename ConvOp> bool isQuantizableConv(ModelOp model, ConvOp conv) {
  auto input = conv.getInput().getType();
  auto weight = conv.getWeight().getType();
  int64_t rank = weight.getRank();
  auto staticBeyondBatch = [&](RankedTensorType t) {
    return t.getRank() == rank && llvm::none_of(t.getShape().drop_front(), ShapedType::isDynamic);
  };
  return conv.getGroups() == 1 && staticBeyondBatch(input) && weight.hasStaticShape() &&
         staticBeyondBatch(conv.getType()) &&
         weight.getNumElements() / weight.getDimSize(0) >= kMinConvWindow &&
         isParameter(model, conv.getWeight());
}

/// The activation a quantized op reads: a product's left operand, a
/// convolution's input.
Value activationOf(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op))
    return mm.getLhs();
  if (auto conv = dyn_cast<Conv1DOp>(op))
    return conv.getInput();
  return cast<Conv2DOp>(op).getInput();
}

/// The mithril ops of one int8 product, in the element type `et` of the
/// float model.
class Int8Builder {
public:
  Int8Builder(OpBuilder &b, Location loc, Type et) : b(b), loc(loc), et(et) {}

  Value scalar(double v) { return scalarConstant(b, loc, et, v); }

  /// s = max(max|v| over axes, tiny) / 127: an all-zero tensor keeps s > 0.
  Value scale(Value v, ArrayRef<int64_t> axes) {
    Value amax = MaxOp::create(b, loc, AbsOp::create(b, loc, v),
                               axes.empty() ? DenseI64ArrayAttr() : b.getDenseI64ArrayAttr(axes),
                               b.getBoolAttr(!axes.empty()));
    Value floor = MaximumOp::create(b, loc, amax, scalar(1e-30));
    return DivideOp::create(b, loc, floor, scalar(kLevels));
  }

  /// The levels of `v` at scales `s` (a weight's, one per row or column):
  /// round(v * (1 / s)) as roundedLevels rounds, the inverse computed once
  /// per scale as for activations (a division of each weight element was
  /// most of the pass computing them, 0.1 ms of the int8 MLP 784-512-512-10
  /// with its weights passed, Emerald Rapids).
  Value levelBytes(Value v, Value s, bool clamp) {
    return roundedLevels(MultiplyOp::create(b, loc, v, reciprocal(s)), clamp);
  }

  /// 1 / s, once: an activation's levels multiply by it. A division of each
  /// element took a third of an int8 MLP's time on one thread (vdivps, a
  /// 512-bit division per 16 elements every 8-16 cycles; fbgemm quantizes by
  /// the inverse scale too); a level may differ from x / s's where x / s is
  /// within a rounding of a half step (about one in a million random weights).
  Value reciprocal(Value s) { return DivideOp::create(b, loc, scalar(1.0), s); }

  /// round(t), half away from zero, in a signed byte: t + 1/2 with t's sign,
  /// truncated by the cast, the same number as sign(t) * floor(|t| + 1/2)
  /// (t - 1/2 is -(|t| + 1/2) exactly) in a compare, a select and an add
  /// (the sign and the floor took twice the vector ops of a weight's levels,
  /// the pass bound by them).
  Value roundedLevels(Value t, bool clamp) {
    // A static scale may not cover values beyond the calibrated range.
    if (clamp)
      t = MinimumOp::create(b, loc, MaximumOp::create(b, loc, t, scalar(-kLevels)),
                            scalar(kLevels));
    Value half =
        WhereOp::create(b, loc, LessOp::create(b, loc, t, scalar(0.0)), scalar(-0.5), scalar(0.5));
    return CastOp::create(b, loc, AddOp::create(b, loc, t, half), TypeAttr::get(b.getI8Type()));
  }

  /// Bytes read by the product as 32-bit integers: the lowering's matmul
  /// then multiplies the bytes and accumulates in 32 bits (vpdpbusd where
  /// the CPU has AVX512-VNNI).
  Value wide(Value bytes) { return CastOp::create(b, loc, bytes, TypeAttr::get(b.getI32Type())); }

  struct Weight {
    Value scales;     // [1, N]
    Value levels;     // [K, N] i32 of i8 levels
    Value columnSums; // [1, N] i32, or null until the zero point needs them
    Value rowLevels;  // [N, K] i32 levels where they are computed so, or null
  };

  /// The weight `w` ([K, N] as the product reads it) per column in
  /// symmetric int8: computed now when it is a constant, else by ops.
  Weight weight(Value w) {
    PartLocation part(*this, "quantize weight");
    Weight q;
    if (compiledIn(w, q))
      return q;
    // A Linear layer's weight [N, K], read by the product transposed, is
    // quantized in its own layout: each output's scale is a reduction along
    // a contiguous row and its levels a pass over the rows, and only the
    // bytes are transposed (or read in place by the schedule). As [K, N]
    // the transpose of the float weight was materialized for the reduction
    // and the levels, 0.27 of the int8 MLP 784-512-512-10's 0.72 ms a call at
    // batch 16 on one Emerald Rapids core. The levels and scales are the
    // same numbers either way.
    if (auto transpose = w.getDefiningOp<TransposeOp>();
        transpose && isMatrixTranspose(transpose)) {
      Value rows = transpose.getInput();
      Value perRow = scale(rows, {1}); // [N, 1]
      Value bytes = levelBytes(rows, perRow, /*clamp=*/false);
      q.rowLevels = wide(bytes);
      q.levels = wide(TransposeOp::create(b, loc, bytes, b.getDenseI64ArrayAttr({1, 0})));
      q.scales = ReshapeOp::create(b, loc, perRow, b.getDenseI64ArrayAttr({1, -1}));
      return q;
    }
    q.scales = scale(w, {0}); // [1, N]: one scale per output column
    q.levels = wide(levelBytes(w, q.scales, /*clamp=*/false));
    return q;
  }

  struct Activation {
    Value bytes; // x's levels, q - 128 (or symmetric levels) in a signed byte
    Value scale;
    Value zero; // the zero point z (null for symmetric levels)
  };

  /// The activation per tensor: symmetric levels with `staticScale` when
  /// given (clamped to +-127), else unsigned 8 bits with a zero point over
  /// `staticRange` when given or over x's range computed on each call.
  Activation activation(Value x, std::optional<double> staticScale,
                        std::optional<std::pair<double, double>> staticRange) {
    PartLocation part(*this, "quantize input");
    Activation a;
    if (staticScale) {
      a.scale = scalar(*staticScale);
      a.bytes = roundedLevels(MultiplyOp::create(b, loc, x, reciprocal(a.scale)), /*clamp=*/true);
      return a;
    }
    // Over [lo, hi] (zero included), computed on each call as ONNX Runtime's
    // DynamicQuantizeLinear does or fixed by calibration as its static
    // QuantizeLinear, in unsigned 8 bits with a zero point, q = clamp(round(x
    // * (1 / s)) + z, 0, 255), s = (hi - lo) / 255, z = round(-lo / s): a ReLU's
    // output gets all 255 steps, where symmetric levels would leave the
    // negative half unused (values beyond a calibrated range clamp). q - 128
    // is stored in a signed byte, so the product is the same integer matmul;
    // sum (q - z) w = sum (q - 128) w + (128 - z) sum w.
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
    a.scale = DivideOp::create(
        b, loc, MaximumOp::create(b, loc, SubtractOp::create(b, loc, hi, lo), scalar(1e-30)),
        scalar(kUnsignedSteps));
    // round(v) = floor(v + 1/2): the steps are never negative here.
    auto round = [&](Value v) {
      return FloorDivideOp::create(b, loc, AddOp::create(b, loc, v, scalar(0.5)), scalar(1.0));
    };
    a.zero = round(DivideOp::create(b, loc, SubtractOp::create(b, loc, scalar(0), lo), a.scale));
    Value q =
        AddOp::create(b, loc, round(MultiplyOp::create(b, loc, x, reciprocal(a.scale))), a.zero);
    q = MinimumOp::create(b, loc, MaximumOp::create(b, loc, q, scalar(0)), scalar(kUnsignedSteps));
    a.bytes = CastOp::create(b, loc, SubtractOp::create(b, loc, q, scalar(kUnsignedOffset)),
                             TypeAttr::get(b.getI8Type()));
    return a;
  }

  /// The float product of activation bytes `rows` ([M, K], levels of `a`)
  /// and the weight: the exact integer sums, plus the zero point's share,
  /// scaled back, y = acc * s_x * s_w[n].
  Value product(Value rows, const Activation &a, Weight &w) {
    Value acc = MatmulOp::create(b, loc, wide(rows), w.levels);
    if (a.zero) {
      if (!w.columnSums && w.rowLevels)
        w.columnSums = ReshapeOp::create(
            b, loc,
            SumOp::create(b, loc, w.rowLevels, b.getDenseI64ArrayAttr({1}), b.getBoolAttr(true)),
            b.getDenseI64ArrayAttr({1, -1}));
      else if (!w.columnSums)
        w.columnSums =
            SumOp::create(b, loc, w.levels, b.getDenseI64ArrayAttr({0}), b.getBoolAttr(true));
      Value shift =
          CastOp::create(b, loc, SubtractOp::create(b, loc, scalar(kUnsignedOffset), a.zero),
                         TypeAttr::get(b.getI32Type()));
      acc = AddOp::create(b, loc, acc, MultiplyOp::create(b, loc, w.columnSums, shift));
    }
    Value y = CastOp::create(b, loc, acc, TypeAttr::get(et));
    return MultiplyOp::create(b, loc, MultiplyOp::create(b, loc, y, a.scale), w.scales);
  }

private:
  /// The ops of a part of the quantization named apart from the product
  /// while in scope ("linear_0.matrixmultiply_0 [quantize weight]"), so
  /// that ml.profile tells its kernels from the product's.
  class PartLocation {
  public:
    PartLocation(Int8Builder &builder, StringRef what) : builder(builder), saved(builder.loc) {
      if (auto name = dyn_cast<NameLoc>(saved))
        builder.loc = NameLoc::get(
            StringAttr::get(saved.getContext(), name.getName().getValue() + " [" + what + "]"),
            name.getChildLoc());
    }
    ~PartLocation() { builder.loc = saved; }

  private:
    Int8Builder &builder;
    Location saved;
  };

  /// A constant weight's scales, levels (i32 of i8 constants) and the
  /// levels' column sums, computed now; false for a weight given at run
  /// time.
  bool compiledIn(Value w, Weight &q) {
    bool transposed;
    ConstantOp constant = constantWeight(w, transposed);
    auto type = cast<RankedTensorType>(w.getType());
    if (!constant || !type.hasStaticShape() || !(et.isF32() || et.isF64()) ||
        cast<ShapedType>(constant.getType()).getElementType() != et)
      return false;
    auto data = cast<DenseElementsAttr>(constant.getValue());
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    if (data.getNumElements() != rows * cols)
      return false;
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
    q.scales = ConstantOp::create(b, loc, scaleAttr);
    auto levelType = RankedTensorType::get({rows, cols}, b.getI8Type());
    q.levels = wide(
        ConstantOp::create(b, loc, DenseElementsAttr::get(levelType, ArrayRef<int8_t>(levels))));
    SmallVector<int32_t> sums(cols, 0);
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t n = 0; n < cols; ++n)
        sums[n] += levels[k * cols + n];
    q.columnSums =
        ConstantOp::create(b, loc,
                           DenseElementsAttr::get(RankedTensorType::get({1, cols}, b.getI32Type()),
                                                  ArrayRef<int32_t>(sums)));
    return true;
  }

  OpBuilder &b;
  Location loc;
  Type et;
};

struct QuantizeInt8Pass : public mithril::impl::MithrilQuantizeInt8Base<QuantizeInt8Pass> {
  using MithrilQuantizeInt8Base::MithrilQuantizeInt8Base;

  void runOnOperation() override {
    unsigned index = 0;
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      // Products and convolutions of weights, numbered in program order.
      SmallVector<Operation *> targets;
      model.getBodyBlock().walk([&](Operation *op) {
        if (auto mm = dyn_cast<MatmulOp>(op)) {
          auto lt = mm.getLhs().getType(), rt = mm.getRhs().getType();
          if (isa<FloatType>(lt.getElementType()) && rt.getRank() == 2 && lt.getRank() >= 1 &&
              isParameter(model, mm.getRhs()))
            targets.push_back(op);
        } else if (auto conv = dyn_cast<Conv2DOp>(op)) {
          if (isQuantizableConv(model, conv))
            targets.push_back(op);
        } else if (auto conv = dyn_cast<Conv1DOp>(op)) {
          if (isQuantizableConv(model, conv))
            targets.push_back(op);
        }
      });
      if (observe) {
        addCalibrationOutputs(model, targets, index);
        continue;
      }
      for (Operation *op : targets) {
        std::optional<double> scale;
        std::optional<std::pair<double, double>> range;
        if (!activationRanges.empty()) {
          if (2 * index + 1 >= activationRanges.size()) {
            ++index;
            continue;
          }
          range = {activationRanges[2 * index], activationRanges[2 * index + 1]};
          if (!(range->first <= range->second)) {
            op->emitOpError("mithril-quantize-int8: activation range ")
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
            op->emitOpError("mithril-quantize-int8: activation scale ")
                << index << " must be positive, got " << *scale;
            return signalPassFailure();
          }
        }
        if (auto mm = dyn_cast<MatmulOp>(op))
          quantize(mm, scale, range);
        else if (auto conv = dyn_cast<Conv1DOp>(op))
          quantizeConv(conv, scale, range);
        else
          quantizeConv(cast<Conv2DOp>(op), scale, range);
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
          << " matrix products and convolutions of weights to quantize";
      signalPassFailure();
    }
    if (!activationRanges.empty() && 2 * index != activationRanges.size()) {
      getOperation().emitError("mithril-quantize-int8: activation-ranges has ")
          << activationRanges.size() << " values, but the model has " << index
          << " matrix products and convolutions of weights to quantize (a lo, hi pair each)";
      signalPassFailure();
    }
  }

  /// The calibration run: each quantized op's activation range, [min x,
  /// max x], as an output named calibration:<i>.
  void addCalibrationOutputs(ModelOp model, ArrayRef<Operation *> targets, unsigned &index) {
    OutputOp output = model.getOutputOp();
    if (!output)
      return;
    OpBuilder b(output);
    SmallVector<Value> values(output.getValues());
    SmallVector<Attribute> names;
    if (ArrayAttr attrs = model.getResAttrsAttr())
      names.append(attrs.begin(), attrs.end());
    for (Operation *op : targets) {
      Location loc = op->getLoc();
      Value x = activationOf(op);
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

  /// `mm` on int8 levels; the activation's scale is `staticScale` when
  /// given (symmetric, its levels clamped to +-127), else its range is
  /// `staticRange` when given or computed on each call.
  void quantize(MatmulOp mm, std::optional<double> staticScale,
                std::optional<std::pair<double, double>> staticRange) {
    OpBuilder b(mm);
    Value x = mm.getLhs();
    Int8Builder q(b, mm.getLoc(), cast<RankedTensorType>(x.getType()).getElementType());
    Int8Builder::Weight w = q.weight(mm.getRhs());
    Int8Builder::Activation a = q.activation(x, staticScale, staticRange);
    Value y = q.product(a.bytes, a, w);
    if (y.getType() != mm.getType())
      y.setType(mm.getType()); // the static sizes shape inference found
    mm.getResult().replaceAllUsesWith(y);
    mm.erase();
  }

  /// `conv` as the same int8 product over its windows (im2col). The input
  /// is padded with zeros first, so that the padding takes the zero point's
  /// level as the input's own zeros do, quantized, and its bytes moved
  /// channels last ([N, H, W, C]); each window is then a row of [N OH OW,
  /// KH KW C], gathered by KH KW strided slices that copy runs of C bytes. The
  /// weight [F, C, KH, KW] is read as the [KH KW C, F] matrix, quantized per
  /// output channel. A 1-D convolution is the 2-D one of height 1.
  template <typename ConvOp>
  void quantizeConv(ConvOp conv, std::optional<double> staticScale,
                    std::optional<std::pair<double, double>> staticRange) {
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    RankedTensorType weightType = conv.getWeight().getType(), out = conv.getType();
    bool oneD = weightType.getRank() == 3;
    Type et = conv.getInput().getType().getElementType();
    int64_t channels = weightType.getDimSize(1), features = weightType.getDimSize(0);
    int64_t kh = oneD ? 1 : weightType.getDimSize(2), kw = weightType.getDimSize(oneD ? 2 : 3);
    int64_t oh = oneD ? 1 : out.getDimSize(2), ow = out.getDimSize(oneD ? 2 : 3);
    int64_t k = channels * kh * kw;
    ArrayRef<int64_t> p = conv.getPadding(), s = conv.getStride(), d = conv.getDilation();
    SmallVector<int64_t> padding =
        oneD ? SmallVector<int64_t>{0, 0, p[0], p[1]} : SmallVector<int64_t>(p.begin(), p.end());
    SmallVector<int64_t> stride =
        oneD ? SmallVector<int64_t>{1, s[0]} : SmallVector<int64_t>(s.begin(), s.end());
    SmallVector<int64_t> dilation =
        oneD ? SmallVector<int64_t>{1, d[0]} : SmallVector<int64_t>(d.begin(), d.end());
    Int8Builder q(b, loc, et);
    auto ints = [&](ArrayRef<int64_t> v) { return b.getDenseI64ArrayAttr(v); };
    Value matrix =
        ReshapeOp::create(b, loc, channelsLast(b, loc, conv.getWeight()), ints({features, k}));
    Int8Builder::Weight w = q.weight(TransposeOp::create(b, loc, matrix, ints({1, 0})));
    Value x = conv.getInput();
    if (oneD)
      x = ReshapeOp::create(b, loc, x,
                            ints({-1, channels, 1, conv.getInput().getType().getDimSize(2)}));
    if (llvm::any_of(padding, [](int64_t v) { return v != 0; }))
      x = PadOp::create(b, loc, x,
                        ints({0, 0, 0, 0, padding[0], padding[1], padding[2], padding[3]}),
                        b.getF64FloatAttr(0.0));
    Int8Builder::Activation a = q.activation(x, staticScale, staticRange);
    Value bytes = TransposeOp::create(b, loc, a.bytes, ints({0, 2, 3, 1})); // [N, H, W, C]
    SmallVector<Value> taps;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        int64_t row = i * dilation[0], column = j * dilation[1];
        Value tap = SliceOp::create(
            b, loc, bytes, ints({1, 2}), ints({row, column}),
            ints({row + (oh - 1) * stride[0] + 1, column + (ow - 1) * stride[1] + 1}),
            ints({stride[0], stride[1]}));
        taps.push_back(UnsqueezeOp::create(b, loc, tap, b.getI64IntegerAttr(3)));
      }
    // [N, OH, OW, KH KW, C] -> rows [N OH OW, KH KW C].
    Value windows =
        taps.size() == 1 ? taps.front() : ConcatOp::create(b, loc, taps, b.getI64IntegerAttr(3));
    Value rows = ReshapeOp::create(b, loc, windows, ints({-1, k}));
    // [N OH OW, F] -> [N, OH OW, F] -> [N, F, OH OW]: a swap of the last two
    // dimensions, which the CPU schedule transposes in 16 x 16 register
    // blocks (as [N, OH, OW, F] -> [N, F, OH, OW] it gathered single floats:
    // 0.13 of 0.66 ms for the bench CNN).
    Value y = q.product(rows, a, w);
    y = TransposeOp::create(b, loc, ReshapeOp::create(b, loc, y, ints({-1, oh * ow, features})),
                            ints({0, 2, 1}));
    if (!oneD)
      y = ReshapeOp::create(b, loc, y, ints({-1, features, oh, ow}));
    if (Value bias = conv.getBias())
      y = AddOp::create(
          b, loc, y,
          ReshapeOp::create(b, loc, bias,
                            oneD ? ints({1, features, 1}) : ints({1, features, 1, 1})));
    if (y.getType() != out)
      y.setType(out); // the static sizes shape inference found
    conv.getResult().replaceAllUsesWith(y);
    conv.erase();
  }

  /// The weight [F, C, KH, KW] as [F, KH, KW, C] ([F, C, K] as [F, K, C]): a
  /// constant one permuted now (so that its levels are computed when
  /// compiling), else by a transpose.
  static Value channelsLast(OpBuilder &b, Location loc, Value weight) {
    auto type = cast<RankedTensorType>(weight.getType());
    bool oneD = type.getRank() == 3;
    int64_t f = type.getDimSize(0), c = type.getDimSize(1), kh = oneD ? 1 : type.getDimSize(2),
            kw = type.getDimSize(oneD ? 2 : 3);
    if (kh * kw == 1)
      return weight;
    auto permutedType = oneD ? RankedTensorType::get({f, kw, c}, type.getElementType())
                             : RankedTensorType::get({f, kh, kw, c}, type.getElementType());
    auto constant = weight.getDefiningOp<ConstantOp>();
    auto data = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    if (data && data.isSplat())
      return ConstantOp::create(b, loc, data.reshape(permutedType));
    if (!data || data.getNumElements() != f * c * kh * kw || type.getElementTypeBitWidth() % 8)
      return TransposeOp::create(b, loc, weight,
                                 oneD ? b.getDenseI64ArrayAttr({0, 2, 1})
                                      : b.getDenseI64ArrayAttr({0, 2, 3, 1}));
    // The bytes of each element moved, not an attribute per element.
    ArrayRef<char> raw = data.getRawData();
    size_t bytes = type.getElementTypeBitWidth() / 8;
    std::vector<char> permuted(raw.size());
    for (int64_t o = 0; o < f; ++o)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            std::memcpy(&permuted[(((o * kh + i) * kw + j) * c + ch) * bytes],
                        &raw[(((o * c + ch) * kh + i) * kw + j) * bytes], bytes);
    return ConstantOp::create(b, loc, DenseElementsAttr::getFromRawBuffer(permutedType, permuted));
  }
};
} // namespace
