//===- Convolution.cpp - convolutions to linalg ---------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

/// Whether `v` has a static size 0: no elements to read.
static bool hasNoElements(Value v) {
  return llvm::is_contained(cast<RankedTensorType>(v.getType()).getShape(), 0);
}

/// lhs + rhs, elementwise, for two static tensors of one float type.
static Value addTensors(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  RankedTensorType type = tensorType(lhs);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{lhs, rhs}, init,
             SmallVector<AffineMap>(3, identity), iterators,
             [](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl,
                                       arith::AddFOp::create(nb, nl, args[0], args[1]).getResult());
             })
      .getResult(0);
}

namespace {

/// Splits axis `axis` of `v` into (outer, inner) with `outer` static.
static Value splitAxis(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t outer) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t next = shape.size();
    if (i == axis) {
      int64_t inner = t.getDimSize(i) / outer;
      shape.append({outer, inner});
      sizes.append({b.getIndexAttr(outer), b.getIndexAttr(inner)});
      reassoc.push_back({next, next + 1});
    } else {
      shape.push_back(t.getDimSize(i));
      sizes.push_back(dimOf(b, loc, v, i));
      reassoc.push_back({next});
    }
  }
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()), v,
                                       reassoc, sizes);
}

/// Merges axes `axis` and `axis + 1` of `v`.
static Value mergeAxes(OpBuilder &b, Location loc, Value v, int64_t axis, RankedTensorType type) {
  RankedTensorType t = tensorType(v);
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (i == axis + 1)
      continue;
    if (i == axis)
      reassoc.push_back({i, i + 1});
    else
      reassoc.push_back({i});
  }
  return tensor::CollapseShapeOp::create(b, loc, type, v, reassoc);
}

/// The flat-row layout of a plain 2-D convolution: the input, padded, is
/// stored as rows of the padded width `wp`, so output (oh, ow) at flat
/// position p = oh * wp + ow reads input p + dh * kh * wp + dw * kw for every
/// kernel position (dh, dw: the dilation). Columns ow >= OW are computed and
/// dropped (the wp - OW extra columns are the price of contiguous loads); p
/// runs to `positions`, a multiple of the register tile.
struct FlatConvLayout {
  int64_t wp = 0, oh = 0, ow = 0, kh = 0, kw = 0, dh = 1, dw = 1;
  int64_t positions = 0; // output positions computed, >= oh * wp
  int64_t length = 0;    // flat input length, rows of wp
};

/// The layout when an ungrouped convolution of these types is a plain static
/// 2-D one worth it, else nullopt (groups go one at a time: lowerPerGroup).
static std::optional<FlatConvLayout> flatConvLayout(RankedTensorType input, RankedTensorType weight,
                                                    ArrayRef<int64_t> stride,
                                                    ArrayRef<int64_t> padding,
                                                    ArrayRef<int64_t> dilation) {
  auto isOne = [](int64_t v) { return v == 1; };
  if (input.getRank() != 4 || !input.hasStaticShape() || !weight.hasStaticShape() ||
      !llvm::all_of(stride, isOne) || dilation.size() != 2 ||
      llvm::any_of(dilation, [](int64_t v) { return v < 1; }) || padding.size() != 4 ||
      !isa<FloatType>(input.getElementType()))
    return std::nullopt;
  FlatConvLayout l;
  int64_t hp = input.getDimSize(2) + padding[0] + padding[1];
  l.wp = input.getDimSize(3) + padding[2] + padding[3];
  l.kh = weight.getDimSize(2);
  l.kw = weight.getDimSize(3);
  l.dh = dilation[0];
  l.dw = dilation[1];
  l.oh = hp - l.dh * (l.kh - 1);
  l.ow = l.wp - l.dw * (l.kw - 1);
  // Rows much wider than the output would waste most of the work.
  if (l.oh <= 0 || l.ow <= 0 || 4 * (l.wp - l.ow) > l.wp)
    return std::nullopt;
  l.positions = llvm::alignTo(l.oh * l.wp, kConvFlatTile);
  l.length = llvm::alignTo(l.positions + l.dh * (l.kh - 1) * l.wp + l.dw * (l.kw - 1), l.wp);
  return l;
}

/// The input of a flat convolution: zero-padded as the convolution pads it,
/// plus zero rows below so that every tile reads in bounds, flattened to
/// [N, C, length].
static Value flatConvInput(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> padding,
                           const FlatConvLayout &l) {
  RankedTensorType t = tensorType(input);
  int64_t rows = l.length / l.wp;
  int64_t below = rows - t.getDimSize(2) - padding[0];
  Value zero = floatConst(b, loc, t.getElementType(), 0.0);
  Value padded = padSpatial(b, loc, input, 2, {padding[0], below, padding[2], padding[3]}, zero);
  auto flat =
      RankedTensorType::get({t.getDimSize(0), t.getDimSize(1), l.length}, t.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, flat, padded,
                                         SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// out[n, f, oh, ow] = sum_{c, kh, kw} x[n, c, oh + kh, ow + kw] w[f, c, kh, kw]
/// as a generic over flat rows (see FlatConvLayout), then the [N, F, OH, OW]
/// view of its result.
static Value lowerFlatConv(OpBuilder &b, Location loc, Value input, Value weight,
                           ArrayRef<int64_t> padding, const FlatConvLayout &l) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType wt = tensorType(weight);
  Type et = wt.getElementType();
  int64_t n = tensorType(input).getDimSize(0), f = wt.getDimSize(0);
  Value flat = flatConvInput(b, loc, input, padding, l);
  auto resultType = RankedTensorType::get({n, f, l.positions}, et);
  Value init = zeroFilled(b, loc, resultType);
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  // Loops: n, f, p, c, kh, kw.
  SmallVector<AffineMap> maps = {
      AffineMap::get(6, 0, {d(0), d(3), d(2) + d(4) * (l.dh * l.wp) + d(5) * l.dw}, ctx),
      AffineMap::get(6, 0, {d(1), d(3), d(4), d(5)}, ctx),
      AffineMap::get(6, 0, {d(0), d(1), d(2)}, ctx)};
  SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(b, loc, TypeRange{resultType}, ValueRange{flat, weight},
                                           init, maps, iterators, yieldMultiplyAdd);
  setCpuKernel(generic, CpuKernel::ConvFlat);
  // [N, F, positions] -> rows [N, F, OH, wp] -> columns < OW.
  Value rows = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n, f, l.oh * l.wp}, et), generic.getResult(0),
      ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(n), b.getIndexAttr(f), b.getIndexAttr(l.oh * l.wp)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
  Value grid =
      tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({n, f, l.oh, l.wp}, et), rows,
                                    SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  SmallVector<OpFoldResult> zeros(4, b.getIndexAttr(0)), ones(4, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(n), b.getIndexAttr(f), b.getIndexAttr(l.oh),
                                     b.getIndexAttr(l.ow)};
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get({n, f, l.oh, l.ow}, et), grid,
                                        zeros, sizes, ones);
}

/// One phase (row, column) of a 2-D stride (sh, sw): the kernel rows row,
/// row + sh, ... and columns column, column + sw, ..., which meet the input
/// rows and columns of the same phase. With kh = row + sh * i, input row
/// oh * sh + kh is row oh + i of the phase, so each phase is a stride-1
/// convolution with a kernel of kernelRows x kernelColumns.
struct StridePhase {
  int64_t row, column, kernelRows, kernelColumns;
};

/// The phases of `stride` that meet some of a kh x kw kernel.
static SmallVector<StridePhase> stridePhases(ArrayRef<int64_t> stride, int64_t kh, int64_t kw) {
  SmallVector<StridePhase> phases;
  for (int64_t row = 0; row < stride[0]; ++row)
    for (int64_t column = 0; column < stride[1]; ++column) {
      // A stride longer than the kernel leaves phases no kernel tap meets
      // (llvm::divideCeil is unsigned: test before dividing).
      if (row >= kh || column >= kw)
        continue;
      phases.push_back({row, column, static_cast<int64_t>(llvm::divideCeil(kh - row, stride[0])),
                        static_cast<int64_t>(llvm::divideCeil(kw - column, stride[1]))});
    }
  return phases;
}

/// Whether an ungrouped convolution of these types runs phase by phase:
/// 2-D, static, float, no dilation.
static bool isPhasedConv(RankedTensorType input, RankedTensorType weight, ArrayRef<int64_t> stride,
                         ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  auto isOne = [](int64_t v) { return v == 1; };
  return input.getRank() == 4 && input.hasStaticShape() && weight.hasStaticShape() &&
         stride.size() == 2 && padding.size() == 4 && llvm::all_of(dilation, isOne) &&
         isa<FloatType>(input.getElementType());
}

/// The [N, C, rows, columns] slice of a 4-D tensor from (row, column), every
/// sh-th row and sw-th column.
static Value phaseSlice(OpBuilder &b, Location loc, Value source, int64_t row, int64_t column,
                        int64_t rows, int64_t columns, ArrayRef<int64_t> stride) {
  RankedTensorType t = tensorType(source);
  SmallVector<int64_t> sizes = {t.getDimSize(0), t.getDimSize(1), rows, columns};
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(sizes, t.getElementType()),
                                        source, indexAttrs(b, {0, 0, row, column}),
                                        indexAttrs(b, sizes),
                                        indexAttrs(b, {1, 1, stride[0], stride[1]}));
}

/// `part` written into `dest` at (row, column), every sh-th row and sw-th
/// column: the inverse of phaseSlice.
static Value insertPhase(OpBuilder &b, Location loc, Value part, Value dest, int64_t row,
                         int64_t column, ArrayRef<int64_t> stride) {
  return tensor::InsertSliceOp::create(b, loc, part, dest, indexAttrs(b, {0, 0, row, column}),
                                       indexAttrs(b, tensorType(part).getShape()),
                                       indexAttrs(b, {1, 1, stride[0], stride[1]}));
}

/// The phases of a strided convolution's input that an oh x ow output
/// reads, each with the flat layout of its stride-1 convolution: phase (a, b)
/// is rows oh + i of the phase for i < kernelRows (columns likewise), all
/// inside the padded input since (oh - 1) * sh + kh - 1 is. nullopt where the
/// convolution is no strided plain one, or a phase has no flat layout.
using PlannedPhases = SmallVector<std::pair<StridePhase, FlatConvLayout>>;
static std::optional<PlannedPhases>
planInputPhases(RankedTensorType input, RankedTensorType weight, int64_t oh, int64_t ow,
                ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  if (!isPhasedConv(input, weight, stride, padding, dilation) ||
      llvm::all_of(stride, [](int64_t v) { return v == 1; }))
    return std::nullopt;
  int64_t n = input.getDimSize(0), c = input.getDimSize(1), f = weight.getDimSize(0);
  Type et = input.getElementType();
  SmallVector<int64_t> noPadding(4, 0), ones(2, 1);
  PlannedPhases phases;
  for (const StridePhase &phase :
       stridePhases(stride, weight.getDimSize(2), weight.getDimSize(3))) {
    auto phaseInput =
        RankedTensorType::get({n, c, oh + phase.kernelRows - 1, ow + phase.kernelColumns - 1}, et);
    auto phaseWeight = RankedTensorType::get({f, c, phase.kernelRows, phase.kernelColumns}, et);
    auto layout = flatConvLayout(phaseInput, phaseWeight, ones, noPadding, ones);
    if (!layout)
      return std::nullopt;
    phases.push_back({phase, *layout});
  }
  return phases;
}

/// Phase `phase` of the padded input, as planInputPhases sizes it.
static Value phaseInput(OpBuilder &b, Location loc, Value padded, const StridePhase &phase,
                        const FlatConvLayout &layout, ArrayRef<int64_t> stride) {
  return phaseSlice(b, loc, padded, phase.row, phase.column, layout.oh + phase.kernelRows - 1,
                    layout.ow + phase.kernelColumns - 1, stride);
}

/// A strided 2-D convolution as the sum over the phases of its stride of
/// stride-1 flat-row convolutions (phase (a, b) of the padded input against
/// kernel rows a, a + sh, ... and columns b, b + sw, ...): the direct
/// convolution's work with contiguous loads.
static std::optional<Value> lowerPhasedConv(OpBuilder &b, Location loc, Value input, Value weight,
                                            ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                            ArrayRef<int64_t> dilation, RankedTensorType out) {
  if (!out.hasStaticShape())
    return std::nullopt;
  std::optional<PlannedPhases> phases =
      planInputPhases(tensorType(input), tensorType(weight), out.getDimSize(2), out.getDimSize(3),
                      stride, padding, dilation);
  if (!phases)
    return std::nullopt;
  Value padded =
      padSpatial(b, loc, input, 2, padding, floatConst(b, loc, out.getElementType(), 0.0));
  SmallVector<int64_t> noPadding(4, 0);
  Value sum;
  for (const auto &[phase, layout] : *phases) {
    Value phaseIn = phaseInput(b, loc, padded, phase, layout, stride);
    Value phaseWeight = phaseSlice(b, loc, weight, phase.row, phase.column, phase.kernelRows,
                                   phase.kernelColumns, stride);
    Value partial = lowerFlatConv(b, loc, phaseIn, phaseWeight, noPadding, layout);
    sum = sum ? addTensors(b, loc, sum, partial) : partial;
  }
  return sum;
}

/// [N, X...] -> [N / 2, X..., 2]: the images in pairs, the two of a pair
/// interleaved element by element (an odd N gets a zero image).
static Value interleaveImagePairs(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  if (t.getDimSize(0) % 2 != 0) {
    SmallVector<int64_t> pads(2 * t.getRank(), 0);
    pads[1] = 1;
    v = padSpatial(b, loc, v, 0, pads, floatConst(b, loc, t.getElementType(), 0.0));
    t = tensorType(v);
  }
  ArrayRef<int64_t> rest = t.getShape().drop_front();
  SmallVector<int64_t> split = {t.getDimSize(0) / 2, 2}, paired = {t.getDimSize(0) / 2};
  llvm::append_range(split, rest);
  llvm::append_range(paired, rest);
  paired.push_back(2);
  SmallVector<ReassociationIndices> groups = {{0, 1}};
  SmallVector<int64_t> permutation = {0};
  for (int64_t d = 0; d < static_cast<int64_t>(rest.size()); ++d) {
    groups.push_back({d + 2});
    permutation.push_back(d + 2);
  }
  permutation.push_back(1);
  Value pairs = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(split, t.getElementType()), v, groups);
  return linalg::TransposeOp::create(b, loc, pairs,
                                     tensor::EmptyOp::create(b, loc, paired, t.getElementType()),
                                     permutation)
      .getResult()[0];
}

/// dw[f, c, kh, kw] = sum_{n, oh, ow} x[n, c, oh + kh, ow + kw] g[n, f, oh, ow]
/// over flat rows: the output gradient, zero in the dropped columns, and the
/// input are both contiguous along p, so the sum runs in kConvFlatLanes lanes
/// of partial sums (a tile of output and input channels at a time) that are
/// added up at the end.
/// With bf16 `input` and `grad` (mixed precision's values, for a CPU with
/// bf16 dot products), the images go in pairs (interleaveImagePairs): each
/// lane of a register tile then reads a pair of bf16 of each operand, the
/// same position of two images, and one vdpbf16ps adds both products in f32.
/// Loops: f, c, kh, kw, lane, n / 2, block, pair.
static Value lowerFlatConvWeightGrad(OpBuilder &b, Location loc, Value input, Value grad,
                                     ArrayRef<int64_t> padding, RankedTensorType weightType,
                                     const FlatConvLayout &l) {
  MLIRContext *ctx = b.getContext();
  Type et = weightType.getElementType();
  RankedTensorType gt = tensorType(grad);
  Type narrow = gt.getElementType();
  bool pairs = narrow != et;
  int64_t n = gt.getDimSize(0), f = gt.getDimSize(1), c = weightType.getDimSize(1);
  int64_t blocks = llvm::divideCeil(l.oh * l.wp, kConvFlatLanes);
  Value flat = flatConvInput(b, loc, input, padding, l);
  // The output gradient on the same rows: zero columns to wp, zero rows to
  // cover whole blocks of lanes.
  int64_t rows = llvm::divideCeil(blocks * kConvFlatLanes, l.wp);
  Value zero = floatConst(b, loc, narrow, 0.0);
  Value padded = padSpatial(b, loc, grad, 2, {0, rows - l.oh, 0, l.wp - l.ow}, zero);
  Value gradRows =
      tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({n, f, rows * l.wp}, narrow),
                                      padded, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  SmallVector<OpFoldResult> zeros(3, b.getIndexAttr(0)), ones(3, b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(n), b.getIndexAttr(f),
                                     b.getIndexAttr(blocks * kConvFlatLanes)};
  Value gradFlat = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n, f, blocks * kConvFlatLanes}, narrow), gradRows, zeros,
      sizes, ones);
  Value gradLanes = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({n, f, blocks, kConvFlatLanes}, narrow), gradFlat,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  // Loops: f, c, kh, kw, lane, n, block (and pair).
  int64_t loops = pairs ? 8 : 7;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inputIndex = {
      d(5), d(1), d(6) * kConvFlatLanes + d(4) + d(2) * (l.dh * l.wp) + d(3) * l.dw};
  SmallVector<AffineExpr> gradIndex = {d(5), d(0), d(6), d(4)};
  if (pairs) {
    flat = interleaveImagePairs(b, loc, flat);
    gradLanes = interleaveImagePairs(b, loc, gradLanes);
    inputIndex.push_back(d(7));
    gradIndex.push_back(d(7));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, inputIndex, ctx),
                                 AffineMap::get(loops, 0, gradIndex, ctx),
                                 AffineMap::get(loops, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
  iterators.append(loops - 5, utils::IteratorType::reduction);
  auto partialType = RankedTensorType::get({f, c, l.kh, l.kw, kConvFlatLanes}, et);
  auto multiplyAdd = [&](OpBuilder &nb, Location nl, ValueRange args) {
    if (!pairs)
      return yieldMultiplyAdd(nb, nl, args);
    Value x = arith::ExtFOp::create(nb, nl, et, args[0]);
    Value g = arith::ExtFOp::create(nb, nl, et, args[1]);
    Value product = arith::MulFOp::create(nb, nl, x, g);
    linalg::YieldOp::create(nb, nl, arith::AddFOp::create(nb, nl, args[2], product).getResult());
  };
  auto partial =
      linalg::GenericOp::create(b, loc, TypeRange{partialType}, ValueRange{flat, gradLanes},
                                zeroFilled(b, loc, partialType), maps, iterators, multiplyAdd);
  setCpuKernel(partial, CpuKernel::ConvFlatWeightGrad);
  return linalg::ReduceOp::create(
             b, loc, ValueRange{partial.getResult(0)}, ValueRange{zeroFilled(b, loc, weightType)},
             /*dimensions=*/ArrayRef<int64_t>{4},
             [](OpBuilder &nb, Location nl, ValueRange a) {
               linalg::YieldOp::create(nb, nl,
                                       arith::AddFOp::create(nb, nl, a[0], a[1]).getResult());
             })
      .getResult(0);
}

/// w[f, c, kh, kw] -> w'[c, f, KH - 1 - kh, KW - 1 - kw]: the kernel that
/// runs a convolution backwards, from output channels to input channels. A
/// gather, like reverse: tiling mis-sizes the slices of negated dimensions.
static Value flipKernel(OpBuilder &b, Location loc, Value weight) {
  RankedTensorType wt = tensorType(weight);
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  auto type =
      RankedTensorType::get({wt.getDimSize(1), wt.getDimSize(0), kh, kw}, wt.getElementType());
  return generateElements(b, loc, type, weight, [&](OpBuilder &nb, Location nl) {
    auto index = [&](int64_t d) { return linalg::IndexOp::create(nb, nl, d).getResult(); };
    auto flipped = [&](int64_t d, int64_t size) {
      return arith::SubIOp::create(nb, nl, arith::ConstantIndexOp::create(nb, nl, size - 1),
                                   index(d))
          .getResult();
    };
    return tensor::ExtractOp::create(nb, nl, weight,
                                     ValueRange{index(1), index(0), flipped(2, kh), flipped(3, kw)})
        .getResult();
  });
}

/// dx of a 2-D convolution phase by phase: row y of phase (a, b) of the
/// padded input gets sum_i g[y - i] w[a + sh * i] (columns likewise), a
/// stride-1 convolution of the output gradient, padded by the phase kernel's
/// size - 1, with that kernel flipped. The phases are written into the
/// padded input gradient, which is then cropped. Phases no kernel row meets
/// stay zero. nullopt where a phase has no flat layout.
static std::optional<Value> lowerPhasedConvGradInput(OpBuilder &b, Location loc, Value grad,
                                                     Value weight, ArrayRef<int64_t> stride,
                                                     ArrayRef<int64_t> padding,
                                                     ArrayRef<int64_t> dilation,
                                                     RankedTensorType out) {
  RankedTensorType gt = tensorType(grad), wt = tensorType(weight);
  // Dilation comes with unit strides only: the one phase is the whole input
  // and its kernel keeps the dilation.
  SmallVector<int64_t> ones(2, 1);
  bool unitStride = llvm::all_of(stride, [](int64_t v) { return v == 1; });
  ArrayRef<int64_t> phaseDilation = unitStride ? dilation : ArrayRef<int64_t>(ones);
  if (!isPhasedConv(gt, wt, stride, padding, unitStride ? ArrayRef<int64_t>(ones) : dilation) ||
      !out.hasStaticShape() || phaseDilation.size() != 2)
    return std::nullopt;
  int64_t n = out.getDimSize(0), c = out.getDimSize(1), f = wt.getDimSize(0);
  int64_t oh = gt.getDimSize(2), ow = gt.getDimSize(3);
  int64_t hp = out.getDimSize(2) + padding[0] + padding[1];
  int64_t wp = out.getDimSize(3) + padding[2] + padding[3];
  Type et = out.getElementType();
  struct Planned {
    StridePhase phase;
    SmallVector<int64_t> padding;
    FlatConvLayout layout;
  };
  SmallVector<Planned> phases;
  for (const StridePhase &phase : stridePhases(stride, wt.getDimSize(2), wt.getDimSize(3))) {
    // The phase's rows of the padded input, and the output-gradient padding
    // that yields exactly that many.
    if (phase.row >= hp || phase.column >= wp)
      return std::nullopt;
    int64_t rows = llvm::divideCeil(hp - phase.row, stride[0]);
    int64_t columns = llvm::divideCeil(wp - phase.column, stride[1]);
    SmallVector<int64_t> gradPadding = {phaseDilation[0] * (phase.kernelRows - 1), rows - oh,
                                        phaseDilation[1] * (phase.kernelColumns - 1), columns - ow};
    if (llvm::any_of(gradPadding, [](int64_t p) { return p < 0; }))
      return std::nullopt;
    auto flipped = RankedTensorType::get({c, f, phase.kernelRows, phase.kernelColumns}, et);
    auto layout = flatConvLayout(gt, flipped, ones, gradPadding, phaseDilation);
    if (!layout || layout->oh != rows || layout->ow != columns)
      return std::nullopt;
    phases.push_back({phase, gradPadding, *layout});
  }

  Value padded = zeroFilled(b, loc, RankedTensorType::get({n, c, hp, wp}, et));
  for (const Planned &planned : phases) {
    const StridePhase &phase = planned.phase;
    Value phaseWeight = phaseSlice(b, loc, weight, phase.row, phase.column, phase.kernelRows,
                                   phase.kernelColumns, stride);
    Value part = lowerFlatConv(b, loc, grad, flipKernel(b, loc, phaseWeight), planned.padding,
                               planned.layout);
    padded = insertPhase(b, loc, part, padded, phase.row, phase.column, stride);
  }
  return tensor::ExtractSliceOp::create(b, loc, out, padded,
                                        indexAttrs(b, {0, 0, padding[0], padding[2]}),
                                        indexAttrs(b, out.getShape()), indexAttrs(b, {1, 1, 1, 1}))
      .getResult();
}

/// dw of a strided 2-D convolution phase by phase: kernel rows a, a + sh,
/// ... (columns likewise) are the weight gradient of the stride-1
/// convolution of phase (a, b) of the padded input, written back into dw
/// with the stride.
static std::optional<Value> lowerPhasedConvGradWeight(OpBuilder &b, Location loc, Value input,
                                                      Value grad, ArrayRef<int64_t> stride,
                                                      ArrayRef<int64_t> padding,
                                                      ArrayRef<int64_t> dilation,
                                                      RankedTensorType out) {
  RankedTensorType gt = tensorType(grad);
  if (!gt.hasStaticShape())
    return std::nullopt;
  std::optional<PlannedPhases> phases = planInputPhases(
      tensorType(input), out, gt.getDimSize(2), gt.getDimSize(3), stride, padding, dilation);
  if (!phases)
    return std::nullopt;
  Type et = out.getElementType();
  Value padded = padSpatial(b, loc, input, 2, padding, floatConst(b, loc, et, 0.0));
  SmallVector<int64_t> noPadding(4, 0);
  Value dw = zeroFilled(b, loc, out);
  for (const auto &[phase, layout] : *phases) {
    auto phaseWeight = RankedTensorType::get(
        {out.getDimSize(0), out.getDimSize(1), phase.kernelRows, phase.kernelColumns}, et);
    Value part = lowerFlatConvWeightGrad(b, loc, phaseInput(b, loc, padded, phase, layout, stride),
                                         grad, noPadding, phaseWeight, layout);
    dw = insertPhase(b, loc, part, dw, phase.row, phase.column, stride);
  }
  return dw;
}

/// The 2x2 pooling of max(relu(y + bias)) of a float32 convolution's result
/// `y`, channels-last [n, oh, ow, f] (even oh, ow), channels-last [n, oh /
/// 2, ow / 2, f]. Each 2x2 block: its four corners, strided views of [n, oh
/// / 2, 2, ow / 2, 2, f], as whole rows of channels; max(relu(y + bias)) of
/// them, rounded as mixed precision rounds the convolution's result
/// (rounding is monotone: the pooling of rounded values is the rounded
/// pooling). Into `init` where given (a slice of a larger result).
static Value poolChannelsLast(OpBuilder &b, Location loc, Value y, const PooledBlocks &pooled,
                              Value init = Value()) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType yt = tensorType(y);
  Type f32 = b.getF32Type();
  int64_t n = yt.getDimSize(0), f = yt.getDimSize(3);
  int64_t ph = yt.getDimSize(1) / 2, pw = yt.getDimSize(2) / 2;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineMap identity = AffineMap::getMultiDimIdentityMap(4, ctx);
  Value grid =
      tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({n, ph, 2, pw, 2, f}, f32), y,
                                    SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4}, {5}});
  auto cornerType = RankedTensorType::get({n, ph, pw, f}, f32);
  SmallVector<Value> inputs;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      inputs.push_back(tensor::ExtractSliceOp::create(
          b, loc, cornerType, grid, indexAttrs(b, {0, 0, i, 0, j, 0}),
          indexAttrs(b, {n, ph, 1, pw, 1, f}), indexAttrs(b, {1, 1, 1, 1, 1, 1})));
  SmallVector<AffineMap> maps(4, identity);
  if (pooled.bias) {
    inputs.push_back(pooled.bias);
    maps.push_back(AffineMap::get(4, 0, {d(3)}, ctx));
  }
  maps.push_back(identity);
  Value blocks =
      linalg::GenericOp::create(
          b, loc, cornerType, inputs,
          init ? init : tensor::EmptyOp::create(b, loc, cornerType.getShape(), f32).getResult(),
          maps, SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            auto max = [&](Value x, Value y) {
              return arith::MaximumFOp::create(nb, nl, x, y).getResult();
            };
            Value block = max(max(args[0], args[1]), max(args[2], args[3]));
            if (pooled.bias)
              block = arith::AddFOp::create(nb, nl, block, args[4]);
            if (pooled.roundTo)
              block = arith::ExtFOp::create(
                  nb, nl, f32, arith::TruncFOp::create(nb, nl, pooled.roundTo, block).getResult());
            if (pooled.relu)
              block = max(block, floatConst(nb, nl, f32, 0.0));
            linalg::YieldOp::create(nb, nl, block);
          })
          .getResult(0);
  return blocks;
}

/// Channels-last pooled [n, ph, pw, f] as planes [n, f, ph, pw].
static Value pooledToPlanes(OpBuilder &b, Location loc, Value pooledBlocks) {
  RankedTensorType t = tensorType(pooledBlocks);
  int64_t n = t.getDimSize(0), ph = t.getDimSize(1), pw = t.getDimSize(2), f = t.getDimSize(3);
  return channelsLastToPlanes(
      b, loc,
      tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({n, ph * pw, f}, t.getElementType()), pooledBlocks,
          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}}),
      ph, pw);
}

/// The pooling of poolChannelsLast, only then transposed to planes [n, f, oh
/// / 2, ow / 2] (a quarter of the convolution's result).
static Value pooledChannelsLast(OpBuilder &b, Location loc, Value y, const PooledBlocks &pooled) {
  return pooledToPlanes(b, loc, poolChannelsLast(b, loc, y, pooled));
}

/// Input channels up to which a pooled convolution is computed
/// channels-last (lowerFewChannelPooledConv): an image's first layer (gray,
/// RGB or RGBA). From 8, Winograd's products take it.
constexpr int64_t kFewInputChannels = 4;

/// A stride-1 float32 2-D convolution of few input channels (an image's
/// first layer) whose result a 2x2 max pooling takes (with the bias and a
/// ReLU between): y[n, oh, ow, f] = sum_{c, kh, kw} x[n, c, oh + kh, ow + kw]
/// w[c, kh, kw, f], channels-last (CpuKernel::ConvChannelsLast: a tile of
/// output columns by vectors of channels, an input value broadcast against
/// a vector of weights each step), then pooled over whole vectors of
/// channels (pooledChannelsLast). Over flat rows, each channel's plane was
/// pooled by shuffling the even and odd columns of every row apart, and
/// the columns of the padding computed and dropped. nullopt where it does
/// not apply: other strides, dilations or types, many input channels (the
/// flat rows, Winograd and tile products take those), output channels not
/// in whole vectors of 16, or an odd output. With `threads` (a CPU
/// schedule's), a few rows at a time, pooled while they are in L1.
static std::optional<Value>
lowerFewChannelPooledConv(OpBuilder &b, Location loc, Value input, Value weight,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                          ArrayRef<int64_t> dilation, RankedTensorType pooledType,
                          const PooledBlocks &pooled, unsigned threads) {
  auto isOne = [](int64_t v) { return v == 1; };
  RankedTensorType xt = tensorType(input), wt = tensorType(weight);
  if (!llvm::all_of(stride, isOne) || !llvm::all_of(dilation, isOne) || xt.getRank() != 4 ||
      wt.getRank() != 4 || !xt.hasStaticShape() || !wt.hasStaticShape() ||
      !pooledType.hasStaticShape() || padding.size() != 4 || !xt.getElementType().isF32() ||
      !wt.getElementType().isF32() || !pooledType.getElementType().isF32())
    return std::nullopt;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), f = wt.getDimSize(0);
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  int64_t oh = xt.getDimSize(2) + padding[0] + padding[1] - kh + 1;
  int64_t ow = xt.getDimSize(3) + padding[2] + padding[3] - kw + 1;
  if (c > kFewInputChannels || f % 16 != 0 || oh < 2 || ow < 2 || oh % 2 != 0 || ow % 2 != 0 ||
      pooledType.getShape() != ArrayRef<int64_t>{n, f, oh / 2, ow / 2})
    return std::nullopt;
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  Value padded = padSpatial(b, loc, input, 2, padding, floatConst(b, loc, f32, 0.0));
  // The weight as [c, kh, kw, f]: each step's weights one contiguous vector.
  Value filter =
      linalg::TransposeOp::create(b, loc, weight,
                                  tensor::EmptyOp::create(b, loc, {c, kh, kw, f}, f32).getResult(),
                                  SmallVector<int64_t>{1, 2, 3, 0})
          .getResult()[0];
  // Loops n, oh, ow, f, c, kh, kw.
  SmallVector<AffineMap> maps = {AffineMap::get(7, 0, {d(0), d(4), d(1) + d(5), d(2) + d(6)}, ctx),
                                 AffineMap::get(7, 0, {d(4), d(5), d(6), d(3)}, ctx),
                                 AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx)};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(3, utils::IteratorType::reduction);
  // The convolution of `images` x `rows` output rows from `source` (the
  // padded input's rows they read).
  auto convolve = [&](OpBuilder &nb, Value source, int64_t images, int64_t rows,
                      Value scratch = Value()) {
    auto type = RankedTensorType::get({images, rows, ow, f}, f32);
    Value init =
        scratch
            ? linalg::FillOp::create(nb, loc, floatConst(nb, loc, f32, 0.0), scratch).getResult(0)
            : zeroFilled(nb, loc, type);
    auto conv = linalg::GenericOp::create(nb, loc, TypeRange{type}, ValueRange{source, filter},
                                          init, maps, iterators, yieldMultiplyAdd);
    setCpuKernel(conv, CpuKernel::ConvChannelsLast);
    return conv.getResult(0);
  };
  // For a CPU schedule: a few output rows at a time, pooled while they are
  // in L1 (whole, the bench CNN's 1.6 MB result went to memory and back
  // for its pooling), in a loop per thread's chunk of images. Rows: the
  // most whose result takes at most 16 KB, an even divisor of the output.
  int64_t blockRows = 0;
  for (int64_t rows = 2; threads && rows <= oh; rows += 2)
    if (oh % rows == 0 && rows * ow * f * 4 <= (16 << 10))
      blockRows = rows;
  int64_t chunks = threads > 1 && n % threads == 0 ? threads : 1;
  if (!blockRows || (threads > 1 && chunks == 1))
    return pooledChannelsLast(b, loc, convolve(b, padded, n, oh), pooled);
  int64_t chunkImages = n / chunks, ph = oh / 2, pw = ow / 2;
  int64_t wp = tensorType(padded).getDimSize(3);
  auto index = [&](OpBuilder &nb, int64_t v) {
    return arith::ConstantIndexOp::create(nb, loc, v).getResult();
  };
  // The images of a chunk from `first`, into `out` [chunkImages, ph, pw, f].
  // The rows' convolution goes to one scratch tensor carried through the
  // loops (a buffer of its own each step was allocated and freed 112 times a
  // call, from both threads at once), and the pooling straight into its
  // slice of the result.
  auto chunkOfRows = [&](OpBuilder &nb, Value first, Value out) -> Value {
    Value scratch = tensor::EmptyOp::create(nb, loc, ArrayRef<int64_t>{1, blockRows, ow, f}, f32);
    auto images = scf::ForOp::create(
        nb, loc, index(nb, 0), index(nb, chunkImages), index(nb, 1), ValueRange{out, scratch},
        [&](OpBuilder &ib, Location, Value image, ValueRange imageAcc) {
          Value source = arith::AddIOp::create(ib, loc, first, image);
          auto rows = scf::ForOp::create(
              ib, loc, index(ib, 0), index(ib, oh), index(ib, blockRows), imageAcc,
              [&](OpBuilder &rb, Location, Value row, ValueRange acc) {
                Value window = tensor::ExtractSliceOp::create(
                    rb, loc, RankedTensorType::get({1, c, blockRows + kh - 1, wp}, f32), padded,
                    ArrayRef<OpFoldResult>{source, rb.getIndexAttr(0), row, rb.getIndexAttr(0)},
                    indexAttrs(rb, {1, c, blockRows + kh - 1, wp}), indexAttrs(rb, {1, 1, 1, 1}));
                Value rowsOut = convolve(rb, window, 1, blockRows, acc[1]);
                Value pooledRow = arith::DivUIOp::create(rb, loc, row, index(rb, 2));
                SmallVector<OpFoldResult> at = {image, pooledRow, rb.getIndexAttr(0),
                                                rb.getIndexAttr(0)};
                SmallVector<OpFoldResult> sizes = indexAttrs(rb, {1, blockRows / 2, pw, f});
                SmallVector<OpFoldResult> ones = indexAttrs(rb, {1, 1, 1, 1});
                Value slot = tensor::ExtractSliceOp::create(
                    rb, loc, RankedTensorType::get({1, blockRows / 2, pw, f}, f32), acc[0], at,
                    sizes, ones);
                Value pooledRows = poolChannelsLast(rb, loc, rowsOut, pooled, slot);
                Value updated =
                    tensor::InsertSliceOp::create(rb, loc, pooledRows, acc[0], at, sizes, ones);
                scf::YieldOp::create(rb, loc, ValueRange{updated, rowsOut});
              });
          scf::YieldOp::create(ib, loc, rows.getResults());
        });
    return images.getResult(0);
  };
  Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n, ph, pw, f}, f32);
  return pooledToPlanes(b, loc, inParallelChunks(b, loc, out, chunks, chunkOfRows));
}

/// Rows, columns and reduction steps of the bf16 products AMX tiles take
/// whole: 16-row tiles, 16 f32 columns, 32 bf16 (16 pairs) a step.
constexpr int64_t kTileRows = 16, kTileColumns = 16, kTileStep = 32;

/// A stride-1 2-D convolution of a model computed in bf16, for AMX tiles:
/// the bf16 product of the input's windows, [n * oh * ow, kh * kw * c], by
/// the weight as [kh * kw * c, f], summed in f32, each window read where it
/// lies in the input (CpuKernel::TileConv; rows shorter than three quarters
/// of a tile of 16 copy their windows first). The input goes to channels-last
/// bf16 first, so that each window's row is kh * kw runs of c contiguous
/// channels, and the product's result, [n, oh, ow, f], back to [n, f, oh,
/// ow]. Each product is of two bf16 values, exact in f32, where Winograd's
/// transforms round in bf16; its five stages (filter, input, products,
/// output transforms) took 0.49 of 0.70 ms of the bench CNN at batch 16 on
/// an Intel Xeon with AMX. Only where the tiles divide the product: the
/// channels in whole steps of 32, the output channels in 16s; none
/// otherwise. With `pooled`, the result is the 2x2 pooling of max(relu(y +
/// bias)) (even OH, OW), pooled channels-last, where each block's rows are
/// whole vectors of channels, and only then transposed.
static std::optional<Value> lowerTileConv(OpBuilder &b, Location loc, Value input, Value weight,
                                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilation, RankedTensorType out,
                                          const PooledBlocks *pooled = nullptr) {
  auto isOne = [](int64_t v) { return v == 1; };
  RankedTensorType xt = tensorType(input), wt = tensorType(weight);
  if (!llvm::all_of(stride, isOne) || !llvm::all_of(dilation, isOne) || xt.getRank() != 4 ||
      !xt.hasStaticShape() || !wt.hasStaticShape() || !out.hasStaticShape() ||
      padding.size() != 4 || !xt.getElementType().isF32() || !out.getElementType().isF32())
    return std::nullopt;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), f = wt.getDimSize(0);
  int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  int64_t oh = xt.getDimSize(2) + padding[0] + padding[1] - kh + 1;
  int64_t ow = xt.getDimSize(3) + padding[2] + padding[3] - kw + 1;
  if (c % kTileStep != 0 || f % kTileColumns != 0 || oh < 1 || ow < 1)
    return std::nullopt;
  if (pooled &&
      (oh % 2 != 0 || ow % 2 != 0 || out.getDimSize(2) != oh / 2 || out.getDimSize(3) != ow / 2))
    return std::nullopt;
  if (!pooled && (out.getDimSize(2) != oh || out.getDimSize(3) != ow))
    return std::nullopt;
  MLIRContext *ctx = b.getContext();
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  auto parallel = [](unsigned loops) {
    return SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel);
  };
  auto rounded = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Value v = args[0];
    if (!v.getType().isBF16())
      v = arith::TruncFOp::create(nb, nl, bf16, v);
    linalg::YieldOp::create(nb, nl, v);
  };
  auto identity = [&](unsigned loops) { return AffineMap::getMultiDimIdentityMap(loops, ctx); };
  // `v` rounded to bf16 into `shape`, element [d0, d1, d2, d3] read from `v`
  // at `read` (a permutation of them).
  auto roundedInto = [&](Value v, ArrayRef<int64_t> shape, ArrayRef<AffineExpr> read) {
    auto type = RankedTensorType::get(shape, bf16);
    return linalg::GenericOp::create(
               b, loc, type, v, tensor::EmptyOp::create(b, loc, shape, bf16).getResult(),
               SmallVector<AffineMap>{AffineMap::get(4, 0, read, ctx), identity(4)}, parallel(4),
               rounded)
        .getResult(0);
  };

  // The input channels last in bf16, then padded: [n, hp, wp, c]. An input
  // that mixed precision rounded to bf16 and widened again (a pooling's
  // result before the next convolution) is read as the bf16 value: its
  // rounding again is exact, and the round trip in float32 took a pass of
  // its own (22 us of the bench CNN's 0.48 ms at batch 16).
  Value source = input;
  if (auto up = input.getDefiningOp<CastOp>())
    if (auto down = up.getInput().getDefiningOp<CastOp>())
      if (getElementTypeOrSelf(down.getType()).isBF16() &&
          getElementTypeOrSelf(down.getInput().getType()).isF32())
        source = down.getResult();
  // Output rows in whole tiles of 16 columns, where that adds at most a
  // quarter: the columns past the output read zeros padded beyond the input
  // and are dropped.
  int64_t wideColumns = llvm::alignTo(ow, kTileRows);
  bool inPlace = 4 * (wideColumns - ow) <= wideColumns;
  int64_t rows = n * oh * ow, depth = kh * kw * c;
  if (!inPlace && rows % kTileRows != 0)
    return std::nullopt;
  SmallVector<int64_t> inputPadding(padding);
  if (inPlace)
    inputPadding[3] += wideColumns - ow;
  Value channelsLast = padSpatial(
      b, loc,
      roundedInto(source, {n, xt.getDimSize(2), xt.getDimSize(3), c}, {d(0), d(3), d(1), d(2)}), 1,
      inputPadding, floatConst(b, loc, bf16, 0.0));
  // The weight in the windows' order: [kh, kw, c, f].
  Value filter = roundedInto(weight, {kh, kw, c, f}, {d(3), d(2), d(0), d(1)});
  Value sums;
  if (inPlace) {
    // Channels in pairs, the pair last: the input [n, hp, wp, c / 2, 2],
    // the weight as AMX's B tiles take it, [kh, kw, c / 2, f, 2] (each
    // output channel's pair of input channels together).
    int64_t hp = xt.getDimSize(2) + padding[0] + padding[1], wp = wideColumns + kw - 1;
    Value inputPairs = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({n, hp, wp, c / 2, 2}, bf16), channelsLast,
        SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
    Value filterPairs = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({kh, kw, c / 2, 2, f}, bf16), filter,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
    Value packed = linalg::TransposeOp::create(
                       b, loc, filterPairs,
                       tensor::EmptyOp::create(b, loc, {kh, kw, c / 2, f, 2}, bf16).getResult(),
                       SmallVector<int64_t>{0, 1, 2, 4, 3})
                       .getResult()[0];
    // The product reads each window where it lies (an implicit product):
    // for kernel position (i, j), 16 output columns' windows are 16 rows of
    // the input from column x + j, one row of channels apart, which one AMX
    // tile load takes with that stride. Loops n, oh, ow, f, kh, kw, c / 2,
    // pair; mithril-x86-tile-matmuls writes its tiles. (A copy of the
    // windows, 1.8 MB for the bench CNN at batch 16, took 0.08 of its 0.33
    // ms on an Intel Xeon with AMX.)
    auto wideType = RankedTensorType::get({n, oh, wideColumns, f}, f32);
    SmallVector<AffineMap> maps = tileConvMaps(ctx);
    SmallVector<utils::IteratorType> iterators = parallel(4);
    iterators.append(4, utils::IteratorType::reduction);
    auto product = linalg::GenericOp::create(
        b, loc, TypeRange{wideType}, ValueRange{inputPairs, packed}, zeroFilled(b, loc, wideType),
        maps, iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value x = arith::ExtFOp::create(nb, nl, f32, args[0]);
          Value w = arith::ExtFOp::create(nb, nl, f32, args[1]);
          Value sum = arith::AddFOp::create(nb, nl, args[2], arith::MulFOp::create(nb, nl, x, w));
          linalg::YieldOp::create(nb, nl, sum);
        });
    setCpuKernel(product, CpuKernel::TileConv);
    sums = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({n, oh, ow, f}, f32), product.getResult(0),
        indexAttrs(b, {0, 0, 0, 0}), indexAttrs(b, {n, oh, ow, f}), indexAttrs(b, {1, 1, 1, 1}));
  } else {
    // Short rows: one product of the windows copied, [n * oh * ow, kh * kw
    // * c], in rows of 16. The windows: [n, oh, ow, kh, kw, c] =
    // input[n, y + i, x + j, c], one generic whose register tile is one row
    // of channels: every loop but the channels' is then a unit dimension of
    // the tile, dropped, and each tile a vector copy, each window row
    // written whole, in order. (A generic with wider tiles reads at y + i
    // with a scalar loop nest.)
    auto windowType = RankedTensorType::get({n, oh, ow, kh, kw, c}, bf16);
    auto windowRead = AffineMap::get(6, 0, {d(0), d(1) + d(3), d(2) + d(4), d(5)}, ctx);
    auto windowCopy = linalg::GenericOp::create(
        b, loc, windowType, channelsLast,
        tensor::EmptyOp::create(b, loc, windowType.getShape(), bf16).getResult(),
        SmallVector<AffineMap>{windowRead, identity(6)}, parallel(6),
        [](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, args[0]);
        });
    setLoweringConfig(
        windowCopy,
        LoweringConfigAttr::get(ctx, CpuKernel::Default).withRegisterTile({1, 1, 1, 1, 1, c}));
    Value lhs = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({rows, depth}, bf16), windowCopy.getResult(0),
        SmallVector<ReassociationIndices>{{0, 1, 2}, {3, 4, 5}});
    Value rhs =
        tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({depth, f}, bf16), filter,
                                        SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
    Value product = linalg::MatmulOp::create(
                        b, loc, ValueRange{lhs, rhs},
                        ValueRange{zeroFilled(b, loc, RankedTensorType::get({rows, f}, f32))})
                        .getResult(0);
    sums =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({n, oh, ow, f}, f32), product,
                                      SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
  }
  if (!pooled)
    return channelsLastToPlanes(
        b, loc,
        tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({n, oh * ow, f}, f32), sums,
                                        SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}}),
        oh, ow);
  return pooledChannelsLast(b, loc, sums, *pooled);
}

/// The fast lowerings of an ungrouped 2-D convolution and its gradients:
/// flat rows, or phase by phase for strides; nullopt where neither applies.
static std::optional<Value> lowerFastConv(OpBuilder &b, Location loc, Value input, Value weight,
                                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilation, RankedTensorType out,
                                          bool bf16Products) {
  if (std::optional<Value> winograd = lowerWinogradConv(b, loc, input, weight, stride, padding,
                                                        dilation, nullptr, bf16Products))
    return winograd;
  if (auto layout =
          flatConvLayout(tensorType(input), tensorType(weight), stride, padding, dilation))
    return lowerFlatConv(b, loc, input, weight, padding, *layout);
  return lowerPhasedConv(b, loc, input, weight, stride, padding, dilation, out);
}

static std::optional<Value> lowerFastConvGradWeight(OpBuilder &b, Location loc, Value input,
                                                    Value grad, ArrayRef<int64_t> stride,
                                                    ArrayRef<int64_t> padding,
                                                    ArrayRef<int64_t> dilation,
                                                    RankedTensorType out) {
  if (auto layout = flatConvLayout(tensorType(input), out, stride, padding, dilation))
    return lowerFlatConvWeightGrad(b, loc, input, grad, padding, out, *layout);
  return lowerPhasedConvGradWeight(b, loc, input, grad, stride, padding, dilation, out);
}

/// A grouped convolution (or gradient) as one ungrouped one per group, on
/// channel slices: `operands` are sliced along their given dimension into
/// `groups` equal parts, `lower` computes a group's part of `out`, and the
/// parts fill `out` along `outDim`. Only where every group has at least 8
/// input and 8 output channels (a register tile's worth; depthwise
/// convolutions do better in the general form), and every group lowers.
static std::optional<Value>
lowerPerGroup(OpBuilder &b, Location loc, int64_t groups, int64_t inChannels, int64_t outChannels,
              RankedTensorType out, int64_t outDim, ArrayRef<std::pair<Value, int64_t>> operands,
              function_ref<std::optional<Value>(ArrayRef<Value>, RankedTensorType)> lower) {
  if (groups < 2 || inChannels % groups != 0 || outChannels % groups != 0 ||
      inChannels / groups < 8 || outChannels / groups < 8 || !out.hasStaticShape())
    return std::nullopt;
  auto slice = [&](Value v, int64_t dim, int64_t group) {
    RankedTensorType t = tensorType(v);
    SmallVector<int64_t> offsets(t.getRank(), 0), sizes(t.getShape());
    sizes[dim] /= groups;
    offsets[dim] = group * sizes[dim];
    return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(sizes, t.getElementType()),
                                          v, indexAttrs(b, offsets), indexAttrs(b, sizes),
                                          indexAttrs(b, SmallVector<int64_t>(t.getRank(), 1)))
        .getResult();
  };
  SmallVector<int64_t> partShape(out.getShape());
  partShape[outDim] /= groups;
  auto partType = RankedTensorType::get(partShape, out.getElementType());
  Value result = tensor::EmptyOp::create(b, loc, out.getShape(), out.getElementType());
  for (int64_t group = 0; group < groups; ++group) {
    SmallVector<Value> slices;
    for (auto [value, dim] : operands)
      slices.push_back(slice(value, dim, group));
    std::optional<Value> part = lower(slices, partType);
    if (!part)
      return std::nullopt;
    SmallVector<int64_t> offsets(out.getRank(), 0);
    offsets[outDim] = group * partShape[outDim];
    result = tensor::InsertSliceOp::create(b, loc, *part, result, indexAttrs(b, offsets),
                                           indexAttrs(b, partShape),
                                           indexAttrs(b, SmallVector<int64_t>(out.getRank(), 1)));
  }
  return result;
}

/// The 2x2 max pooling of stride 2 that alone reads a 2-D convolution's
/// result, directly or through one ReLU: the Winograd lowering computes it
/// from each block of outputs (PooledBlocks). Mixed precision's roundings of
/// the convolution's and the ReLU's results (a cast to a narrower float and
/// back) may come between; the ReLU's is exact. `between` holds the ops from
/// the convolution to the pooling, in order.
struct PooledConsumer {
  MaxPool2DOp pool;
  ReluOp relu;
  FloatType roundTo;
  SmallVector<Operation *> between;
};

/// The value `v` rounded to a narrower float and back, when that is all its
/// one use does (two casts); null otherwise.
static Value roundedThroughNarrow(Value v, FloatType &narrow) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!v.hasOneUse())
    return Value();
  auto down = dyn_cast<CastOp>(*v.getUsers().begin());
  if (!down || !down.getResult().hasOneUse())
    return Value();
  auto to = dyn_cast<FloatType>(getElementTypeOrSelf(down.getType()));
  auto up = dyn_cast<CastOp>(*down.getResult().getUsers().begin());
  if (!to || !up || up.getType() != type || to.getWidth() >= type.getElementTypeBitWidth())
    return Value();
  narrow = to;
  return up.getResult();
}

static std::optional<PooledConsumer> pooledConsumer(Conv2DOp conv) {
  PooledConsumer consumer;
  Value value = conv.getResult();
  FloatType narrow;
  if (Value rounded = roundedThroughNarrow(value, narrow)) {
    consumer.roundTo = narrow;
    consumer.between.append({*value.getUsers().begin(), rounded.getDefiningOp()});
    value = rounded;
  }
  if (!value.hasOneUse())
    return std::nullopt;
  Operation *user = *value.getUsers().begin();
  if (auto relu = dyn_cast<ReluOp>(user)) {
    if (!relu.getResult().hasOneUse() || relu.getType() != value.getType())
      return std::nullopt;
    consumer.relu = relu;
    consumer.between.push_back(relu);
    value = relu.getResult();
    // A ReLU of a rounded value needs no rounding.
    FloatType again;
    if (Value rounded = roundedThroughNarrow(value, again);
        rounded && consumer.roundTo && again == consumer.roundTo) {
      consumer.between.append({*value.getUsers().begin(), rounded.getDefiningOp()});
      value = rounded;
    }
    user = *value.getUsers().begin();
  }
  auto pool = dyn_cast<MaxPool2DOp>(user);
  auto isZero = [](int64_t v) { return v == 0; };
  if (!pool || pool.getKernelSize() != ArrayRef<int64_t>{2, 2} ||
      pool.getStride() != ArrayRef<int64_t>{2, 2} || !llvm::all_of(pool.getPadding(), isZero) ||
      pool.getDilation() != ArrayRef<int64_t>{1, 1} || !pool.getType().hasStaticShape() ||
      pool.getType().getElementType() != conv.getType().getElementType())
    return std::nullopt;
  consumer.pool = pool;
  return consumer;
}

/// Convolution of any spatial rank with groups, as one linalg.generic over
/// (n, g, f, o..., c, k...). The channel axes are split into (group, channel
/// in group) first so that every loop indexes some operand directly.
template <typename OpT> struct ConvPattern : OpRewritePattern<OpT> {
  ConvPattern(MLIRContext *ctx, bool bf16Products, bool bf16Tiles, unsigned threads)
      : OpRewritePattern<OpT>(ctx), bf16Products(bf16Products), bf16Tiles(bf16Tiles),
        threads(threads) {}
  bool bf16Products, bf16Tiles;
  unsigned threads;
  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), wt = op.getWeight().getType();
    int64_t spatial = out.getRank() - 2;
    int64_t groups = op.getGroups();
    int64_t cg = wt.getDimSize(1), fTotal = wt.getDimSize(0);
    // The one pattern for the op: say why it cannot lower rather than leave
    // the conversion's "failed to legalize".
    if (ShapedType::isDynamic(cg) || ShapedType::isDynamic(fTotal))
      return op.emitOpError("needs static channel counts, but its weight is ")
             << wt << "; give the weight's shape";
    if (llvm::any_of(out.getShape().drop_front(2), ShapedType::isDynamic))
      return op.emitOpError("needs static spatial sizes, but its input is ")
             << op.getInput().getType() << "; only the batch size (axis 0) may be dynamic";
    int64_t fg = fTotal / groups;
    Type et = out.getElementType();
    Value zero = floatConst(rewriter, loc, et, 0.0);
    // Without input elements or channels, every window sums nothing: the
    // output is the bias alone (zero-width inputs with padding have windows).
    if (hasNoElements(op.getInput()) || hasNoElements(op.getWeight()) ||
        hasNoElements(op.getResult())) {
      SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, op.getInput(), 0)};
      for (int64_t i = 1; i < out.getRank(); ++i)
        sizes.push_back(rewriter.getIndexAttr(out.getDimSize(i)));
      Value zeros =
          linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, out, sizes))
              .getResult(0);
      rewriter.replaceOp(op, addChannelBias(rewriter, loc, zeros, op.getBias(), out));
      return success();
    }
    ArrayRef<int64_t> stride = op.getStride(), padding = op.getPadding(),
                      dilation = op.getDilation();
    if constexpr (std::is_same_v<OpT, Conv2DOp>) {
      std::optional<PooledConsumer> consumer = pooledConsumer(op);
      PooledBlocks blocks;
      if (consumer)
        blocks = {op.getBias(), static_cast<bool>(consumer->relu), consumer->roundTo};
      // The pooling's result replaces the pooling, and the convolution and
      // the ops between them go.
      auto replacePooled = [&](Value pooled) {
        rewriter.replaceOp(consumer->pool, pooled);
        for (Operation *between : llvm::reverse(consumer->between))
          rewriter.eraseOp(between);
        rewriter.eraseOp(op);
        return success();
      };
      auto pooledType = [&] { return cast<RankedTensorType>(consumer->pool.getType()); };
      if (bf16Tiles && groups == 1) {
        if (consumer)
          if (std::optional<Value> pooled =
                  lowerTileConv(rewriter, loc, op.getInput(), op.getWeight(), stride, padding,
                                dilation, pooledType(), &blocks))
            return replacePooled(*pooled);
        if (std::optional<Value> tiled = lowerTileConv(rewriter, loc, op.getInput(), op.getWeight(),
                                                       stride, padding, dilation, out)) {
          rewriter.replaceOp(op, addChannelBias(rewriter, loc, *tiled, op.getBias(), out));
          return success();
        }
      }
      if (consumer && groups == 1) {
        if (std::optional<Value> pooled =
                lowerFewChannelPooledConv(rewriter, loc, op.getInput(), op.getWeight(), stride,
                                          padding, dilation, pooledType(), blocks, threads))
          return replacePooled(*pooled);
        std::optional<Value> pooled =
            lowerWinogradConv(rewriter, loc, op.getInput(), op.getWeight(), stride, padding,
                              dilation, &blocks, bf16Products, threads);
        if (pooled && tensorType(*pooled) == pooledType())
          return replacePooled(*pooled);
      }
    }
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerFastConv(rewriter, loc, operands[0], operands[1], stride, padding, dilation, part,
                           bf16Products);
    };
    std::optional<Value> fast =
        groups == 1 ? lowerGroup({op.getInput(), op.getWeight()}, out)
                    : lowerPerGroup(rewriter, loc, groups, cg * groups, fTotal, out, /*outDim=*/1,
                                    {{op.getInput(), 1}, {op.getWeight(), 0}}, lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, addChannelBias(rewriter, loc, *fast, op.getBias(), out));
      return success();
    }
    Value input = padSpatial(rewriter, loc, op.getInput(), 2, op.getPadding(), zero);
    Value groupedInput = splitAxis(rewriter, loc, input, 1, groups);           // [N, G, Cg, S...]
    Value groupedWeight = splitAxis(rewriter, loc, op.getWeight(), 0, groups); // [G, Fg, Cg, K...]
    SmallVector<int64_t> gShape = {out.getDimSize(0), groups, fg};
    SmallVector<OpFoldResult> sizes = {dimOf(rewriter, loc, op.getInput(), 0),
                                       rewriter.getIndexAttr(groups), rewriter.getIndexAttr(fg)};
    for (int64_t i = 0; i < spatial; ++i) {
      gShape.push_back(out.getDimSize(2 + i));
      sizes.push_back(rewriter.getIndexAttr(out.getDimSize(2 + i)));
    }
    auto groupedOut = RankedTensorType::get(gShape, et);
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, emptyTensor(rewriter, loc, groupedOut, sizes))
            .getResult(0);
    // Loops: n, g, f, o_0..o_{s-1}, c, k_0..k_{s-1}
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    AffineExpr n = d(0), g = d(1), f = d(2), c = d(3 + spatial);
    SmallVector<AffineExpr> inE = {n, g, c}, wE = {g, f, c}, oE = {n, g, f};
    for (int64_t i = 0; i < spatial; ++i) {
      AffineExpr o = d(3 + i), k = d(4 + spatial + i);
      inE.push_back(o * op.getStride()[i] + k * op.getDilation()[i]);
      wE.push_back(k);
      oE.push_back(o);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inE, ctx),
                                   AffineMap::get(numLoops, 0, wE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    auto generic = linalg::GenericOp::create(rewriter, loc, TypeRange{groupedOut},
                                             ValueRange{groupedInput, groupedWeight}, init, maps,
                                             iterators, yieldMultiplyAdd);
    // Tells mithril-cpu-schedule the loop layout (it tiles convolutions like
    // matmuls: output channels by output columns).
    setCpuKernel(generic, CpuKernel::ConvSpatial);
    Value result = mergeAxes(rewriter, loc, generic.getResult(0), 1, out);
    rewriter.replaceOp(op, addChannelBias(rewriter, loc, result, op.getBias(), out));
    return success();
  }

  /// result + bias[C_out] broadcast over [N, C_out, spatial...], into a new
  /// tensor of type `out`; `result` itself without a bias.
  static Value addChannelBias(OpBuilder &b, Location loc, Value result, Value bias,
                              RankedTensorType out) {
    if (!bias)
      return result;
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineMap> maps = {AffineMap::get(out.getRank(), 0, getAffineDimExpr(1, ctx)),
                                   b.getMultiDimIdentityMap(out.getRank()),
                                   b.getMultiDimIdentityMap(out.getRank())};
    SmallVector<utils::IteratorType> iterators(out.getRank(), utils::IteratorType::parallel);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < out.getRank(); ++i)
      sizes.push_back(dimOf(b, loc, result, i));
    return linalg::GenericOp::create(b, loc, TypeRange{out}, ValueRange{bias, result},
                                     ValueRange{emptyTensor(b, loc, out, sizes)}, maps, iterators,
                                     [&](OpBuilder &nb, Location l, ValueRange a) {
                                       linalg::YieldOp::create(
                                           nb, l,
                                           arith::AddFOp::create(nb, l, a[1], a[0]).getResult());
                                     })
        .getResult(0);
  }
};

/// Gradient of a convolution's input, in gather form over (n, g, c, i..., f,
/// k...): each input position sums the output gradients whose windows cover
/// it.
struct ConvGradInputPattern : OpRewritePattern<ConvGradInputOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvGradInputOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), gt = op.getGrad().getType(), wt = op.getWeight().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape() || !wt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    // No output gradient or no weights: no gradient reaches the input.
    if (hasNoElements(op.getResult()) || hasNoElements(op.getGrad()) ||
        hasNoElements(op.getWeight())) {
      rewriter.replaceOp(op, zeroFilled(rewriter, loc, out));
      return success();
    }
    int64_t spatial = out.getRank() - 2, groups = op.getGroups();
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerPhasedConvGradInput(rewriter, loc, operands[0], operands[1], op.getStride(),
                                      op.getPadding(), op.getDilation(), part);
    };
    std::optional<Value> fast =
        groups == 1
            ? lowerGroup({op.getGrad(), op.getWeight()}, out)
            : lowerPerGroup(rewriter, loc, groups, out.getDimSize(1), wt.getDimSize(0), out,
                            /*outDim=*/1, {{op.getGrad(), 1}, {op.getWeight(), 0}}, lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, *fast);
      return success();
    }
    int64_t cg = wt.getDimSize(1);
    Type et = out.getElementType();
    Value grad = splitAxis(rewriter, loc, op.getGrad(), 1, groups);     // [N, G, Fg, O...]
    Value weight = splitAxis(rewriter, loc, op.getWeight(), 0, groups); // [G, Fg, Cg, K...]
    SmallVector<int64_t> shape = {out.getDimSize(0), groups, cg};
    llvm::append_range(shape, out.getShape().drop_front(2));
    auto groupedOut = RankedTensorType::get(shape, et);
    Value init = zeroFilled(rewriter, loc, RankedTensorType::get(shape, et));
    // Loops: n, g, c, i_0.., f, k_0..
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> wE = {d(1), d(3 + spatial), d(2)}, oE = {d(0), d(1), d(2)};
    for (int64_t j = 0; j < spatial; ++j) {
      wE.push_back(d(4 + spatial + j));
      oE.push_back(d(3 + j));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, wE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{groupedOut}, ValueRange{weight}, init, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange a) {
              SmallVector<Value> gIdx = {linalg::IndexOp::create(b, l, 0),
                                         linalg::IndexOp::create(b, l, 1),
                                         linalg::IndexOp::create(b, l, 3 + spatial)};
              Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
              for (int64_t j = 0; j < spatial; ++j) {
                auto [o, ok] =
                    windowSource(b, l, linalg::IndexOp::create(b, l, 3 + j),
                                 linalg::IndexOp::create(b, l, 4 + spatial + j), op.getStride()[j],
                                 op.getPadding()[2 * j], op.getDilation()[j], gt.getDimSize(2 + j));
                gIdx.push_back(o);
                valid = arith::AndIOp::create(b, l, valid, ok);
              }
              Value gv = tensor::ExtractOp::create(b, l, grad, gIdx);
              Value prod = arith::MulFOp::create(b, l, gv, a[0]);
              Value contrib = arith::SelectOp::create(b, l, valid, prod, floatConst(b, l, et, 0.0));
              linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, a[1], contrib).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, mergeAxes(rewriter, loc, result, 1, out));
    return success();
  }
};

/// The bf16 tensor that `v` widens to f32 (a cast of mixed precision's
/// values), or null.
static Value widenedBF16(Value v) {
  auto cast = v.getDefiningOp<CastOp>();
  if (!cast || !getElementTypeOrSelf(v.getType()).isF32() ||
      !getElementTypeOrSelf(cast.getInput().getType()).isBF16())
    return Value();
  return cast.getInput();
}

/// Gradient of a convolution's weight over (g, f, c, k..., n, o...).
struct ConvGradWeightPattern : OpRewritePattern<ConvGradWeightOp> {
  ConvGradWeightPattern(MLIRContext *ctx, bool bf16Products)
      : OpRewritePattern<ConvGradWeightOp>(ctx), bf16Products(bf16Products) {}
  bool bf16Products;
  LogicalResult matchAndRewrite(ConvGradWeightOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType out = op.getType(), gt = op.getGrad().getType();
    if (!out.hasStaticShape() || !gt.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes");
    // No inputs or no output gradient (a batch of 0): a zero weight gradient.
    if (hasNoElements(op.getResult()) || hasNoElements(op.getGrad()) ||
        hasNoElements(op.getInput())) {
      rewriter.replaceOp(op, zeroFilled(rewriter, loc, out));
      return success();
    }
    int64_t spatial = out.getRank() - 2, groups = op.getGroups();
    int64_t cg = out.getDimSize(1), fg = out.getDimSize(0) / groups;
    Type et = out.getElementType();
    Value zero = floatConst(rewriter, loc, et, 0.0);
    // Both operands bf16 widened to f32, for a CPU with bf16 dot products:
    // the flat weight gradient multiplies the bf16 values (exactly the
    // products of the widened ones) in pairs of images.
    if (Value input = widenedBF16(op.getInput()), grad = widenedBF16(op.getGrad());
        bf16Products && groups == 1 && input && grad)
      if (auto layout = flatConvLayout(tensorType(input), out, op.getStride(), op.getPadding(),
                                       op.getDilation())) {
        rewriter.replaceOp(
            op, lowerFlatConvWeightGrad(rewriter, loc, input, grad, op.getPadding(), out, *layout));
        return success();
      }
    auto lowerGroup = [&](ArrayRef<Value> operands, RankedTensorType part) {
      return lowerFastConvGradWeight(rewriter, loc, operands[0], operands[1], op.getStride(),
                                     op.getPadding(), op.getDilation(), part);
    };
    std::optional<Value> fast =
        groups == 1
            ? lowerGroup({op.getInput(), op.getGrad()}, out)
            : lowerPerGroup(rewriter, loc, groups, cg * groups, out.getDimSize(0), out,
                            /*outDim=*/0, {{op.getInput(), 1}, {op.getGrad(), 1}}, lowerGroup);
    if (fast) {
      rewriter.replaceOp(op, *fast);
      return success();
    }
    Value input = padSpatial(rewriter, loc, op.getInput(), 2, op.getPadding(), zero);
    input = splitAxis(rewriter, loc, input, 1, groups);             // [N, G, Cg, S...]
    Value grad = splitAxis(rewriter, loc, op.getGrad(), 1, groups); // [N, G, Fg, O...]
    SmallVector<int64_t> shape = {groups, fg, cg};
    llvm::append_range(shape, out.getShape().drop_front(2));
    auto groupedOut = RankedTensorType::get(shape, et);
    Value init = zeroFilled(rewriter, loc, RankedTensorType::get(shape, et));
    // Loops: g, f, c, k_0.., n, o_0..
    int64_t numLoops = 3 + spatial + 1 + spatial;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    AffineExpr n = d(3 + spatial);
    SmallVector<AffineExpr> inE = {n, d(0), d(2)}, gE = {n, d(0), d(1)}, oE = {d(0), d(1), d(2)};
    for (int64_t j = 0; j < spatial; ++j) {
      AffineExpr k = d(3 + j), o = d(4 + spatial + j);
      inE.push_back(o * op.getStride()[j] + k * op.getDilation()[j]);
      gE.push_back(o);
      oE.push_back(k);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inE, ctx),
                                   AffineMap::get(numLoops, 0, gE, ctx),
                                   AffineMap::get(numLoops, 0, oE, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + spatial, utils::IteratorType::parallel);
    iterators.append(1 + spatial, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(rewriter, loc, TypeRange{groupedOut}, ValueRange{input, grad},
                                  init, maps, iterators, yieldMultiplyAdd)
            .getResult(0);
    rewriter.replaceOp(op, mergeAxes(rewriter, loc, result, 0, out));
    return success();
  }
};

} // namespace

void linalg_lowering::populateConvolutionPatterns(RewritePatternSet &patterns, bool bf16Products,
                                                  bool bf16Tiles, unsigned threads) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ConvPattern<Conv1DOp>, ConvPattern<Conv2DOp>>(ctx, bf16Products, bf16Tiles, threads);
  patterns.add<ConvGradInputPattern>(ctx);
  patterns.add<ConvGradWeightPattern>(ctx, bf16Products);
}
