//===- Utils.cpp - helpers shared by the mithril-to-linalg patterns -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

RankedTensorType linalg_lowering::tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

OpFoldResult linalg_lowering::dimOf(OpBuilder &b, Location loc, Value v, int64_t d) {
  RankedTensorType t = tensorType(v);
  if (!t.isDynamicDim(d))
    return b.getIndexAttr(t.getDimSize(d));
  return tensor::DimOp::create(b, loc, v, d).getResult();
}

Value linalg_lowering::emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                                   ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(getValueOrCreateConstantIndexOp(b, loc, sizes[i]));
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), dynamic);
}

SmallVector<OpFoldResult> linalg_lowering::indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

Value linalg_lowering::zeroFilled(OpBuilder &b, Location loc, RankedTensorType type) {
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value linalg_lowering::generateElements(OpBuilder &b, Location loc, RankedTensorType type,
                                        Value like,
                                        function_ref<Value(OpBuilder &, Location)> element) {
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rank; ++i)
    sizes.push_back(type.isDynamicDim(i) ? dimOf(b, loc, like, i)
                                         : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(b, loc, TypeRange{type}, ValueRange{},
                                   emptyTensor(b, loc, type, sizes), maps, iterators,
                                   [&](OpBuilder &nb, Location l, ValueRange) {
                                     linalg::YieldOp::create(nb, l, element(nb, l));
                                   })
      .getResult(0);
}

/// Sizes of the broadcast result of `operands` with result type `type`: a
/// dynamic result dimension takes its size from an operand that has that
/// dimension dynamic (or static and not 1).
static SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc, RankedTensorType type,
                                                ValueRange operands) {
  SmallVector<OpFoldResult> sizes;
  int64_t rank = type.getRank();
  for (int64_t i = 0; i < rank; ++i) {
    if (!type.isDynamicDim(i)) {
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
      continue;
    }
    OpFoldResult size;
    for (Value v : operands) {
      RankedTensorType t = tensorType(v);
      int64_t j = i - (rank - t.getRank());
      if (j >= 0 && t.getDimSize(j) != 1) {
        size = dimOf(b, loc, v, j);
        break;
      }
    }
    sizes.push_back(size ? size : b.getIndexAttr(1));
  }
  return sizes;
}

/// The indexing map that reads `operand` in a loop nest over `result`,
/// broadcasting missing leading dimensions and static size-1 dimensions.
static AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType operand, RankedTensorType result) {
  int64_t rank = result.getRank(), offset = rank - operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operand.getRank(); ++j) {
    bool stretched = operand.getDimSize(j) == 1 && result.getDimSize(j + offset) != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(j + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value linalg_lowering::buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                                        ValueRange operands, ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, resultType, broadcastSizes(b, loc, resultType, operands));
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx, tensorType(v), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(), utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(b, loc, resultType, operands, init, maps, iterators,
                                           [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                             Value r = fn(nb, nloc, args.drop_back(),
                                                          resultType.getElementType());
                                             linalg::YieldOp::create(nb, nloc, r);
                                           });
  return generic.getResult(0);
}

void linalg_lowering::declarePrivateFunction(OpBuilder &b, ModuleOp module, StringRef name,
                                             FunctionType type) {
  if (SymbolTable::lookupSymbolIn(module, name))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  func::FuncOp::create(b, module.getLoc(), name, type).setPrivate();
}

Value linalg_lowering::floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}

bool linalg_lowering::isFloat(Type t) { return isa<FloatType>(t); }

Value linalg_lowering::zeroOf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
}

/// The type an additive reduction of `et` accumulates in: f64 for narrower
/// floats. A float32 running sum of 10^6 values near 1000 is off by 1%
/// (each addition rounds to the sum's ulp, 64 at 10^9); in f64 the error stays
/// below f32's own rounding at any size a tensor can have, and the reduction,
/// memory-bound, keeps its speed.
static Type accumulatorType(Type et, const Reducer &reducer) {
  auto ft = dyn_cast<FloatType>(et);
  if (!reducer.additive || !ft || ft.getWidth() >= 64)
    return et;
  return Float64Type::get(et.getContext());
}

/// One linalg.generic reducing `input` over `axes` (normalized) into a tensor
/// of `acc` elements (the input's, or wider), without the reduced axes.
static Value reduceInto(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
                        TypedAttr init, const Reducer::Combine &combine, Type acc) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType in = tensorType(input);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (llvm::is_contained(axes, i)) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    shape.push_back(in.getDimSize(i));
    sizes.push_back(dimOf(b, loc, input, i));
    outExprs.push_back(getAffineDimExpr(i, ctx));
  }
  auto accType = RankedTensorType::get(shape, acc);
  Value empty = emptyTensor(b, loc, accType, sizes);
  if (init.getType() != acc)
    init = b.getFloatAttr(acc, cast<FloatAttr>(init).getValueAsDouble());
  Value initValue = arith::ConstantOp::create(b, loc, init);
  Value filled = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(in.getRank()),
                                 AffineMap::get(in.getRank(), 0, outExprs, ctx)};
  auto generic =
      linalg::GenericOp::create(b, loc, accType, input, filled, maps, iterators,
                                [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                  Value x = args[0];
                                  if (x.getType() != acc)
                                    x = arith::ExtFOp::create(nb, nloc, acc, x);
                                  linalg::YieldOp::create(nb, nloc, combine(nb, nloc, x, args[1]));
                                });
  return generic.getResult(0);
}

/// Lanes of partial sums a long float sum of every axis keeps (kSumLanes
/// apart), so that the vectorized loop adds whole vectors instead of folding
/// each one into a single running scalar; from kSumLanesMinLength elements
/// on. (Sums along rows keep their form: the CPU schedule carries the lanes
/// of each row tile across the row, carryLanePartials, and fuses the sum
/// into the row blocks of the op that reads it, which a reshape between
/// them would stop.)
constexpr int64_t kSumLanes = 32;
constexpr int64_t kSumLanesMinLength = 1024;

Value linalg_lowering::buildReduction(OpBuilder &b, Location loc, Value input,
                                      ArrayRef<int64_t> axes, const Reducer &reducer) {
  RankedTensorType in = tensorType(input);
  Type et = in.getElementType();
  Type acc = accumulatorType(et, reducer);
  int64_t last = in.getRank() - 1;
  int64_t length = last >= 0 ? in.getDimSize(last) : 0;
  Value result;
  if (reducer.additive && isa<FloatType>(et) && llvm::is_contained(axes, last) &&
      static_cast<int64_t>(axes.size()) == in.getRank() && !ShapedType::isDynamic(length) &&
      length >= kSumLanesMinLength && length % kSumLanes == 0) {
    SmallVector<int64_t> shape(in.getShape());
    shape.back() = length / kSumLanes;
    shape.push_back(kSumLanes);
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < last; ++i)
      groups.push_back({i});
    groups.push_back({last, last + 1});
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < last; ++i)
      sizes.push_back(dimOf(b, loc, input, i));
    sizes.push_back(b.getIndexAttr(length / kSumLanes));
    sizes.push_back(b.getIndexAttr(kSumLanes));
    Value lanes = tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, et), input,
                                                groups, sizes);
    Value partial = reduceInto(b, loc, lanes, axes, reducer.init, reducer.combine, acc);
    // The lanes already carry the combiner's sign (cross entropy subtracts):
    // they merge by adding.
    Reducer::Combine add = [](OpBuilder &nb, Location l, Value x, Value a) {
      return arith::AddFOp::create(nb, l, x, a).getResult();
    };
    result =
        reduceInto(b, loc, partial, {tensorType(partial).getRank() - 1}, reducer.init, add, acc);
  } else {
    result = reduceInto(b, loc, input, axes, reducer.init, reducer.combine, acc);
  }
  if (acc == et)
    return result;
  RankedTensorType rt = tensorType(result);
  return buildElementwise(b, loc, RankedTensorType::get(rt.getShape(), et), result,
                          [&](OpBuilder &nb, Location l, ValueRange a, Type) {
                            return arith::TruncFOp::create(nb, l, et, a[0]).getResult();
                          });
}

Value linalg_lowering::buildReshape(OpBuilder &b, Location loc, Value input, RankedTensorType type,
                                    ArrayRef<OpFoldResult> sizes) {
  RankedTensorType in = tensorType(input);
  if (in == type)
    return input;
  // No elements, nothing to move: a new empty tensor. (Collapsing a static 0
  // with dynamic sizes has no type both tensor.collapse_shape and its memref
  // form accept: one wants the group dynamic, the other computes 0; and a
  // dynamic source expands into no group with a static 0.)
  if (llvm::is_contained(in.getShape(), 0) || llvm::is_contained(type.getShape(), 0))
    return emptyTensor(b, loc, type, sizes);
  if (in.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, type, input, ArrayRef<ReassociationIndices>{},
                                         sizes);
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, input, ArrayRef<ReassociationIndices>{});
  Value flat = input;
  if (in.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < in.getRank(); ++i)
      all.push_back(i);
    int64_t n = 1;
    for (int64_t d : in.getShape())
      n = (ShapedType::isDynamic(d) || ShapedType::isDynamic(n)) ? kDyn : n * d;
    flat = tensor::CollapseShapeOp::create(b, loc, RankedTensorType::get({n}, in.getElementType()),
                                           input, ArrayRef<ReassociationIndices>{all});
  }
  if (type.getRank() == 1) {
    if (flat.getType() == type)
      return flat;
    return tensor::CastOp::create(b, loc, type, flat);
  }
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  // A static source expands only into a static group.
  if (!type.hasStaticShape() && tensorType(flat).hasStaticShape())
    flat =
        tensor::CastOp::create(b, loc, RankedTensorType::get({kDyn}, type.getElementType()), flat);
  return tensor::ExpandShapeOp::create(b, loc, type, flat, ArrayRef<ReassociationIndices>{all},
                                       sizes);
}

Value linalg_lowering::keepDims(OpBuilder &b, Location loc, Value reduced, RankedTensorType type,
                                ArrayRef<int64_t> axes) {
  RankedTensorType rt = tensorType(reduced);
  if (rt == type || rt.getRank() == type.getRank())
    return reduced;
  // One expand_shape whose groups each hold one kept dimension and the unit
  // ones around it: a collapse to 1-D and an expand with several dynamic sizes
  // in one group would be ambiguous (and crashed upstream's reshape folding).
  SmallVector<OpFoldResult> sizes;
  SmallVector<ReassociationIndices> groups(rt.getRank());
  int64_t kept = 0;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool unit = llvm::is_contained(axes, i);
    sizes.push_back(unit ? OpFoldResult(b.getIndexAttr(1)) : dimOf(b, loc, reduced, kept));
    if (!unit)
      ++kept;
    // Unit dimensions join the kept one before them (the first kept one if
    // none is before).
    if (!groups.empty())
      groups[std::max<int64_t>(kept - 1, 0)].push_back(i);
  }
  return tensor::ExpandShapeOp::create(b, loc, type, reduced, groups, sizes);
}

Value linalg_lowering::divideByScalar(OpBuilder &b, Location loc, Value t, Value s) {
  RankedTensorType type = tensorType(t);
  return buildElementwise(b, loc, type, t, [&](OpBuilder &nb, Location l, ValueRange a, Type) {
    return arith::DivFOp::create(nb, l, a[0], s).getResult();
  });
}

Value linalg_lowering::padSpatial(OpBuilder &b, Location loc, Value input, int64_t firstSpatial,
                                  ArrayRef<int64_t> padding, Value padValue) {
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return input;
  RankedTensorType t = tensorType(input);
  SmallVector<OpFoldResult> lo(t.getRank(), b.getIndexAttr(0)), hi(t.getRank(), b.getIndexAttr(0));
  SmallVector<int64_t> shape(t.getShape());
  for (size_t i = 0; i < padding.size() / 2; ++i) {
    int64_t d = firstSpatial + i;
    lo[d] = b.getIndexAttr(padding[2 * i]);
    hi[d] = b.getIndexAttr(padding[2 * i + 1]);
    if (!ShapedType::isDynamic(shape[d]))
      shape[d] += padding[2 * i] + padding[2 * i + 1];
  }
  auto padded = RankedTensorType::get(shape, t.getElementType());
  return tensor::PadOp::create(b, loc, padded, input, lo, hi, padValue);
}

Value linalg_lowering::channelsLastToPlanes(OpBuilder &b, Location loc, Value flat, int64_t h,
                                            int64_t w) {
  RankedTensorType t = tensorType(flat);
  int64_t n = t.getDimSize(0), f = t.getDimSize(2);
  Type et = t.getElementType();
  Value planes = linalg::TransposeOp::create(
                     b, loc, flat, tensor::EmptyOp::create(b, loc, {n, f, h * w}, et).getResult(),
                     SmallVector<int64_t>{0, 2, 1})
                     .getResult()[0];
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get({n, f, h, w}, et), planes,
                                       SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

Value linalg_lowering::inParallelChunks(OpBuilder &b, Location loc, Value out, int64_t chunks,
                                        function_ref<Value(OpBuilder &, Value, Value)> chunk) {
  if (chunks == 1) {
    Value whole = chunk(b, arith::ConstantIndexOp::create(b, loc, 0), out);
    whole.getDefiningOp()->setAttr(kInPlaceBlocksAttr, b.getUnitAttr());
    return whole;
  }
  RankedTensorType type = tensorType(out);
  SmallVector<int64_t> sizes(type.getShape());
  sizes[0] /= chunks;
  SmallVector<OpFoldResult> strides = indexAttrs(b, SmallVector<int64_t>(sizes.size(), 1));
  auto parallel =
      scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                            ArrayRef<OpFoldResult>{b.getIndexAttr(type.getDimSize(0))},
                            ArrayRef<OpFoldResult>{b.getIndexAttr(sizes[0])}, ValueRange{out},
                            std::nullopt, [&](OpBuilder &nb, Location, ValueRange args) {
                              Value first = args[0], shared = args[1];
                              SmallVector<OpFoldResult> offsets(sizes.size(), nb.getIndexAttr(0));
                              offsets[0] = first;
                              Value mine = tensor::ExtractSliceOp::create(
                                  nb, loc, RankedTensorType::get(sizes, type.getElementType()),
                                  shared, offsets, indexAttrs(nb, sizes), strides);
                              Value part = chunk(nb, first, mine);
                              auto terminator = scf::InParallelOp::create(nb, loc);
                              OpBuilder::InsertionGuard guard(nb);
                              nb.setInsertionPointToStart(terminator.getBody());
                              tensor::ParallelInsertSliceOp::create(nb, loc, part, shared, offsets,
                                                                    indexAttrs(nb, sizes), strides);
                            });
  parallel->setAttr(kInPlaceBlocksAttr, b.getUnitAttr());
  return parallel.getResult(0);
}

std::pair<Value, Value> linalg_lowering::windowSource(OpBuilder &b, Location loc, Value i, Value k,
                                                      int64_t stride, int64_t padLo,
                                                      int64_t dilation, int64_t outSize) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value t = arith::SubIOp::create(b, loc, arith::AddIOp::create(b, loc, i, idx(padLo)),
                                  arith::MulIOp::create(b, loc, k, idx(dilation)));
  Value nonNeg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t, idx(0));
  Value tc = arith::SelectOp::create(b, loc, nonNeg, t, idx(0));
  Value o = arith::DivUIOp::create(b, loc, tc, idx(stride));
  Value exact = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      arith::RemUIOp::create(b, loc, tc, idx(stride)), idx(0));
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, o, idx(outSize));
  Value valid =
      arith::AndIOp::create(b, loc, nonNeg, arith::AndIOp::create(b, loc, exact, inRange));
  Value oc = arith::SelectOp::create(b, loc, valid, o, idx(0));
  return {oc, valid};
}

Value linalg_lowering::oneWhere(OpBuilder &b, Location loc, Value cond, Type et) {
  Value one = isFloat(et) ? floatConst(b, loc, et, 1.0)
                          : arith::ConstantOp::create(b, loc, b.getIntegerAttr(et, 1)).getResult();
  Value zero = isFloat(et) ? floatConst(b, loc, et, 0.0) : zeroOf(b, loc, et);
  return arith::SelectOp::create(b, loc, cond, one, zero);
}

scf::ForOp linalg_lowering::forLoop(
    OpBuilder &b, Location loc, Value lower, Value upper, ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  return scf::ForOp::create(b, loc, lower, upper, one, init,
                            [&](OpBuilder &nb, Location l, Value iv, ValueRange carried) {
                              scf::YieldOp::create(nb, l, body(nb, l, iv, carried));
                            });
}

Value linalg_lowering::extract(OpBuilder &b, Location loc, Value tensor, Value row, Value column) {
  return tensor::ExtractOp::create(b, loc, tensor, ValueRange{row, column});
}
