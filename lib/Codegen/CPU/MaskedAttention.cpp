//===- MaskedAttention.cpp - attention rows apart where a mask hides columns ===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// A causal mask adds -inf to the scores above the diagonal: the softmax's
// exp makes them 0, and P * V adds 0 * V for each. Rows split into a few
// parts, each of static shape and only the columns some row of it can see,
// skip much of that work (a causal attention in two parts computes 75% of
// the scores and of P * V, in four 62.5%). fuseAttentionBlocks then blocks
// each part's rows as it blocks a whole attention.
//
//===----------------------------------------------------------------------===//

#include "Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

#include <limits>

using namespace mlir;
using namespace mithril::cpu::detail;

namespace {
/// The most parts the rows split into.
constexpr int64_t kMaxParts = 4;
/// Per part beyond the first, the share of the whole scores it must save:
/// each part is a copy of the attention's kernels, about 50 ms of compile
/// time on a Zen 4 core. A causal mask then takes two parts (75% of the
/// scores): the GPT forward of 4 layers at batch 8 on one Zen 4 core, 81.0
/// -> 77.6-78.3 ms for 0.1 s more compile; three or four parts (67%, 62.5%)
/// ran no faster within its noise, for 0.3-0.4 s.
constexpr double kPartCost = 0.1;
/// The most of the whole scores the parts may still compute for the split.
constexpr double kMaxComputedShare = 0.85;

/// What a value of the chain holds at the positions the mask hides, for
/// finite data: any finite number, -inf, exactly zero, a reduction's
/// accumulator unchanged, or unknown.
enum class Hidden { Finite, NegInf, Zero, Accumulator, Unknown };

bool isNegInf(const APFloat &value) { return value.isInfinity() && value.isNegative(); }

/// What `op` of a linalg body yields at hidden positions, given its
/// operands'; Unknown for what these rules do not show.
Hidden transfer(Operation &op, ArrayRef<Hidden> in) {
  auto all = [&](Hidden h) { return llvm::all_of(in, [&](Hidden x) { return x == h; }); };
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto value = dyn_cast<FloatAttr>(constant.getValue());
    return value && value.getValue().isZero() ? Hidden::Zero : Hidden::Finite;
  }
  if (isa<arith::ExtFOp>(op) || (isa<arith::TruncFOp>(op) && in[0] != Hidden::Accumulator))
    return in[0];
  if (isa<math::ExpOp>(op))
    return in[0] == Hidden::NegInf   ? Hidden::Zero
           : in[0] == Hidden::Finite ? Hidden::Finite
                                     : Hidden::Unknown;
  if (isa<arith::NegFOp>(op))
    return in[0] == Hidden::Zero || in[0] == Hidden::Finite ? in[0] : Hidden::Unknown;
  if (in.size() == 2) {
    Hidden a = in[0], b = in[1];
    auto either = [&](Hidden x, Hidden y) { return (a == x && b == y) || (a == y && b == x); };
    if (isa<arith::AddFOp>(op)) {
      if (a == Hidden::Zero || b == Hidden::Zero)
        return a == Hidden::Zero ? b : a;
      if (either(Hidden::NegInf, Hidden::Finite) || all(Hidden::NegInf))
        return Hidden::NegInf;
    } else if (isa<arith::SubFOp>(op)) {
      if (b == Hidden::Zero)
        return a;
      if (a == Hidden::NegInf && b == Hidden::Finite)
        return Hidden::NegInf;
    } else if (isa<arith::MulFOp>(op)) {
      if (either(Hidden::Zero, Hidden::Finite) || all(Hidden::Zero))
        return Hidden::Zero;
    } else if (isa<arith::DivFOp>(op)) {
      if (a == Hidden::Zero && b == Hidden::Finite)
        return Hidden::Zero;
    } else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op)) {
      if (a == Hidden::NegInf || b == Hidden::NegInf)
        return a == Hidden::NegInf ? b : a;
    }
  }
  return all(Hidden::Finite) ? Hidden::Finite : Hidden::Unknown;
}

/// What `op`'s body yields at hidden positions given its block arguments'.
Hidden yieldedAtHidden(linalg::GenericOp op, ArrayRef<Hidden> arguments) {
  DenseMap<Value, Hidden> known;
  Block *body = op.getBody();
  for (auto [argument, hidden] : llvm::zip_equal(body->getArguments(), arguments))
    known[argument] = hidden;
  for (Operation &inner : body->without_terminator()) {
    if (inner.getNumResults() != 1)
      return Hidden::Unknown;
    SmallVector<Hidden> in;
    for (Value operand : inner.getOperands()) {
      auto it = known.find(operand);
      in.push_back(it == known.end() ? Hidden::Finite : it->second);
    }
    known[inner.getResult(0)] = transfer(inner, in);
  }
  auto it = known.find(body->getTerminator()->getOperand(0));
  return it == known.end() ? Hidden::Finite : it->second;
}

/// The constant a generic reads along the scores' columns (the last of its
/// three loops) with some -inf: the additive mask. Its values in the order
/// of `input`'s elements, which may view it through a reshape (its unit
/// dimensions dropped: dropUnitInputDims).
DenseElementsAttr maskOf(Value input, AffineMap map) {
  if (auto collapse = input.getDefiningOp<tensor::CollapseShapeOp>())
    input = collapse.getSrc();
  else if (auto expand = input.getDefiningOp<tensor::ExpandShapeOp>())
    input = expand.getSrc();
  DenseElementsAttr attr;
  if (!matchPattern(input, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()) ||
      !map.isFunctionOfDim(map.getNumDims() - 1))
    return nullptr;
  bool hides = llvm::any_of(attr.getValues<APFloat>(), isNegInf);
  return hides ? attr : nullptr;
}

/// Per row of the scores, the columns up to its last one the mask `attr`
/// (read as `shape` through `map` by the chain's loops [batch, row,
/// column]) does not hide; empty where a row has none (its softmax is NaN:
/// nothing to skip).
SmallVector<int64_t> visibleColumns(DenseElementsAttr attr, ArrayRef<int64_t> shape, AffineMap map,
                                    int64_t rows) {
  std::optional<unsigned> rowAt, columnAt;
  for (auto [at, expr] : llvm::enumerate(map.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (dim.getPosition() == 1)
        rowAt = at;
      if (dim.getPosition() == 2)
        columnAt = at;
    }
  SmallVector<int64_t> visible(rows, 0);
  int64_t index = 0;
  for (const APFloat &value : attr.getValues<APFloat>()) {
    if (!isNegInf(value)) {
      // The element's coordinates along the row and column dims.
      SmallVector<int64_t> at(shape.size());
      for (int64_t d = shape.size() - 1, rest = index; d >= 0; --d) {
        at[d] = rest % shape[d];
        rest /= shape[d];
      }
      int64_t through = at[*columnAt] + 1;
      if (rowAt)
        visible[at[*rowAt]] = std::max(visible[at[*rowAt]], through);
      else
        for (int64_t &row : visible)
          row = std::max(row, through);
    }
    ++index;
  }
  if (llvm::is_contained(visible, 0))
    return {};
  return visible;
}
} // namespace

SmallVector<AttentionRows> mithril::cpu::detail::maskedRowParts(ArrayRef<Operation *> unordered,
                                                                linalg::LinalgOp qk,
                                                                linalg::LinalgOp pv, int64_t block,
                                                                int64_t quantum) {
  SmallVector<Operation *> members(unordered.begin(), unordered.end());
  llvm::sort(members, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  SmallVector<int64_t> ranges = qk.getStaticLoopRanges(); // [batch, rows, columns, k]
  int64_t rows = ranges[1], columns = ranges[2];
  if (rows % block != 0 || columns < 2 * quantum)
    return {};
  // The mask: one constant read along the columns with -inf in it.
  DenseElementsAttr mask;
  OpOperand *maskRead = nullptr;
  for (Operation *member : members) {
    auto generic = dyn_cast<linalg::GenericOp>(member);
    if (!generic || generic.getNumLoops() != 3)
      continue;
    for (OpOperand *input : generic.getDpsInputOperands())
      if (DenseElementsAttr found = maskOf(input->get(), generic.getMatchingIndexingMap(input))) {
        if (mask)
          return {};
        mask = found;
        maskRead = input;
      }
  }
  if (!mask)
    return {};
  // What each value over the columns holds where the mask hides them: P
  // must be zero there, and every row reduction must ignore them.
  DenseMap<Value, Hidden> hidden;
  hidden[qk->getResult(0)] = Hidden::Finite;
  for (Operation *member : members) {
    auto generic = dyn_cast<linalg::GenericOp>(member);
    if (!generic)
      continue;
    SmallVector<int64_t> its = cast<linalg::LinalgOp>(member).getStaticLoopRanges();
    if (its.size() != 3 || its[2] != columns)
      continue; // Per row: no hidden positions.
    SmallVector<Hidden> arguments;
    for (OpOperand *input : generic.getDpsInputOperands()) {
      auto it = hidden.find(input->get());
      if (it != hidden.end())
        arguments.push_back(it->second);
      else if (input == maskRead)
        arguments.push_back(Hidden::NegInf);
      else
        arguments.push_back(Hidden::Finite);
    }
    bool reduction = generic.getNumReductionLoops() == 1;
    arguments.push_back(reduction ? Hidden::Accumulator : Hidden::Unknown);
    Hidden result = yieldedAtHidden(generic, arguments);
    if (reduction ? result != Hidden::Accumulator : result == Hidden::Unknown)
      return {};
    if (!reduction)
      hidden[generic->getResult(0)] = result;
  }
  auto p = hidden.find(pv.getDpsInputOperand(0)->get());
  if (p == hidden.end() || p->second != Hidden::Zero)
    return {};

  SmallVector<int64_t> visible = visibleColumns(
      mask, cast<RankedTensorType>(maskRead->get().getType()).getShape(),
      cast<linalg::LinalgOp>(maskRead->getOwner()).getMatchingIndexingMap(maskRead), rows);
  if (visible.empty())
    return {};
  // Per block of rows, the columns it reads: whole register tiles of them.
  int64_t blocks = rows / block;
  SmallVector<int64_t> blockColumns(blocks);
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t most =
        *std::max_element(visible.begin() + b * block, visible.begin() + (b + 1) * block);
    blockColumns[b] = std::min<int64_t>(columns, llvm::alignTo(most, quantum));
  }
  // The parts of consecutive blocks that compute the fewest scores, the
  // columns of each its blocks' most: cost[k][n], the first n blocks in k
  // parts.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  SmallVector<SmallVector<int64_t>> cost(kMaxParts + 1, SmallVector<int64_t>(blocks + 1, kNone));
  SmallVector<SmallVector<int64_t>> cut(kMaxParts + 1, SmallVector<int64_t>(blocks + 1, 0));
  cost[0][0] = 0;
  for (int64_t k = 1; k <= kMaxParts; ++k)
    for (int64_t n = 1; n <= blocks; ++n)
      for (int64_t first = n - 1, widest = 0; first >= 0; --first) {
        widest = std::max(widest, blockColumns[first]);
        if (cost[k - 1][first] == kNone)
          continue;
        int64_t total = cost[k - 1][first] + (n - first) * block * widest;
        if (total < cost[k][n]) {
          cost[k][n] = total;
          cut[k][n] = first;
        }
      }
  double whole = static_cast<double>(rows) * columns;
  int64_t best = 0;
  double bestScore = whole;
  for (int64_t k = 1; k <= kMaxParts; ++k) {
    if (cost[k][blocks] == kNone)
      continue;
    double score = cost[k][blocks] + kPartCost * (k - 1) * whole;
    if (score < bestScore) {
      bestScore = score;
      best = k;
    }
  }
  if (!best || cost[best][blocks] > kMaxComputedShare * whole)
    return {};
  SmallVector<AttentionRows> parts;
  for (int64_t k = best, n = blocks; k > 0; n = cut[k][n], --k) {
    int64_t first = cut[k][n];
    int64_t widest = *std::max_element(blockColumns.begin() + first, blockColumns.begin() + n);
    parts.push_back({first * block, (n - first) * block, widest});
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

namespace {
/// Where a part's op works in its original's loops, or reads an operand: offsets and sizes.
struct Span {
  SmallVector<int64_t> offsets, sizes;
  bool operator==(const Span &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
};

/// The region of `op`'s loops that computes part `part`: rows
/// [offset, offset + rows) and the part's columns of every batch entry;
/// failure for an op of other loops.
FailureOr<Span> partLoops(linalg::LinalgOp op, linalg::LinalgOp qk, linalg::LinalgOp pv,
                          const AttentionRows &part, int64_t columns) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Span region{SmallVector<int64_t>(ranges.size(), 0), ranges};
  if (ranges.size() < 2)
    return failure();
  region.offsets[1] = part.offset;
  region.sizes[1] = part.rows;
  if (op == qk) // [batch, rows, columns, k]
    region.sizes[2] = part.columns;
  else if (op == pv) // [batch, rows, head, columns]
    region.sizes[3] = part.columns;
  else if (ranges.size() == 3 && ranges[2] == columns)
    region.sizes[2] = part.columns;
  else if (ranges.size() == 3 ? ranges[2] != 1 : ranges.size() != 2)
    return failure();
  return region;
}

/// The region of an operand read through `map` from loops working in
/// `loops`.
Span operandRegion(AffineMap map, const Span &loops) {
  Span region;
  for (AffineExpr expr : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    region.offsets.push_back(dim ? loops.offsets[dim.getPosition()] : 0);
    region.sizes.push_back(dim ? loops.sizes[dim.getPosition()] : 1);
  }
  return region;
}
} // namespace

FailureOr<SmallVector<AttentionPart>> mithril::cpu::detail::splitAttentionRows(
    RewriterBase &rewriter, ArrayRef<Operation *> members, linalg::LinalgOp qk, linalg::LinalgOp pv,
    ArrayRef<AttentionRows> parts, llvm::DenseSet<Operation *> &erased) {
  int64_t columns = qk.getStaticLoopRanges()[2];
  // The members in order, then the product.
  SmallVector<Operation *> ordered(members.begin(), members.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  ordered.push_back(pv);
  Location loc = pv.getLoc();
  SmallVector<Operation *> created;
  auto undo = [&] {
    for (Operation *op : llvm::reverse(created))
      rewriter.eraseOp(op);
    return failure();
  };
  auto track = [&](Operation *op) {
    created.push_back(op);
    return op;
  };
  auto slice = [&](Value source, const Span &region) {
    MLIRContext *ctx = rewriter.getContext();
    return track(tensor::ExtractSliceOp::create(
                     rewriter, loc, source, getAsIndexOpFoldResult(ctx, region.offsets),
                     getAsIndexOpFoldResult(ctx, region.sizes),
                     SmallVector<OpFoldResult>(region.sizes.size(), rewriter.getIndexAttr(1))))
        ->getResult(0);
  };
  rewriter.setInsertionPoint(pv);
  // The result, part by part, into the destination of P * V's rows.
  Value pvInit = pv.getDpsInitOperand(0)->get();
  auto pvFill = pvInit.getDefiningOp<linalg::FillOp>();
  bool fillsPv = pvFill && llvm::is_contained(members, pvFill.getOperation());
  auto resultType = cast<RankedTensorType>(pv->getResult(0).getType());
  Value dest = fillsPv ? track(tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                                                       resultType.getElementType()))
                             ->getResult(0)
                       : pvInit;
  SmallVector<AttentionPart> results;
  for (const AttentionRows &part : parts) {
    AttentionPart result;
    DenseMap<Value, std::pair<Value, Span>> partOf;
    for (Operation *op : ordered) {
      if (isa<linalg::FillOp>(op))
        continue; // Filled as each reader's region needs.
      auto linalgOp = cast<linalg::LinalgOp>(op);
      FailureOr<Span> loops = partLoops(linalgOp, qk, pv, part, columns);
      if (failed(loops))
        return undo();
      SmallVector<Value> operands;
      for (OpOperand &operand : op->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (!type || type.getRank() == 0) {
          operands.push_back(value);
          continue;
        }
        Span region = operandRegion(linalgOp.getMatchingIndexingMap(&operand), *loops);
        if (auto it = partOf.find(value); it != partOf.end()) {
          // A member's part: the same rows and columns as it computed.
          if (!(it->second.second == region))
            return undo();
          operands.push_back(it->second.first);
          continue;
        }
        auto fill = value.getDefiningOp<linalg::FillOp>();
        if (fill && llvm::is_contained(members, fill.getOperation())) {
          Value into = op == pv.getOperation()
                           ? slice(dest, region)
                           : track(tensor::EmptyOp::create(rewriter, loc, region.sizes,
                                                           type.getElementType()))
                                 ->getResult(0);
          Operation *partFill =
              track(linalg::FillOp::create(rewriter, loc, fill.getInputs(), ValueRange(into)));
          result.fusible.insert(partFill);
          operands.push_back(partFill->getResult(0));
          continue;
        }
        if (region.offsets == SmallVector<int64_t>(region.sizes.size(), 0) &&
            ArrayRef(region.sizes) == type.getShape()) {
          operands.push_back(value);
          continue;
        }
        operands.push_back(slice(value, region));
      }
      SmallVector<Type> types;
      for (OpOperand &init : linalgOp.getDpsInitsMutable())
        types.push_back(operands[init.getOperandNumber()].getType());
      Operation *copy = track(clone(rewriter, op, types, operands));
      AffineMap resultMap = linalgOp.getIndexingMapMatchingResult(op->getResult(0));
      partOf[op->getResult(0)] = {copy->getResult(0), operandRegion(resultMap, *loops)};
      if (op == pv.getOperation())
        result.product = cast<linalg::LinalgOp>(copy);
      else
        result.fusible.insert(copy);
    }
    SmallVector<OpFoldResult> offsets(resultType.getRank(), rewriter.getIndexAttr(0));
    offsets[1] = rewriter.getIndexAttr(part.offset);
    dest = track(tensor::InsertSliceOp::create(
                     rewriter, loc, result.product->getResult(0), dest, offsets,
                     tensor::getMixedSizes(rewriter, loc, result.product->getResult(0)),
                     SmallVector<OpFoldResult>(resultType.getRank(), rewriter.getIndexAttr(1))))
               ->getResult(0);
    results.push_back(std::move(result));
  }
  rewriter.replaceAllUsesWith(pv->getResult(0), dest);
  erased.insert(pv);
  rewriter.eraseOp(pv);
  eraseUnread(rewriter, members, erased);
  return results;
}
