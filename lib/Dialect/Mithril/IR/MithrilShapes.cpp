//===- MithrilShapes.cpp - shape and type inference rules -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Every primitive's result type is computed here from its operand types and
// attributes. These rules are the one source of truth for shapes: the
// verifiers, the builders, mithril-infer-shapes and the Python package all
// call them.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Dialect/Mithril/IR/ShapeRefiner.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mithril;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::string mithril::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os, [&](int64_t d) { os << (ShapedType::isDynamic(d) ? "?" : std::to_string(d)); },
      "x");
  return s;
}

std::string mithril::describeValue(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto model = dyn_cast_or_null<ModelOp>(arg.getOwner()->getParentOp()))
      return "terminal '" + model.getInputName(arg.getArgNumber()).str() + "'";
    return "block argument #" + std::to_string(arg.getArgNumber());
  }
  Operation *op = value.getDefiningOp();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto name = dyn_cast<NameLoc>(loc))
    return "'" + name.getName().str() + "'";
  if (auto inst = dyn_cast<InstanceOp>(op))
    return "output of instance '" + inst.getName().str() + "'";
  return "result of " + op->getName().getStringRef().str();
}

/// Describes a value together with its shape: `terminal 'x' (4x8)`.
static std::string describeWithShape(Value value) {
  std::string s = describeValue(value);
  if (auto t = dyn_cast<RankedTensorType>(value.getType()))
    s += " (" + formatShape(t.getShape()) + ")";
  return s;
}

template <typename... Args>
static LogicalResult fail(std::optional<Location> loc, Args &&...args) {
  if (loc) {
    InFlightDiagnostic diag = emitError(*loc);
    (diag << ... << std::forward<Args>(args));
  }
  return failure();
}

static RankedTensorType getRanked(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool mithril::areCompatibleTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    if (l == r)
      continue;
    auto lt = dyn_cast<RankedTensorType>(l), rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt || lt.getElementType() != rt.getElementType() ||
        lt.getRank() != rt.getRank())
      return false;
    for (auto [a, b] : llvm::zip(lt.getShape(), rt.getShape()))
      if (!dimsCompatible(a, b))
        return false;
  }
  return true;
}

FailureOr<SmallVector<int64_t>> mithril::broadcastShapes(ArrayRef<int64_t> lhs,
                                                         ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == 1)
      out[i] = b;
    else if (b == 1)
      out[i] = a;
    else if (ShapedType::isDynamic(a))
      out[i] = b; // b is static (not 1) or dynamic: either way the result is b.
    else if (ShapedType::isDynamic(b) || a == b)
      out[i] = a;
    else
      return failure();
  }
  return out;
}

FailureOr<SmallVector<int64_t>> mithril::normalizeAxes(ArrayRef<int64_t> axes,
                                                       int64_t rank) {
  SmallVector<int64_t> out;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || !seen.insert(a).second)
      return failure();
    out.push_back(a);
  }
  return out;
}

SmallVector<int64_t> mithril::reductionAxes(std::optional<ArrayRef<int64_t>> axes,
                                           int64_t rank) {
  if (!axes)
    return llvm::to_vector(llvm::seq<int64_t>(0, rank));
  // The op's verifier has checked the axes, so normalizing cannot fail.
  return *normalizeAxes(*axes, rank);
}

static FailureOr<int64_t> checkedAxis(std::optional<Location> loc, StringRef opName,
                                        int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    (void)fail(loc, "'", opName, "' axis ", axis, " is out of range for a tensor of rank ",
               rank);
    return failure();
  }
  return a;
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (ShapedType::isDynamic(d))
      return kDyn;
    p *= d;
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Category rules
//===----------------------------------------------------------------------===//

LogicalResult mithril::inferUnaryElementwise(std::optional<Location> loc, Value input,
                                             SmallVectorImpl<Type> &types) {
  if (!getRanked(input))
    return fail(loc, "expected a ranked tensor operand");
  types.push_back(input.getType());
  return success();
}

LogicalResult mithril::inferBroadcastBinary(MLIRContext *ctx, std::optional<Location> loc,
                                            StringRef opName, Value lhs, Value rhs,
                                            BinaryResultKind kind,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType lt = getRanked(lhs), rt = getRanked(rhs);
  if (!lt || !rt)
    return fail(loc, "'", opName, "' expects ranked tensor operands");
  if (lt.getElementType() != rt.getElementType())
    return fail(loc, "'", opName, "' operands have different element types: ",
                describeValue(lhs), " is ", lt.getElementType(), " but ", describeValue(rhs),
                " is ", rt.getElementType());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (failed(shape))
    return fail(loc, "'", opName, "' cannot broadcast ", describeWithShape(lhs), " with ",
                describeWithShape(rhs));
  Type element = lt.getElementType();
  if (kind == BinaryResultKind::Compare)
    element = IntegerType::get(ctx, 1);
  if (kind == BinaryResultKind::Logical && !element.isInteger(1))
    return fail(loc, "'", opName, "' expects i1 operands, got ", element);
  types.push_back(RankedTensorType::get(*shape, element));
  return success();
}

LogicalResult mithril::inferReduction(MLIRContext *ctx, std::optional<Location> loc,
                                      StringRef opName, Value input,
                                      std::optional<ArrayRef<int64_t>> axes, bool keepdim,
                                      Type resultElementType,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(input);
  if (!t)
    return fail(loc, "'", opName, "' expects a ranked tensor");
  int64_t rank = t.getRank();
  SmallVector<int64_t> reduced;
  if (axes) {
    FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*axes, rank);
    if (failed(norm))
      return fail(loc, "'", opName, "' has invalid axes [",
                  llvm::make_range(axes->begin(), axes->end()), "] for ",
                  describeWithShape(input));
    reduced = *norm;
  } else {
    for (int64_t i = 0; i < rank; ++i)
      reduced.push_back(i);
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(reduced, i)) {
      if (keepdim)
        shape.push_back(1);
    } else {
      shape.push_back(t.getDimSize(i));
    }
  }
  types.push_back(RankedTensorType::get(
      shape, resultElementType ? resultElementType : t.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Per-op rules
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return fail(loc, "constant value must have a ranked tensor type");
  types.push_back(type);
  return success();
}

void ConstantOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), "cst");
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  SmallVector<Type> values;
  if (failed(inferBroadcastBinary(ctx, loc, getOperationName(), adaptor.getLhs(),
                                  adaptor.getRhs(), BinaryResultKind::Arith, values)))
    return failure();
  auto vt = cast<RankedTensorType>(values[0]);
  RankedTensorType ct = getRanked(adaptor.getCond());
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(ct.getShape(), vt.getShape());
  if (failed(shape))
    return fail(loc, "'mithril.where' cannot broadcast condition ",
                describeWithShape(adaptor.getCond()), " with values of shape ",
                formatShape(vt.getShape()));
  types.push_back(RankedTensorType::get(*shape, vt.getElementType()));
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getIndices());
  int64_t classes = adaptor.getNumClasses();
  if (classes <= 0)
    return fail(loc, "'mithril.one_hot' num_classes must be positive, got ", classes);
  FailureOr<int64_t> axis = checkedAxis(loc, getOperationName(), (int64_t)adaptor.getAxis(),
                                          t.getRank() + 1);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + *axis, classes);
  types.push_back(RankedTensorType::get(shape, adaptor.getElementType()));
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType lt = getRanked(adaptor.getLhs()), rt = getRanked(adaptor.getRhs());
  if (lt.getElementType() != rt.getElementType())
    return fail(loc, "'mithril.matmul' operands have different element types: ",
                lt.getElementType(), " and ", rt.getElementType());
  if (lt.getRank() == 0 || rt.getRank() == 0)
    return fail(loc, "'mithril.matmul' operands must have rank >= 1, got ",
                describeWithShape(adaptor.getLhs()), " and ",
                describeWithShape(adaptor.getRhs()));
  SmallVector<int64_t> l(lt.getShape()), r(rt.getShape());
  bool lhsVector = l.size() == 1, rhsVector = r.size() == 1;
  if (lhsVector)
    l.insert(l.begin(), 1);
  if (rhsVector)
    r.push_back(1);
  int64_t k1 = l.back(), k2 = r[r.size() - 2];
  if (!dimsCompatible(k1, k2))
    return fail(loc, "'mithril.matmul' contraction dimensions differ: ",
                describeWithShape(adaptor.getLhs()), " has ", k1, " columns but ",
                describeWithShape(adaptor.getRhs()), " has ", k2, " rows");
  FailureOr<SmallVector<int64_t>> batch = broadcastShapes(
      ArrayRef<int64_t>(l).drop_back(2), ArrayRef<int64_t>(r).drop_back(2));
  if (failed(batch))
    return fail(loc, "'mithril.matmul' cannot broadcast the batch dimensions of ",
                describeWithShape(adaptor.getLhs()), " and ",
                describeWithShape(adaptor.getRhs()));
  SmallVector<int64_t> shape = *batch;
  if (!lhsVector)
    shape.push_back(l[l.size() - 2]);
  if (!rhsVector)
    shape.push_back(r.back());
  types.push_back(RankedTensorType::get(shape, lt.getElementType()));
  return success();
}

/// The size shared by both dimensions of `matrix` (dynamic when neither is
/// known), or failure when it is not a square matrix.
static FailureOr<int64_t> squareSize(std::optional<Location> loc, StringRef opName, StringRef role,
                                     Value matrix) {
  RankedTensorType t = getRanked(matrix);
  if (t.getRank() != 2 || !dimsCompatible(t.getDimSize(0), t.getDimSize(1))) {
    (void)fail(loc, "'", opName, "' expects ", role, " to be a square matrix, got ",
               describeWithShape(matrix));
    return failure();
  }
  return t.isDynamicDim(0) ? t.getDimSize(1) : t.getDimSize(0);
}

LogicalResult CholeskyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  FailureOr<int64_t> n = squareSize(loc, getOperationName(), "its input", adaptor.getInput());
  if (failed(n))
    return failure();
  types.push_back(RankedTensorType::get({*n, *n}, getRanked(adaptor.getInput()).getElementType()));
  return success();
}

LogicalResult TsnePJointOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  FailureOr<int64_t> n =
      squareSize(loc, getOperationName(), "its squared distances", adaptor.getSquaredDistances());
  if (failed(n))
    return failure();
  Type element = getRanked(adaptor.getSquaredDistances()).getElementType();
  for (auto [role, v] :
       {std::pair<StringRef, Value>{"target_perplexity", adaptor.getTargetPerplexity()},
        {"threshold", adaptor.getThreshold()}}) {
    if (!v)
      continue;
    RankedTensorType t = getRanked(v);
    if (t.getElementType() != element)
      return fail(loc, "'mithril.tsne_p_joint' ", role, " ", describeWithShape(v),
                  " has another element type than the distances' ", element);
    if (t.hasStaticShape() && t.getNumElements() != 1)
      return fail(loc, "'mithril.tsne_p_joint' ", role, " must hold one element, got ",
                  describeWithShape(v));
  }
  types.push_back(RankedTensorType::get({*n, *n}, element));
  return success();
}

LogicalResult CustomCallOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  StringRef callee = adaptor.getCallee();
  auto isCIdentifier = [](StringRef name) {
    return !name.empty() && !llvm::isDigit(name.front()) &&
           llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  };
  for (std::optional<StringRef> name : {std::optional<StringRef>(callee), adaptor.getGradCallee()})
    if (name && !isCIdentifier(*name))
      return fail(loc, "'mithril.custom_call' callee '", *name, "' is not a C function name");
  ValueRange operands = adaptor.getOperands();
  int64_t count = operands.size();
  std::optional<Type> element = adaptor.getElementType();
  if (std::optional<ArrayRef<int64_t>> spec = adaptor.getResultShape()) {
    if (spec->size() % 2 != 0)
      return fail(loc, "'mithril.custom_call' @", callee,
                  " result_shape must hold (operand, dim) or (-1, size) pairs, got ", spec->size(),
                  " numbers");
    SmallVector<int64_t> shape;
    for (size_t i = 0; i < spec->size(); i += 2) {
      int64_t operand = (*spec)[i], dim = (*spec)[i + 1];
      if (operand == -1) {
        if (dim < 0)
          return fail(loc, "'mithril.custom_call' @", callee, " result dimension ", i / 2,
                      " has the negative size ", dim);
        shape.push_back(dim);
        continue;
      }
      if (operand < 0 || operand >= count)
        return fail(loc, "'mithril.custom_call' @", callee, " result dimension ", i / 2,
                    " refers to operand ", operand, " of ", count);
      RankedTensorType t = getRanked(operands[operand]);
      if (dim < 0 || dim >= t.getRank())
        return fail(loc, "'mithril.custom_call' @", callee, " result dimension ", i / 2,
                    " refers to dimension ", dim, " of operand ", operand, ", ",
                    describeWithShape(operands[operand]));
      shape.push_back(t.getDimSize(dim));
    }
    if (!element && count == 0)
      return fail(loc, "'mithril.custom_call' @", callee,
                  " has no operand to take its element type from: give element_type");
    types.push_back(
        RankedTensorType::get(shape, element ? *element : getRanked(operands[0]).getElementType()));
    return success();
  }
  int64_t like = adaptor.getShapeOf();
  if (like < 0 || like >= count)
    return fail(loc, "'mithril.custom_call' @", callee, " takes the shape of operand ", like,
                ", but it has ", count, " operands");
  RankedTensorType t = getRanked(operands[like]);
  types.push_back(RankedTensorType::get(t.getShape(), element ? *element : t.getElementType()));
  return success();
}

LogicalResult UniqueOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType in = getRanked(adaptor.getInput());
  int64_t n = in.hasStaticShape() ? in.getNumElements() : kDyn;
  types.push_back(RankedTensorType::get({n}, in.getElementType()));
  types.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult UniqueOp::verify() {
  for (OpOperand &use : getValues().getUses()) {
    if (isa<OutputOp>(use.getOwner()))
      continue;
    return emitOpError("values have a size that depends on the data (the number of distinct "
                       "values), so they can only be an output of the model, not an operand of '")
           << use.getOwner()->getName() << "'";
  }
  return success();
}

LogicalResult TriangularSolveOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Value matrix = adaptor.getMatrix(), rhs = adaptor.getRhs();
  RankedTensorType mt = getRanked(matrix), rt = getRanked(rhs);
  if (mt.getElementType() != rt.getElementType())
    return fail(loc, "'mithril.triangular_solve' operands have different element types: ",
                mt.getElementType(), " and ", rt.getElementType());
  FailureOr<int64_t> n = squareSize(loc, getOperationName(), "its triangular matrix", matrix);
  if (failed(n))
    return failure();
  if (rt.getRank() != 2)
    return fail(loc, "'mithril.triangular_solve' expects a [rows, columns] right-hand side, got ",
                describeWithShape(rhs));
  if (!dimsCompatible(*n, rt.getDimSize(0)))
    return fail(loc, "'mithril.triangular_solve' right-hand side ", describeWithShape(rhs),
                " needs as many rows as the triangular matrix ", describeWithShape(matrix));
  int64_t rows = ShapedType::isDynamic(*n) ? rt.getDimSize(0) : *n;
  types.push_back(RankedTensorType::get({rows, rt.getDimSize(1)}, rt.getElementType()));
  return success();
}

LogicalResult VarianceOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferReduction(ctx, loc, getOperationName(), adaptor.getInput(), adaptor.getAxes(),
                        adaptor.getKeepdim(), nullptr, types);
}

template <typename AdaptorT>
static LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> loc,
                                    StringRef opName, AdaptorT adaptor,
                                    SmallVectorImpl<Type> &types) {
  std::optional<int64_t> axis;
  if (auto a = adaptor.getAxis())
    axis = static_cast<int64_t>(*a);
  Type i64 = IntegerType::get(ctx, 64);
  if (!axis) {
    if (adaptor.getKeepdim()) {
      int64_t rank = getRanked(adaptor.getInput()).getRank();
      types.push_back(RankedTensorType::get(SmallVector<int64_t>(rank, 1), i64));
      return success();
    }
    types.push_back(RankedTensorType::get({}, i64));
    return success();
  }
  int64_t axes[] = {*axis};
  return inferReduction(ctx, loc, opName, adaptor.getInput(), ArrayRef<int64_t>(axes),
                        adaptor.getKeepdim(), i64, types);
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferArgReduce(ctx, loc, getOperationName(), adaptor, types);
}
LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferArgReduce(ctx, loc, getOperationName(), adaptor, types);
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  ArrayRef<int64_t> target = adaptor.getShape();
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == -1) {
      if (inferred != -1)
        return fail(loc, "'mithril.reshape' target shape [",
                    llvm::make_range(target.begin(), target.end()),
                    "] has more than one -1");
      inferred = i;
    } else if (d < 0) {
      return fail(loc, "'mithril.reshape' target shape has negative size ", d);
    } else {
      known *= d;
    }
  }
  SmallVector<int64_t> shape(target);
  int64_t total = product(t.getShape());
  if (inferred >= 0) {
    if (ShapedType::isDynamic(total))
      shape[inferred] = kDyn;
    else if (known == 0 || total % known != 0)
      return fail(loc, "'mithril.reshape' cannot reshape ",
                  describeWithShape(adaptor.getInput()), " into [",
                  llvm::make_range(target.begin(), target.end()), "]");
    else
      shape[inferred] = total / known;
  } else if (!ShapedType::isDynamic(total) && total != known) {
    return fail(loc, "'mithril.reshape' cannot reshape ",
                describeWithShape(adaptor.getInput()), " (", total, " elements) into [",
                llvm::make_range(target.begin(), target.end()), "] (", known,
                " elements)");
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

SmallVector<int64_t> TransposeOp::getPermutationOrDefault() {
  int64_t rank = getInput().getType().getRank();
  SmallVector<int64_t> perm;
  // Negative axes count from the end (the verifier has checked the range).
  if (auto given = getPermutation()) {
    for (int64_t axis : *given)
      perm.push_back(axis < 0 ? axis + rank : axis);
    return perm;
  }
  for (int64_t i = rank - 1; i >= 0; --i)
    perm.push_back(i);
  return perm;
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  int64_t rank = t.getRank();
  SmallVector<int64_t> perm;
  if (auto p = adaptor.getPermutation()) {
    FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*p, rank);
    if (failed(norm) || (int64_t)norm->size() != rank)
      return fail(loc, "'mithril.transpose' permutation [",
                  llvm::make_range(p->begin(), p->end()), "] is not a permutation of ",
                  rank, " axes");
    perm = *norm;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  int64_t rank = t.getRank();
  if (rank == 0) {
    types.push_back(RankedTensorType::get({1}, t.getElementType()));
    return success();
  }
  FailureOr<int64_t> start = checkedAxis(loc, getOperationName(),
                                           (int64_t)adaptor.getStartDim(), rank);
  FailureOr<int64_t> end = checkedAxis(loc, getOperationName(),
                                         (int64_t)adaptor.getEndDim(), rank);
  if (failed(start) || failed(end))
    return failure();
  if (*start > *end)
    return fail(loc, "'mithril.flatten' start_dim ", *start, " is after end_dim ", *end);
  SmallVector<int64_t> shape(t.getShape().take_front(*start));
  shape.push_back(product(t.getShape().slice(*start, *end - *start + 1)));
  llvm::append_range(shape, t.getShape().drop_front(*end + 1));
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  SmallVector<int64_t> drop;
  if (auto axes = adaptor.getAxes()) {
    FailureOr<SmallVector<int64_t>> norm = normalizeAxes(*axes, t.getRank());
    if (failed(norm))
      return fail(loc, "'mithril.squeeze' has invalid axes for ",
                  describeWithShape(adaptor.getInput()));
    for (int64_t a : *norm)
      if (t.getDimSize(a) != 1 && !t.isDynamicDim(a))
        return fail(loc, "'mithril.squeeze' axis ", a, " of ",
                    describeWithShape(adaptor.getInput()), " has size ", t.getDimSize(a),
                    ", not 1");
    drop = *norm;
  } else {
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.getDimSize(i) == 1)
        drop.push_back(i);
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (!llvm::is_contained(drop, i))
      shape.push_back(t.getDimSize(i));
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  FailureOr<int64_t> axis = checkedAxis(loc, getOperationName(),
                                          (int64_t)adaptor.getAxis(), t.getRank() + 1);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + *axis, 1);
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, "'mithril.concat' needs at least one input");
  RankedTensorType first = getRanked(inputs[0]);
  if (first.getRank() == 0)
    return fail(loc, "'mithril.concat' cannot join scalars");
  FailureOr<int64_t> axis =
      checkedAxis(loc, getOperationName(), (int64_t)adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    RankedTensorType t = getRanked(v);
    if (t.getRank() != first.getRank() || t.getElementType() != first.getElementType())
      return fail(loc, "'mithril.concat' inputs differ in rank or element type: ",
                  describeWithShape(inputs[0]), " ", first.getElementType(), " and ",
                  describeWithShape(v), " ", t.getElementType());
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *axis) {
        shape[i] = (ShapedType::isDynamic(shape[i]) || t.isDynamicDim(i))
                       ? kDyn
                       : shape[i] + t.getDimSize(i);
      } else if (!dimsCompatible(shape[i], t.getDimSize(i))) {
        return fail(loc, "'mithril.concat' inputs differ off the concatenation axis: ",
                    describeWithShape(inputs[0]), " and ", describeWithShape(v));
      } else if (ShapedType::isDynamic(shape[i])) {
        shape[i] = t.getDimSize(i);
      }
    }
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  ArrayRef<int64_t> target = adaptor.getShape();
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(t.getShape(), target);
  if (failed(shape) || shape->size() != target.size() ||
      llvm::any_of(target, [](int64_t d) { return d < 0; }))
    return fail(loc, "'mithril.broadcast_to' cannot broadcast ",
                describeWithShape(adaptor.getInput()), " to ", formatShape(target));
  types.push_back(RankedTensorType::get(target, t.getElementType()));
  return success();
}

/// The result type of a random op: `shape` (static) of `et` (a float).
static LogicalResult inferRandomType(std::optional<Location> loc, StringRef op,
                                     ArrayRef<int64_t> shape, Type et,
                                     SmallVectorImpl<Type> &types) {
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return fail(loc, "'", op, "' needs a static, non-negative shape, got ", formatShape(shape));
  if (!isa<FloatType>(et))
    return fail(loc, "'", op, "' draws floats, not ", et);
  types.push_back(RankedTensorType::get(shape, et));
  return success();
}

LogicalResult RandomNormalOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferRandomType(loc, getOperationName(), adaptor.getShape(), adaptor.getElementType(),
                         types);
}

LogicalResult RandomUniformOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferRandomType(loc, getOperationName(), adaptor.getShape(), adaptor.getElementType(),
                         types);
}

/// Length of the Python slice start:stop:step over a dimension of size `dim`.
static int64_t sliceLength(int64_t dim, int64_t start, int64_t stop, int64_t step) {
  auto clamp = [&](int64_t i) {
    if (i < 0)
      i += dim;
    return std::clamp<int64_t>(i, 0, dim);
  };
  int64_t s = clamp(start), e = clamp(stop);
  if (e <= s)
    return 0;
  return (e - s + step - 1) / step;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  ArrayRef<int64_t> axes = adaptor.getAxes(), start = adaptor.getStart(),
                    stop = adaptor.getStop(), step = adaptor.getStep();
  if (start.size() != axes.size() || stop.size() != axes.size() ||
      step.size() != axes.size())
    return fail(loc, "'mithril.slice' needs one start, stop and step per axis");
  FailureOr<SmallVector<int64_t>> norm = normalizeAxes(axes, t.getRank());
  if (failed(norm))
    return fail(loc, "'mithril.slice' has invalid axes for ",
                describeWithShape(adaptor.getInput()));
  SmallVector<int64_t> shape(t.getShape());
  for (auto [i, axis] : llvm::enumerate(*norm)) {
    if (step[i] <= 0)
      return fail(loc, "'mithril.slice' step must be positive, got ", step[i]);
    if (!t.isDynamicDim(axis))
      shape[axis] = sliceLength(t.getDimSize(axis), start[i], stop[i], step[i]);
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  ArrayRef<int64_t> width = adaptor.getPadWidth();
  if (static_cast<int64_t>(width.size()) != 2 * t.getRank())
    return fail(loc, "'mithril.pad' needs a (before, after) pair for each of the ", t.getRank(),
                " axes of ", describeWithShape(adaptor.getInput()), ", got ", width.size(),
                " sizes");
  SmallVector<int64_t> shape(t.getShape());
  for (int64_t axis = 0; axis < t.getRank(); ++axis) {
    int64_t before = width[2 * axis], after = width[2 * axis + 1];
    if (before < 0 || after < 0)
      return fail(loc, "'mithril.pad' sizes must not be negative, got (", before, ", ", after,
                  ") for axis ", axis);
    if (!t.isDynamicDim(axis))
      shape[axis] += before + after;
  }
  types.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  Type element = adaptor.getElementType();
  if (!element.isIntOrFloat())
    return fail(loc, "'mithril.cast' target must be an integer or float type, got ",
                element);
  types.push_back(RankedTensorType::get(t.getShape(), element));
  return success();
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  types.push_back(RankedTensorType::get({t.getRank()}, IntegerType::get(ctx, 64)));
  return success();
}

/// Output size of a sliding window along one dimension.
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride, int64_t padLo,
                            int64_t padHi, int64_t dilation) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel))
    return kDyn;
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t padded = in + padLo + padHi;
  if (padded < span)
    return -1;
  return (padded - span) / stride + 1;
}

static LogicalResult checkWindowAttrs(std::optional<Location> loc, StringRef opName,
                                      int64_t spatial, ArrayRef<int64_t> stride,
                                      ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation) {
  if ((int64_t)stride.size() != spatial || (int64_t)dilation.size() != spatial)
    return fail(loc, "'", opName, "' needs ", spatial, " stride and dilation values");
  if ((int64_t)padding.size() != 2 * spatial)
    return fail(loc, "'", opName, "' needs ", 2 * spatial,
                " padding values (before and after each spatial dimension)");
  for (int64_t s : stride)
    if (s <= 0)
      return fail(loc, "'", opName, "' stride must be positive");
  for (int64_t d : dilation)
    if (d <= 0)
      return fail(loc, "'", opName, "' dilation must be positive");
  for (int64_t p : padding)
    if (p < 0)
      return fail(loc, "'", opName, "' padding must not be negative");
  return success();
}

template <typename AdaptorT>
static LogicalResult inferConv(std::optional<Location> loc, StringRef opName,
                               int64_t spatial, AdaptorT adaptor,
                               SmallVectorImpl<Type> &types) {
  RankedTensorType in = getRanked(adaptor.getInput()), w = getRanked(adaptor.getWeight());
  if (in.getRank() != spatial + 2)
    return fail(loc, "'", opName, "' input must be [N, C, ", spatial,
                " spatial dims], got ", describeWithShape(adaptor.getInput()));
  if (w.getRank() != spatial + 2)
    return fail(loc, "'", opName, "' weight must be [C_out, C_in / groups, ", spatial,
                " kernel dims], got ", describeWithShape(adaptor.getWeight()));
  if (in.getElementType() != w.getElementType())
    return fail(loc, "'", opName, "' input and weight element types differ");
  if (failed(checkWindowAttrs(loc, opName, spatial, adaptor.getStride(), adaptor.getPadding(),
                              adaptor.getDilation())))
    return failure();
  int64_t groups = adaptor.getGroups();
  if (groups <= 0)
    return fail(loc, "'", opName, "' groups must be positive");
  int64_t cin = in.getDimSize(1), wcin = w.getDimSize(1), cout = w.getDimSize(0);
  if (!ShapedType::isDynamic(cin) && !ShapedType::isDynamic(wcin) && cin != wcin * groups)
    return fail(loc, "'", opName, "' input ", describeWithShape(adaptor.getInput()),
                " has ", cin, " channels but weight ", describeWithShape(adaptor.getWeight()),
                " expects ", wcin * groups);
  if (!ShapedType::isDynamic(cout) && cout % groups != 0)
    return fail(loc, "'", opName, "' output channels ", cout, " are not divisible by ",
                groups, " groups");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType bt = getRanked(bias);
    if (bt.getRank() != 1 || !dimsCompatible(bt.getDimSize(0), cout))
      return fail(loc, "'", opName, "' bias must be [", cout, "], got ",
                  describeWithShape(bias));
  }
  SmallVector<int64_t> shape = {in.getDimSize(0), cout};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t o = windowOutput(in.getDimSize(2 + i), w.getDimSize(2 + i), adaptor.getStride()[i],
                             adaptor.getPadding()[2 * i], adaptor.getPadding()[2 * i + 1],
                             adaptor.getDilation()[i]);
    if (o == -1)
      return fail(loc, "'", opName, "' kernel ", describeWithShape(adaptor.getWeight()),
                  " is larger than the padded input ", describeWithShape(adaptor.getInput()));
    shape.push_back(o);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult Conv1DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferConv(loc, getOperationName(), 1, adaptor, types);
}
LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferConv(loc, getOperationName(), 2, adaptor, types);
}

template <typename AdaptorT>
static LogicalResult inferPool(std::optional<Location> loc, StringRef opName,
                               int64_t spatial, AdaptorT adaptor,
                               SmallVectorImpl<Type> &types) {
  RankedTensorType in = getRanked(adaptor.getInput());
  int64_t lead = in.getRank() - spatial;
  if (lead != 1 && lead != 2)
    return fail(loc, "'", opName, "' input must be [N, C, ", spatial, " spatial dims] or [C, ",
                spatial, " spatial dims], got ", describeWithShape(adaptor.getInput()));
  ArrayRef<int64_t> kernel = adaptor.getKernelSize();
  if ((int64_t)kernel.size() != spatial || llvm::any_of(kernel, [](int64_t k) { return k <= 0; }))
    return fail(loc, "'", opName, "' needs ", spatial, " positive kernel sizes");
  if (failed(checkWindowAttrs(loc, opName, spatial, adaptor.getStride(), adaptor.getPadding(),
                              adaptor.getDilation())))
    return failure();
  SmallVector<int64_t> shape(in.getShape().take_front(lead));
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t o = windowOutput(in.getDimSize(lead + i), kernel[i], adaptor.getStride()[i],
                             adaptor.getPadding()[2 * i], adaptor.getPadding()[2 * i + 1],
                             adaptor.getDilation()[i]);
    if (o == -1)
      return fail(loc, "'", opName, "' window is larger than the padded input ",
                  describeWithShape(adaptor.getInput()));
    shape.push_back(o);
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult MaxPool1DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferPool(loc, getOperationName(), 1, adaptor, types);
}
LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferPool(loc, getOperationName(), 2, adaptor, types);
}
LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferPool(loc, getOperationName(), 2, adaptor, types);
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType idx = getRanked(adaptor.getIndices()), w = getRanked(adaptor.getWeight());
  if (w.getRank() != 2)
    return fail(loc, "'mithril.embedding' weight must be [vocabulary, dimension], got ",
                describeWithShape(adaptor.getWeight()));
  SmallVector<int64_t> shape(idx.getShape());
  shape.push_back(w.getDimSize(1));
  types.push_back(RankedTensorType::get(shape, w.getElementType()));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  int64_t n = adaptor.getNumAxes();
  if (n < 1 || n > t.getRank())
    return fail(loc, "'mithril.layer_norm' num_axes ", n, " is out of range for ",
                describeWithShape(adaptor.getInput()));
  size_t expected = size_t(adaptor.getScaled()) + size_t(adaptor.getShifted());
  if (adaptor.getAffine().size() != expected)
    return fail(loc, "'mithril.layer_norm' takes ", expected, " weight and bias operands (scaled ",
                adaptor.getScaled(), ", shifted ", adaptor.getShifted(), "), got ",
                adaptor.getAffine().size());
  // Weight and bias have the normalized axes' shape.
  ArrayRef<int64_t> normalized = t.getShape().take_back(n);
  for (Value param : adaptor.getAffine()) {
    RankedTensorType pt = getRanked(param);
    bool fits = pt.getRank() == n;
    for (int64_t i = 0; fits && i < n; ++i)
      fits = ShapedType::isDynamic(pt.getDimSize(i)) ||
             ShapedType::isDynamic(normalized[i]) || pt.getDimSize(i) == normalized[i];
    if (!fits)
      return fail(loc, "'mithril.layer_norm' weight and bias must have the shape of the ",
                  "normalized axes ", formatShape(normalized), " of ",
                  describeWithShape(adaptor.getInput()), ", got ", describeWithShape(param));
  }
  types.push_back(t);
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  if (t.getRank() < 2)
    return fail(loc, "'mithril.batch_norm' input must be [N, C, ...], got ",
                describeWithShape(adaptor.getInput()));
  for (Value v : {adaptor.getMean(), adaptor.getVariance(), adaptor.getWeight(),
                  adaptor.getBias()}) {
    RankedTensorType vt = getRanked(v);
    if (vt.getRank() != 1 || !dimsCompatible(vt.getDimSize(0), t.getDimSize(1)) ||
        vt.getElementType() != t.getElementType())
      return fail(loc, "'mithril.batch_norm' statistics must be [", t.getDimSize(1),
                  "] of ", t.getElementType(), ", got ", describeWithShape(v));
  }
  types.push_back(t);
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType in = getRanked(adaptor.getInput()), tg = getRanked(adaptor.getTarget());
  if (in.getRank() < 1)
    return fail(loc, "'mithril.cross_entropy' input must be [N, C, ...] or [C]");
  if (adaptor.getFromLogits() && adaptor.getFromLogProbs())
    return fail(loc, "'mithril.cross_entropy' input cannot be both logits and log-probabilities");
  int64_t classAxis = in.getRank() == 1 ? 0 : 1;
  SmallVector<int64_t> shape(in.getShape());
  shape.erase(shape.begin() + classAxis);
  if (isa<IntegerType>(tg.getElementType())) {
    if (tg.getRank() != (int64_t)shape.size() ||
        !llvm::all_of(llvm::zip(tg.getShape(), shape),
                      [](auto p) { return dimsCompatible(std::get<0>(p), std::get<1>(p)); }))
      return fail(loc, "'mithril.cross_entropy' class-index target ",
                  describeWithShape(adaptor.getTarget()), " must have shape ",
                  formatShape(shape), " for input ", describeWithShape(adaptor.getInput()));
  } else if (tg.getElementType() != in.getElementType() ||
             !areCompatibleTypes(TypeRange{Type(tg)}, TypeRange{Type(in)})) {
    return fail(loc, "'mithril.cross_entropy' probability target ",
                describeWithShape(adaptor.getTarget()),
                " must match the input ", describeWithShape(adaptor.getInput()));
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConvGradInputOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType g = getRanked(adaptor.getGrad()), w = getRanked(adaptor.getWeight());
  int64_t spatial = g.getRank() - 2;
  if (spatial < 1 || w.getRank() != g.getRank() ||
      (int64_t)adaptor.getInputSpatial().size() != spatial)
    return fail(loc, "'mithril.conv_grad_input' operands do not match the convolution rank");
  SmallVector<int64_t> shape = {g.getDimSize(0), w.getDimSize(1) * (int64_t)adaptor.getGroups()};
  llvm::append_range(shape, adaptor.getInputSpatial());
  types.push_back(RankedTensorType::get(shape, g.getElementType()));
  return success();
}

LogicalResult ConvGradWeightOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType in = getRanked(adaptor.getInput()), g = getRanked(adaptor.getGrad());
  int64_t groups = adaptor.getGroups();
  if (in.getRank() != g.getRank() || groups <= 0 ||
      (int64_t)adaptor.getKernelSize().size() != in.getRank() - 2)
    return fail(loc, "'mithril.conv_grad_weight' operands do not match the convolution rank");
  SmallVector<int64_t> shape = {g.getDimSize(1), in.getDimSize(1) / groups};
  llvm::append_range(shape, adaptor.getKernelSize());
  types.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                              Adaptor adaptor, SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AvgPoolGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType g = getRanked(adaptor.getGrad());
  int64_t spatial = adaptor.getKernelSize().size();
  if ((int64_t)adaptor.getInputSpatial().size() != spatial || g.getRank() < spatial)
    return fail(loc, "'mithril.avg_pool_grad' attributes do not match the pooling rank");
  SmallVector<int64_t> shape(g.getShape().drop_back(spatial));
  llvm::append_range(shape, adaptor.getInputSpatial());
  types.push_back(RankedTensorType::get(shape, g.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType g = getRanked(adaptor.getGrad());
  types.push_back(RankedTensorType::get(
      {(int64_t)adaptor.getNumEmbeddings(), g.getDimSize(g.getRank() - 1)}, g.getElementType()));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  RankedTensorType g = getRanked(adaptor.getGrad());
  types.push_back(RankedTensorType::get(adaptor.getInputShape(), g.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers for attributes that inference does not see
//===----------------------------------------------------------------------===//

template <typename OpT>
static LogicalResult verifyAxisAttr(OpT op) {
  int64_t rank = op.getInput().getType().getRank();
  int64_t axis = op.getAxis();
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return op.emitOpError("axis ") << axis << " is out of range for "
                                   << describeWithShape(op.getInput());
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifyAxisAttr(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxisAttr(*this); }

template <typename OpT>
static LogicalResult verifyThresholdAttr(OpT op) {
  std::optional<APFloat> t = op.getThreshold();
  if (t && !(t->convertToDouble() > 0.0 && std::isfinite(t->convertToDouble())))
    return op.emitOpError("threshold must be a positive finite number, got ")
           << t->convertToDouble();
  return success();
}

LogicalResult RobustSqrtOp::verify() { return verifyThresholdAttr(*this); }
LogicalResult RobustLogOp::verify() { return verifyThresholdAttr(*this); }
LogicalResult StableReciprocalOp::verify() { return verifyThresholdAttr(*this); }
LogicalResult RobustPowerOp::verify() { return verifyThresholdAttr(*this); }

LogicalResult ReverseOp::verify() {
  RankedTensorType t = getInput().getType();
  FailureOr<SmallVector<int64_t>> axes = normalizeAxes(getAxes(), t.getRank());
  if (failed(axes))
    return emitOpError("has invalid axes for ") << describeWithShape(getInput());
  for (int64_t axis : *axes)
    if (t.isDynamicDim(axis))
      return emitOpError("reverses axis ") << axis << " of " << describeWithShape(getInput())
                                           << ", whose size is dynamic";
  return success();
}

LogicalResult EyeLikeOp::verify() {
  if (getInput().getType().getRank() != 2)
    return emitOpError("expects a matrix, got ") << describeWithShape(getInput());
  return success();
}

LogicalResult TrilOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("expects a matrix or a stack of matrices (rank >= 2), got ")
           << describeWithShape(getInput());
  return success();
}

//===----------------------------------------------------------------------===//
// Feature maps
//===----------------------------------------------------------------------===//

std::optional<int64_t> mithril::polynomialFeatureCount(int64_t features, int64_t degree) {
  // C(features + degree, degree) - 1, computed incrementally; every partial
  // product C(features + i, i) is an integer.
  if (features < 0 || degree < 1)
    return std::nullopt;
  constexpr int64_t kLimit = int64_t(1) << 31;
  int64_t count = 1;
  for (int64_t i = 1; i <= degree; ++i) {
    if (count > kLimit / (features + i))
      return std::nullopt;
    count = count * (features + i) / i;
  }
  return count - 1;
}

LogicalResult PolynomialFeaturesOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &types) {
  RankedTensorType t = getRanked(adaptor.getInput());
  if (!t || t.getRank() != 2)
    return fail(loc, "'mithril.polynomial_features' expects a [samples, features] matrix, got ",
                describeWithShape(adaptor.getInput()));
  auto degree = static_cast<int64_t>(adaptor.getDegree());
  if (degree < 1)
    return fail(loc, "'mithril.polynomial_features' degree must be at least 1, got ", degree);
  // At degree 1 the monomials are the columns themselves.
  int64_t width = degree == 1 ? t.getDimSize(1) : ShapedType::kDynamic;
  if (degree > 1 && !t.isDynamicDim(1)) {
    std::optional<int64_t> count = polynomialFeatureCount(t.getDimSize(1), degree);
    if (!count)
      return fail(loc, "'mithril.polynomial_features' of ", t.getDimSize(1),
                  " features at degree ", degree, " has too many monomials");
    width = *count;
  }
  types.push_back(RankedTensorType::get({t.getDimSize(0), width}, t.getElementType()));
  return success();
}
