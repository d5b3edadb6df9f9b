//===- Winograd.cpp - 3x3 convolutions by Winograd's F(2x2, 3x3) ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// A stride-1 3x3 convolution computes each 2x2 block of outputs from a 4x4
// block of its input with 16 multiplications per channel pair instead of 36
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"):
//
//   Y = A^T [ (G g G^T) .* (B^T d B) ] A,   summed over input channels,
//
// so the products become 16 independent [F x C] x [C x tiles] matmuls, one per
// point of the 4x4 transformed block, which run on the flat convolution's
// register tiles (CpuKernel::ConvFlat with a 1x1 kernel), or with
// bf16Products on the packed matmul's bf16 dot-product tiles, the transformed
// operands rounded to bf16. The transforms are additions (and halvings of the
// weights), elementwise over tiles.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/LoweringConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

/// Points of the transformed 4x4 block, and outputs of a tile per side.
constexpr int64_t kPoints = 4, kOutputs = 2;

/// The fewest output channels for which a float32 convolution that no
/// pooling follows pays for its transforms: the input transform's cost grows
/// with the input channels and the products' saving with both, so few output
/// channels lose. 3x3 convolutions at batch 16 on 14 x 14 images, one core
/// of an AVX-512 Xeon, Winograd / flat rows: 64 -> 32 channels 1.10 / 0.92
/// ms (AVX2 code 1.53 / 1.44), 32 -> 64 0.75 / 0.89 (1.16 / 1.40), 64 -> 128
/// at batch 8 on 28 x 28 5.0 / 7.3 (docs/performance.md, thirty-third
/// session, has more shapes); a CNN training step whose forward (32 ->
/// 64) and input gradient (64 -> 32) were both Winograd's 4.45 -> 4.15 ms
/// with the gradient on flat rows, and 0.1 s less to compile. (A pooled one
/// keeps its blocks in the cache and wins at 32 channels too.)
constexpr int64_t kMinUnpooledFilters = 64;

/// Columns of a panel of bf16 products: the dot-product register tile's (8 x
/// 32).
constexpr int64_t kBF16Panel = 32;

/// Scalar arithmetic in the transforms' bodies.
struct Arith {
  OpBuilder &b;
  Location loc;
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value half(Value x) {
    return arith::MulFOp::create(b, loc, x, floatConst(b, loc, x.getType(), 0.5));
  }
};

using Transform1D = SmallVector<Value> (*)(Arith &, ArrayRef<Value>);

/// G g: the 3 taps of a kernel row or column to 4 points.
SmallVector<Value> filterTransform(Arith &a, ArrayRef<Value> g) {
  Value outer = a.half(a.add(g[0], g[2])), middle = a.half(g[1]);
  return {g[0], a.add(outer, middle), a.sub(outer, middle), g[2]};
}

/// B^T d: 4 inputs to 4 points.
SmallVector<Value> inputTransform(Arith &a, ArrayRef<Value> d) {
  return {a.sub(d[0], d[2]), a.add(d[1], d[2]), a.sub(d[2], d[1]), a.sub(d[1], d[3])};
}

/// A^T m: 4 points to 2 outputs.
SmallVector<Value> outputTransform(Arith &a, ArrayRef<Value> m) {
  return {a.add(a.add(m[0], m[1]), m[2]), a.sub(a.sub(m[1], m[2]), m[3])};
}

/// T x T^T for a size x size block `x` (row-major) and a 1-D transform T
/// from `size` values to `out` values: `out` x `out` values, row-major.
SmallVector<Value> transform2D(Arith &a, ArrayRef<Value> x, int64_t size, Transform1D t) {
  // Columns first: T applied to each column gives `out` rows.
  SmallVector<SmallVector<Value>> columns;
  for (int64_t j = 0; j < size; ++j) {
    SmallVector<Value> column;
    for (int64_t i = 0; i < size; ++i)
      column.push_back(x[i * size + j]);
    columns.push_back(t(a, column));
  }
  int64_t out = columns.front().size();
  SmallVector<Value> result;
  for (int64_t i = 0; i < out; ++i) {
    SmallVector<Value> row;
    for (int64_t j = 0; j < size; ++j)
      row.push_back(columns[j][i]);
    llvm::append_range(result, t(a, row));
  }
  return result;
}

/// A generic over `loops` parallel loops whose body maps the scalars of
/// `inputs` (read through `inputMaps`) to one scalar per output, each written
/// into its init of `inits` through the identity; the results.
SmallVector<Value> buildPointwise(OpBuilder &b, Location loc, int64_t loops, ValueRange inputs,
                                  ArrayRef<AffineMap> inputMaps, ValueRange inits,
                                  function_ref<SmallVector<Value>(Arith &, ValueRange)> body) {
  SmallVector<Type> types(inits.getTypes());
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(inits.size(), b.getMultiDimIdentityMap(loops));
  SmallVector<utils::IteratorType> iterators(loops, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(b, loc, types, inputs, inits, maps, iterators,
                                           [&](OpBuilder &nb, Location nl, ValueRange args) {
                                             Arith a{nb, nl};
                                             linalg::YieldOp::create(
                                                 nb, nl, body(a, args.take_front(inputs.size())));
                                           });
  return SmallVector<Value>(generic.getResults());
}

/// max(relu(A^T m A + bias)) over the 2x2 block of outputs of the 16
/// points `m` (then the bias, where `pooled` has one): relu and the bias
/// commute with max.
Value pooledBlock(Arith &a, ValueRange m, const PooledBlocks &pooled) {
  SmallVector<Value> y =
      transform2D(a, llvm::to_vector(m.take_front(kPoints * kPoints)), kPoints, outputTransform);
  auto max = [&](Value x, Value z) {
    return arith::MaximumFOp::create(a.b, a.loc, x, z).getResult();
  };
  Value block = max(max(y[0], y[1]), max(y[2], y[3]));
  if (m.size() > kPoints * kPoints)
    block = a.add(block, m.back());
  // Rounding is monotone: the pooling of rounded values is the rounded
  // pooling.
  if (pooled.roundTo)
    block = arith::ExtFOp::create(
        a.b, a.loc, block.getType(),
        arith::TruncFOp::create(a.b, a.loc, pooled.roundTo, block).getResult());
  if (pooled.relu)
    block = max(block, floatConst(a.b, a.loc, block.getType(), 0.0));
  return block;
}

/// Empty tensors of `type`, `count` of them.
SmallVector<Value> emptyTensors(OpBuilder &b, Location loc, RankedTensorType type, int64_t count) {
  SmallVector<Value> empties;
  for (int64_t i = 0; i < count; ++i)
    empties.push_back(tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()));
  return empties;
}

/// Output (i, j) of a tile's four outputs `y` (row-major), i and j the
/// indices of loops `iLoop` and `jLoop`: the value a grid of tiles
/// interleaved with their outputs takes there.
Value tileOutput(Arith &a, ValueRange y, unsigned iLoop, unsigned jLoop) {
  Value i = linalg::IndexOp::create(a.b, a.loc, iLoop),
        j = linalg::IndexOp::create(a.b, a.loc, jLoop);
  Value zeroIndex = arith::ConstantIndexOp::create(a.b, a.loc, 0);
  Value top = arith::CmpIOp::create(a.b, a.loc, arith::CmpIPredicate::eq, i, zeroIndex);
  Value left = arith::CmpIOp::create(a.b, a.loc, arith::CmpIPredicate::eq, j, zeroIndex);
  Value upper = arith::SelectOp::create(a.b, a.loc, left, y[0], y[1]);
  Value lower = arith::SelectOp::create(a.b, a.loc, left, y[2], y[3]);
  return arith::SelectOp::create(a.b, a.loc, top, upper, lower);
}

/// The stacked points `stack` [16, k, columns] (k even, columns whole
/// panels) as the dot-product tiles' packed operand: each panel of columns
/// with its pairs along k interleaved, [16, columns / panel, k / 2, panel,
/// 2], so that a tile's step reads one contiguous row of pairs.
Value pairPanels(OpBuilder &b, Location loc, Value stack) {
  RankedTensorType type = tensorType(stack);
  int64_t k = type.getDimSize(1), panels = type.getDimSize(2) / kBF16Panel;
  Type et = type.getElementType();
  Value split = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({kPoints * kPoints, k / 2, 2, panels, kBF16Panel}, et), stack,
      SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4}});
  Value packed = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{kPoints * kPoints, panels, k / 2, kBF16Panel, 2}, et);
  return linalg::TransposeOp::create(b, loc, split, packed, ArrayRef<int64_t>{0, 3, 1, 4, 2})
      .getResult()[0];
}

/// The 16 points' products of `rows` [16, m, k / 2, 2] (pairs along k) by
/// the packed `panels` [16, n / panel, k / 2, panel, 2] (pairPanels), in
/// `accumulator` sums, [16, m, n / panel, panel]: loops (p, m, panel,
/// column, k / 2, pair), the packed matmul's dot-product register tiles
/// (vdpbf16ps, or AMX tiles) after their unit loops drop.
Value pairProducts(OpBuilder &b, Location loc, Value rows, Value panels, Type accumulator) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  RankedTensorType rowsType = tensorType(rows), panelsType = tensorType(panels);
  auto type = RankedTensorType::get(
      {kPoints * kPoints, rowsType.getDimSize(1), panelsType.getDimSize(1), kBF16Panel},
      accumulator);
  SmallVector<AffineMap> maps = {AffineMap::get(6, 0, {d(0), d(1), d(4), d(5)}, ctx),
                                 AffineMap::get(6, 0, {d(0), d(2), d(4), d(3), d(5)}, ctx),
                                 AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx)};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{rows, panels}, zeroFilled(b, loc, type), maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, nl, accumulator, args[0]);
        Value y = arith::ExtFOp::create(nb, nl, accumulator, args[1]);
        Value product = arith::MulFOp::create(nb, nl, x, y);
        linalg::YieldOp::create(nb, nl,
                                arith::AddFOp::create(nb, nl, args[2], product).getResult());
      });
  setCpuKernel(generic, CpuKernel::PackedMatmul);
  return generic.getResult(0);
}

/// `values` rounded to `pointType` where it is not theirs (bf16 for bf16
/// products).
SmallVector<Value> roundPoints(Arith &a, Type pointType, SmallVector<Value> values) {
  for (Value &v : values)
    if (v.getType() != pointType)
      v = arith::TruncFOp::create(a.b, a.loc, pointType, v);
  return values;
}

/// The grid `shape` of 6 loops whose element at loops (iLoop, jLoop) = (i, j)
/// of a tile is that tile's output (i, j), each of the four `outputs` read
/// through `map`.
Value interleaveOutputs(OpBuilder &b, Location loc, ValueRange outputs, ArrayRef<int64_t> shape,
                        AffineMap map, unsigned iLoop, unsigned jLoop) {
  auto gridType = RankedTensorType::get(shape, tensorType(outputs.front()).getElementType());
  SmallVector<AffineMap> maps(outputs.size(), map);
  return buildPointwise(b, loc, 6, outputs, maps, emptyTensors(b, loc, gridType, 1),
                        [&](Arith &a, ValueRange y) -> SmallVector<Value> {
                          return {tileOutput(a, y, iLoop, jLoop)};
                        })[0];
}

/// G g G^T of each 3x3 kernel of `weight` [F, C, 3, 3]: the 16 points, each
/// [F, C] (loops f, c), or [C, F] with `channelsFirst` (loops c, f), in
/// `pointType`, each point through `round` where given (to bf16).
SmallVector<Value>
filterPoints(OpBuilder &b, Location loc, Value weight, bool channelsFirst, Type pointType,
             function_ref<SmallVector<Value>(Arith &, SmallVector<Value>)> round = nullptr) {
  RankedTensorType wt = tensorType(weight);
  int64_t f = wt.getDimSize(0), c = wt.getDimSize(1);
  SmallVector<int64_t> pointShape =
      channelsFirst ? SmallVector<int64_t>{c, f} : SmallVector<int64_t>{f, c};
  // The taps [a, 3, 3, b] for points [a, b]: one transpose of the weight,
  // then each tap a matrix whose rows are contiguous, read as vectors along
  // b. Channels first, [f, c * 9] transposed 2-D (16 x 16 blocks in
  // registers) to [c * 9, f]; in planes, each filter's [c, 9] to [9, c].
  // (Read at constant positions of [f, c, 3, 3], the taps were 9 strided
  // reads per element: LLVM gathered them with AVX-512 and left the loop
  // scalar with AVX2, the bench CNN's filter transform 0.10 ms there against
  // 0.01, channels first and in planes, its training step's.)
  Type et = wt.getElementType();
  Value grouped, empty;
  SmallVector<int64_t> permutation;
  SmallVector<ReassociationIndices> tapDims;
  if (channelsFirst) {
    grouped = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({f, c * 9}, et), weight,
                                              ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
    empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{c * 9, f}, et);
    permutation = {1, 0};
    tapDims = {{0, 1, 2}, {3}};
  } else {
    grouped = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({f, c, 9}, et), weight,
                                              ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{f, 9, c}, et);
    permutation = {0, 2, 1};
    tapDims = {{0}, {1, 2}, {3}};
  }
  Value transposed =
      linalg::TransposeOp::create(b, loc, grouped, empty, permutation).getResult()[0];
  int64_t rows = pointShape[0], columns = pointShape[1];
  Value tapsLast = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({rows, 3, 3, columns}, et), transposed, tapDims);
  auto tapType = RankedTensorType::get({rows, columns}, et);
  SmallVector<Value> taps;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      taps.push_back(tensor::ExtractSliceOp::create(
          b, loc, tapType, tapsLast,
          SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(i), b.getIndexAttr(j),
                                    b.getIndexAttr(0)},
          SmallVector<OpFoldResult>{b.getIndexAttr(rows), b.getIndexAttr(1), b.getIndexAttr(1),
                                    b.getIndexAttr(columns)},
          SmallVector<OpFoldResult>(4, b.getIndexAttr(1))));
  SmallVector<AffineMap> maps(taps.size(), b.getMultiDimIdentityMap(2));
  auto pointTensor = RankedTensorType::get(pointShape, pointType);
  return buildPointwise(b, loc, 2, taps, maps, emptyTensors(b, loc, pointTensor, kPoints * kPoints),
                        [&](Arith &a, ValueRange g) {
                          SmallVector<Value> points =
                              transform2D(a, llvm::to_vector(g), 3, filterTransform);
                          return round ? round(a, points) : points;
                        });
}

/// The 16 points `parts` (each of one shape) stacked into one tensor [16,
/// shape...], the batch of the products, its last dimension zero-padded to
/// `lastSize` where that is larger (the zeros written in place, not the stack
/// copied into a padded one). (A copy of each: written in place, a slice of
/// the stack as each point's output was turned back into an empty tensor by
/// the fusion's cleanups, and the 16 empties merged.)
Value stackPoints(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t lastSize = 0) {
  RankedTensorType part = tensorType(parts.front());
  SmallVector<int64_t> shape = {static_cast<int64_t>(parts.size())};
  llvm::append_range(shape, part.getShape());
  int64_t last = shape.back();
  shape.back() = std::max(last, lastSize);
  Value stack = tensor::EmptyOp::create(b, loc, shape, part.getElementType());
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)}, strides(shape.size(), b.getIndexAttr(1));
  for (int64_t d : part.getShape())
    sizes.push_back(b.getIndexAttr(d));
  for (auto [p, value] : llvm::enumerate(parts)) {
    SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
    offsets[0] = b.getIndexAttr(p);
    stack = tensor::InsertSliceOp::create(b, loc, value, stack, offsets, sizes, strides);
  }
  if (shape.back() > last) {
    SmallVector<int64_t> tailShape(shape);
    tailShape.back() = shape.back() - last;
    Value zero = floatConst(b, loc, part.getElementType(), 0.0);
    Value empty = tensor::EmptyOp::create(b, loc, tailShape, part.getElementType());
    Value tail = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0));
    offsets.back() = b.getIndexAttr(last);
    SmallVector<OpFoldResult> tailSizes;
    for (int64_t d : tailShape)
      tailSizes.push_back(b.getIndexAttr(d));
    stack = tensor::InsertSliceOp::create(b, loc, tail, stack, offsets, tailSizes, strides);
  }
  return stack;
}

/// `v` collapsed to `shape` by `reassociation`.
Value collapse(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape,
               ArrayRef<ReassociationIndices> reassociation) {
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  return tensor::CollapseShapeOp::create(b, loc, type, v, reassociation);
}

/// The whole tiles' output planes [n, f, gh, gw] cut to the convolution's
/// [n, f, oh, ow] (as they are where the tiles cover it exactly).
Value cropToOutput(OpBuilder &b, Location loc, Value whole, int64_t oh, int64_t ow) {
  RankedTensorType type = tensorType(whole);
  ArrayRef<int64_t> shape = type.getShape();
  if (shape[2] == oh && shape[3] == ow)
    return whole;
  SmallVector<int64_t> sizes = {shape[0], shape[1], oh, ow};
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(sizes, type.getElementType()),
                                        whole, indexAttrs(b, {0, 0, 0, 0}), indexAttrs(b, sizes),
                                        indexAttrs(b, {1, 1, 1, 1}));
}

/// The convolution channels-last, pooled: the input [n, h, w, c] (a
/// transpose of planes that mithril-fuse-elementwise cancels where the input
/// was channels-last before), each transform a generic over vectors of
/// channels, the products one batch matmul of the 16 points [tiles, c] x [c,
/// f], and the pooled [tiles, f] transposed to planes. In planes, the input
/// transform read 7-column rows of parity planes split from the padded input
/// by a transpose of their own. With `bf16Products` (f a multiple of the
/// panel), the transformed operands are rounded to bf16 and the products run
/// on the dot-product register tiles: the points [tiles, c] are their rows,
/// pairs of channels read in place, and only the filters are packed into
/// pairs (in planes, the 16 points of the input were stacked into a padded
/// tensor by copies, then packed into pairs: the bf16 CNN's input transform
/// took 82 us against float32's 19). Without `pooled` (bf16 products only),
/// the [oh, ow] output of each tile's four values interleaved channels-last,
/// then transposed to planes (the bench CNN's gradients in mixed bf16, on a
/// Zen 5 core: 1.97 -> 1.64 ms).
Value winogradChannelsLast(OpBuilder &b, Location loc, Value input, Value weight,
                           ArrayRef<int64_t> padding, int64_t th, int64_t tw, int64_t oh,
                           int64_t ow, const PooledBlocks *pooled, unsigned threads,
                           bool bf16Products) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType xt = tensorType(input), wt = tensorType(weight);
  Type et = xt.getElementType();
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2), w = xt.getDimSize(3);
  int64_t f = wt.getDimSize(0), tiles = n * th * tw;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  Location convLoc = loc;
  auto stage = [&](StringRef name) {
    loc = FusedLoc::get(ctx, {convLoc, NameLoc::get(StringAttr::get(ctx, name))});
  };

  // The transformed operands' type: f32, or bf16 for bf16 products.
  Type pointType = bf16Products ? Type(b.getBF16Type()) : et;
  auto narrow = [&](Arith &a, SmallVector<Value> values) {
    return roundPoints(a, pointType, std::move(values));
  };

  // U[p, c, f] = G g G^T, loops (c, f); bf16: each panel of the register
  // tiles' columns with its channel pairs interleaved, [p, f / panel, c /
  // 2, panel, 2].
  stage("winograd filter transform");
  Value filters =
      stackPoints(b, loc, filterPoints(b, loc, weight, /*channelsFirst=*/true, pointType, narrow));
  if (bf16Products)
    filters = pairPanels(b, loc, filters);

  // V[p, tiles, c] = B^T d B. The input channels-last, padded to whole
  // tiles and one more row and column, [n, th + 1, 2, tw + 1, 2, c]: block
  // element (i, j) of tile (ty, tx) is [n, ty + i / 2, i % 2, tx + j / 2,
  // j % 2, c], a strided view whose rows are vectors of channels.
  stage("winograd input transform");
  Value points;
  {
    auto clType = RankedTensorType::get({n, h, w, c}, et);
    Value channelsLast = buildPointwise(
        b, loc, 4, ValueRange{input}, {AffineMap::get(4, 0, {d(0), d(3), d(1), d(2)}, ctx)},
        emptyTensors(b, loc, clType, 1),
        [](Arith &, ValueRange x) { return SmallVector<Value>{x[0]}; })[0];
    int64_t below = 2 * th + 2 - h - padding[0];
    int64_t right = 2 * tw + 2 - w - padding[2];
    Value padded = padSpatial(b, loc, channelsLast, 1, {padding[0], below, padding[2], right},
                              floatConst(b, loc, et, 0.0));
    Value halves = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({n, th + 1, 2, tw + 1, 2, c}, et), padded,
        SmallVector<ReassociationIndices>{{0}, {1, 2}, {3, 4}, {5}});
    auto blockType = RankedTensorType::get({n, th, tw, c}, et);
    auto pointBlockType = RankedTensorType::get({n, th, tw, c}, pointType);
    SmallVector<Value> blocks;
    for (int64_t i = 0; i < kPoints; ++i)
      for (int64_t j = 0; j < kPoints; ++j)
        blocks.push_back(tensor::ExtractSliceOp::create(
            b, loc, blockType, halves, indexAttrs(b, {0, i / 2, i % 2, j / 2, j % 2, 0}),
            indexAttrs(b, {n, th, 1, tw, 1, c}), indexAttrs(b, {1, 1, 1, 1, 1, 1})));
    SmallVector<AffineMap> maps(kPoints * kPoints, b.getMultiDimIdentityMap(4));
    SmallVector<Value> parts;
    for (Value v : buildPointwise(
             b, loc, 4, blocks, maps, emptyTensors(b, loc, pointBlockType, kPoints * kPoints),
             [&](Arith &a, ValueRange x) {
               return narrow(a, transform2D(a, llvm::to_vector(x), kPoints, inputTransform));
             }))
      parts.push_back(collapse(b, loc, v, {tiles, c}, {{0, 1, 2}, {3}}));
    points = stackPoints(b, loc, parts);
  }

  // M[p, rows, f] = V[p, rows] U[p], then P[rows, f] from the 16 points of
  // each row: the products and the pooled output transform of `rows` tiles.
  Location productsLoc =
      FusedLoc::get(ctx, {convLoc, NameLoc::get(StringAttr::get(ctx, "winograd products"))});
  Location outputLoc = FusedLoc::get(
      ctx, {convLoc, NameLoc::get(StringAttr::get(ctx, "winograd output transform"))});
  auto productsOf = [&](OpBuilder &nb, Value pointRows, int64_t rows) -> Value {
    if (bf16Products) {
      // Loops (p, row, panel, column, c / 2, pair): per point, the rows'
      // channel pairs times the filters' panels, f32 sums: the packed
      // matmul's dot-product register tiles (vdpbf16ps).
      Value pairs = tensor::ExpandShapeOp::create(
          nb, productsLoc, RankedTensorType::get({kPoints * kPoints, rows, c / 2, 2}, pointType),
          pointRows, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
      return collapse(nb, productsLoc, pairProducts(nb, productsLoc, pairs, filters, et),
                      {kPoints * kPoints, rows, f}, {{0}, {1}, {2, 3}});
    }
    auto productsType = RankedTensorType::get({kPoints * kPoints, rows, f}, et);
    return linalg::BatchMatmulOp::create(nb, productsLoc, TypeRange{productsType},
                                         ValueRange{pointRows, filters},
                                         ValueRange{zeroFilled(nb, productsLoc, productsType)})
        .getResult(0);
  };
  // The 16 points' [rows, f] slices of the products.
  auto pointSlices = [&](OpBuilder &nb, Value products, int64_t rows) {
    SmallVector<Value> slices;
    for (int64_t p = 0; p < kPoints * kPoints; ++p)
      slices.push_back(tensor::ExtractSliceOp::create(
          nb, outputLoc, RankedTensorType::get({rows, f}, et), products, indexAttrs(nb, {p, 0, 0}),
          indexAttrs(nb, {1, rows, f}), indexAttrs(nb, {1, 1, 1})));
    return slices;
  };
  if (!pooled) {
    // Unpooled: the products whole (the schedule splits them by points), the
    // four outputs of each tile interleaved channels-last, [n, th, 2, tw, 2,
    // f], then transposed to planes and cut to the output's size.
    SmallVector<Value> rows = pointSlices(b, productsOf(b, points, tiles), tiles);
    SmallVector<AffineMap> maps(kPoints * kPoints, b.getMultiDimIdentityMap(2));
    SmallVector<Value> outputs;
    for (Value y : buildPointwise(
             b, outputLoc, 2, rows, maps,
             emptyTensors(b, outputLoc, RankedTensorType::get({tiles, f}, et), kOutputs * kOutputs),
             [](Arith &a, ValueRange m) {
               return transform2D(a, llvm::to_vector(m), kPoints, outputTransform);
             }))
      outputs.push_back(
          tensor::ExpandShapeOp::create(b, outputLoc, RankedTensorType::get({n, th, tw, f}, et), y,
                                        SmallVector<ReassociationIndices>{{0, 1, 2}, {3}}));
    // Loops n, ty, i, tx, j, f; output (i, j) of tile (n, ty, tx).
    Value grid = interleaveOutputs(b, outputLoc, outputs, {n, th, kOutputs, tw, kOutputs, f},
                                   AffineMap::get(6, 0, {d(0), d(1), d(3), d(5)}, ctx), 2, 4);
    int64_t gh = th * kOutputs, gw = tw * kOutputs;
    Value whole = channelsLastToPlanes(
        b, outputLoc, collapse(b, outputLoc, grid, {n, gh * gw, f}, {{0}, {1, 2, 3, 4}, {5}}), gh,
        gw);
    return cropToOutput(b, outputLoc, whole, oh, ow);
  }
  auto productsAndPooling = [&](OpBuilder &nb, Value pointRows, int64_t rows) -> Value {
    SmallVector<Value> inputs = pointSlices(nb, productsOf(nb, pointRows, rows), rows);
    SmallVector<AffineMap> maps(kPoints * kPoints, nb.getMultiDimIdentityMap(2));
    if (pooled->bias) {
      inputs.push_back(pooled->bias);
      maps.push_back(AffineMap::get(2, 0, {d(1)}, ctx));
    }
    return buildPointwise(nb, outputLoc, 2, inputs, maps,
                          emptyTensors(nb, outputLoc, RankedTensorType::get({rows, f}, et), 1),
                          [&](Arith &a, ValueRange m) -> SmallVector<Value> {
                            return {pooledBlock(a, m, *pooled)};
                          })[0];
  };
  // P[tiles, f] as planes [n, f, th, tw].
  auto finish = [&](Value pooledRows) {
    Value perImage =
        tensor::ExpandShapeOp::create(b, outputLoc, RankedTensorType::get({n, th * tw, f}, et),
                                      pooledRows, SmallVector<ReassociationIndices>{{0, 1}, {2}});
    return channelsLastToPlanes(b, outputLoc, perImage, th, tw);
  };
  // In blocks of tiles: the products' block of rows, [16, rows, f], stays in
  // the cache for the output transform (whole, the bench CNN's 3.2 MB of
  // products went to L3 and back). With threads, each takes a contiguous
  // chunk of blocks, the tiles whose inputs its share of the input
  // transform wrote. Blocks of whole 8-row register tiles, at least 16 rows
  // (the 16 points' filters, 128 KB for the bench CNN, are read from the L2
  // once a block).
  // Where the tiles do not divide so, the products stay whole (and the
  // schedule splits them across threads by points).
  int64_t chunks = threads, chunkRows = chunks ? tiles / chunks : 0, blockRows = 0;
  for (int64_t rows = 64; chunks && tiles % chunks == 0 && rows >= 16 && !blockRows; rows -= 8)
    if (chunkRows % rows == 0 && (chunks > 1 || chunkRows / rows >= 2))
      blockRows = rows;
  if (!blockRows)
    return finish(productsAndPooling(b, points, tiles));
  // The blocks of the chunk from `first`, into `out`.
  auto chunkOfBlocks = [&](OpBuilder &nb, Value first, Value out) -> Value {
    auto loop = scf::ForOp::create(
        nb, productsLoc, arith::ConstantIndexOp::create(nb, productsLoc, 0),
        arith::ConstantIndexOp::create(nb, productsLoc, chunkRows),
        arith::ConstantIndexOp::create(nb, productsLoc, blockRows), ValueRange{out},
        [&](OpBuilder &lb, Location, Value offset, ValueRange acc) {
          Value row = arith::AddIOp::create(lb, productsLoc, first, offset);
          Value pointRows = tensor::ExtractSliceOp::create(
              lb, productsLoc, RankedTensorType::get({kPoints * kPoints, blockRows, c}, pointType),
              points, ArrayRef<OpFoldResult>{lb.getIndexAttr(0), row, lb.getIndexAttr(0)},
              indexAttrs(lb, {kPoints * kPoints, blockRows, c}), indexAttrs(lb, {1, 1, 1}));
          Value block = productsAndPooling(lb, pointRows, blockRows);
          Value updated = tensor::InsertSliceOp::create(
              lb, outputLoc, block, acc[0], ArrayRef<OpFoldResult>{offset, lb.getIndexAttr(0)},
              indexAttrs(lb, {blockRows, f}), indexAttrs(lb, {1, 1}));
          scf::YieldOp::create(lb, outputLoc, updated);
        });
    return loop.getResult(0);
  };
  Value out = tensor::EmptyOp::create(b, outputLoc, ArrayRef<int64_t>{tiles, f}, et);
  return finish(inParallelChunks(b, productsLoc, out, chunks, chunkOfBlocks));
}

} // namespace

std::optional<Value> linalg_lowering::lowerWinogradConv(OpBuilder &b, Location loc, Value input,
                                                        Value weight, ArrayRef<int64_t> stride,
                                                        ArrayRef<int64_t> padding,
                                                        ArrayRef<int64_t> dilation,
                                                        const PooledBlocks *pooled,
                                                        bool bf16Products, unsigned threads) {
  auto isOne = [](int64_t v) { return v == 1; };
  if (!llvm::all_of(stride, isOne) || !llvm::all_of(dilation, isOne))
    return std::nullopt;
  RankedTensorType xt = tensorType(input), wt = tensorType(weight);
  // f32 only: the transforms' roundings are within a few ulps of the direct
  // sum, which f64 users comparing to 1e-12 would notice.
  if (xt.getRank() != 4 || !xt.hasStaticShape() || !wt.hasStaticShape() || padding.size() != 4 ||
      !xt.getElementType().isF32() || wt.getDimSize(2) != 3 || wt.getDimSize(3) != 3)
    return std::nullopt;
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), f = wt.getDimSize(0);
  int64_t oh = xt.getDimSize(2) + padding[0] + padding[1] - 2;
  int64_t ow = xt.getDimSize(3) + padding[2] + padding[3] - 2;
  // The matmuls pay for the transforms only with channels on both sides;
  // each register tile of the flat convolution is 8 output channels.
  if (c < 8 || f < 8 || f % 8 != 0 || oh < 2 || ow < 2)
    return std::nullopt;
  if (pooled && (oh % kOutputs != 0 || ow % kOutputs != 0))
    return std::nullopt;
  // bf16 products multiply pairs of channels.
  if (bf16Products && c % 2 != 0)
    bf16Products = false;
  if (!pooled && !bf16Products && f < kMinUnpooledFilters)
    return std::nullopt;
  int64_t th = llvm::divideCeil(oh, kOutputs), tw = llvm::divideCeil(ow, kOutputs);
  int64_t tiles = n * th * tw;
  // (bf16 products channels-last take whole panels of output channels,
  // pooled or not: unpooled, their four outputs then transpose to planes.)
  if ((pooled && !bf16Products) || (bf16Products && f % kBF16Panel == 0))
    return winogradChannelsLast(b, loc, input, weight, padding, th, tw, oh, ow, pooled, threads,
                                bf16Products);
  // Tiles are the matmuls' columns: a whole number of register tiles, or
  // padded up to one (in bf16, of panels of the dot-product tiles' width).
  int64_t columns = llvm::alignTo(tiles, bf16Products ? kBF16Panel : kConvFlatLanes);
  MLIRContext *ctx = b.getContext();
  Type et = xt.getElementType();
  // The transformed operands' type: f32, or bf16 for bf16 products.
  Type pointType = bf16Products ? Type(b.getBF16Type()) : et;
  auto narrow = [&](Arith &a, SmallVector<Value> values) {
    return roundPoints(a, pointType, std::move(values));
  };
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };

  // Each stage's ops carry its name beside the convolution's, which
  // profiles show per kernel.
  Location convLoc = loc;
  auto stage = [&](StringRef name) {
    loc = FusedLoc::get(ctx, {convLoc, NameLoc::get(StringAttr::get(ctx, name))});
  };
  auto slice = [&](Value v, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                   ArrayRef<int64_t> shape) -> Value {
    return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(shape, et), v,
                                          indexAttrs(b, offsets), indexAttrs(b, sizes),
                                          indexAttrs(b, SmallVector<int64_t>(offsets.size(), 1)));
  };

  // U[p, f, c, 1, 1] = G g G^T for the 16 points p = 4 u + v.
  stage("winograd filter transform");
  Value filters;
  {
    SmallVector<Value> points =
        filterPoints(b, loc, weight, /*channelsFirst=*/false, pointType, narrow);
    // f32: [16, f, c, 1, 1], the flat convolution's weight with a 1x1
    // kernel; bf16: [16, f, c / 2, 2], pairs of channels.
    filters = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get(bf16Products ? ArrayRef<int64_t>{kPoints * kPoints, f, c / 2, 2}
                                           : ArrayRef<int64_t>{kPoints * kPoints, f, c, 1, 1},
                              pointType),
        stackPoints(b, loc, points),
        bf16Products ? SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}
                     : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3, 4}});
  }

  // V[p, c, columns] = B^T d B of each tile's 4x4 input block. Tile (ty,
  // tx) reads rows 2 ty + i and columns 2 tx + j of the input padded to
  // whole tiles; split into its four parity planes [n, c, i % 2, j % 2, th +
  // 1, tw + 1], each of the 16 blocks' elements is a slice of one plane,
  // contiguous along tx, which the transform reads as vectors.
  stage("winograd input transform");
  Value points;
  {
    Value zero = floatConst(b, loc, et, 0.0);
    int64_t below = 2 * th + 2 - xt.getDimSize(2) - padding[0];
    int64_t right = 2 * tw + 2 - xt.getDimSize(3) - padding[2];
    Value padded = padSpatial(b, loc, input, 2, {padding[0], below, padding[2], right}, zero);
    Value halves = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({n, c, th + 1, 2, tw + 1, 2}, et), padded,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}});
    Value planes =
        linalg::TransposeOp::create(
            b, loc, halves,
            tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n, c, 2, 2, th + 1, tw + 1}, et),
            ArrayRef<int64_t>{0, 1, 3, 5, 2, 4})
            .getResult()[0];
    SmallVector<Value> blocks;
    for (int64_t i = 0; i < kPoints; ++i)
      for (int64_t j = 0; j < kPoints; ++j)
        blocks.push_back(slice(planes, {0, 0, i % 2, j % 2, i / 2, j / 2}, {n, c, 1, 1, th, tw},
                               {n, c, th, tw}));
    // Loops c, n, ty, tx: the tiles of a channel are contiguous.
    SmallVector<AffineMap> maps(kPoints * kPoints,
                                AffineMap::get(4, 0, {d(1), d(0), d(2), d(3)}, ctx));
    SmallVector<Value> parts;
    for (Value v : buildPointwise(
             b, loc, 4, blocks, maps,
             emptyTensors(b, loc, RankedTensorType::get({c, n, th, tw}, pointType),
                          kPoints * kPoints),
             [&](Arith &a, ValueRange x) {
               return narrow(a, transform2D(a, llvm::to_vector(x), kPoints, inputTransform));
             }))
      parts.push_back(collapse(b, loc, v, {c, tiles}, {{0}, {1, 2, 3}}));
    // Whole register tiles of columns: the tiles padded with zeros.
    points = stackPoints(b, loc, parts, columns);
    // bf16: panels of the register tiles' columns, each channel pair's
    // columns interleaved, [16, panels, c / 2, panel, 2]: a tile's step
    // reads one contiguous row of pairs.
    if (bf16Products)
      points = pairPanels(b, loc, points);
  }

  // M[p, f, columns] = U[p] V[p], summed over c: the flat convolution's loops
  // (n, f, position, c, kh, kw) with the point as its batch n and a 1x1
  // kernel per point, one kernel for all 16 products.
  stage("winograd products");
  Value products;
  if (bf16Products) {
    // Loops (p, f, panel, column, c / 2, pair): per point, U [f, c / 2, 2]
    // times the panels of V, f32 sums: the packed matmul's dot-product
    // register tiles (vdpbf16ps) after its unit loops drop.
    products = collapse(b, loc, pairProducts(b, loc, filters, points, et),
                        {kPoints * kPoints, f, columns}, {{0}, {1}, {2, 3}});
  } else {
    auto type = RankedTensorType::get({kPoints * kPoints, f, columns}, et);
    SmallVector<AffineMap> maps = {AffineMap::get(6, 0, {d(0), d(3), d(2) + d(4) + d(5)}, ctx),
                                   AffineMap::get(6, 0, {d(0), d(1), d(3), d(4), d(5)}, ctx),
                                   AffineMap::get(6, 0, {d(0), d(1), d(2)}, ctx)};
    SmallVector<utils::IteratorType> iterators(3, utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    auto generic =
        linalg::GenericOp::create(b, loc, TypeRange{type}, ValueRange{points, filters},
                                  zeroFilled(b, loc, type), maps, iterators, yieldMultiplyAdd);
    setCpuKernel(generic, CpuKernel::ConvFlat);
    products = generic.getResult(0);
  }

  stage("winograd output transform");
  SmallVector<Value> rows;
  for (int64_t p = 0; p < kPoints * kPoints; ++p)
    rows.push_back(slice(products, {p, 0, 0}, {1, f, columns}, {f, columns}));
  // The pooling of each block, P[f, columns] = max(relu(A^T M A + bias)),
  // then transposed to [n, f, th, tw]: relu and the bias commute with max.
  if (pooled) {
    SmallVector<Value> inputs(rows);
    SmallVector<AffineMap> maps(kPoints * kPoints, b.getMultiDimIdentityMap(2));
    if (pooled->bias) {
      inputs.push_back(pooled->bias);
      maps.push_back(AffineMap::get(2, 0, {d(0)}, ctx));
    }
    Value pooledRows = buildPointwise(
        b, loc, 2, inputs, maps, emptyTensors(b, loc, RankedTensorType::get({f, columns}, et), 1),
        [&](Arith &a, ValueRange m) -> SmallVector<Value> {
          return {pooledBlock(a, m, *pooled)};
        })[0];
    if (columns != tiles)
      pooledRows = tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get({f, tiles}, et),
                                                  pooledRows, indexAttrs(b, {0, 0}),
                                                  indexAttrs(b, {f, tiles}), indexAttrs(b, {1, 1}));
    Value grid =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({f, n, th, tw}, et), pooledRows,
                                      SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
    return linalg::TransposeOp::create(
               b, loc, grid, tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n, f, th, tw}, et),
               ArrayRef<int64_t>{1, 0, 2, 3})
        .getResult()[0];
  }

  // Y[i, j][f, columns] = A^T M A, then interleaved to [n, f, 2 th, 2 tw]
  // and cut to the output's size.
  SmallVector<Value> outputs;
  {
    SmallVector<AffineMap> maps(kPoints * kPoints, b.getMultiDimIdentityMap(2));
    SmallVector<Value> inits =
        emptyTensors(b, loc, RankedTensorType::get({f, columns}, et), kOutputs * kOutputs);
    for (Value y : buildPointwise(b, loc, 2, rows, maps, inits, [](Arith &a, ValueRange m) {
           return transform2D(a, llvm::to_vector(m), kPoints, outputTransform);
         })) {
      if (columns != tiles)
        y = tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get({f, tiles}, et), y,
                                           indexAttrs(b, {0, 0}), indexAttrs(b, {f, tiles}),
                                           indexAttrs(b, {1, 1}));
      outputs.push_back(
          tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({f, n, th, tw}, et), y,
                                        SmallVector<ReassociationIndices>{{0}, {1, 2, 3}}));
    }
  }
  // Loops n, f, ty, i, tx, j; output (i, j) of tile (n, ty, tx).
  Value grid = interleaveOutputs(b, loc, outputs, {n, f, th, kOutputs, tw, kOutputs},
                                 AffineMap::get(6, 0, {d(1), d(0), d(2), d(4)}, ctx), 3, 5);
  Value whole =
      collapse(b, loc, grid, {n, f, th * kOutputs, tw * kOutputs}, {{0}, {1}, {2, 3}, {4, 5}});
  return cropToOutput(b, loc, whole, oh, ow);
}
