//===- MarkInPlaceUpdates.cpp - outputs that may overwrite their input ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// A training step's output `new:X` is the next value of its input `X` (a
// parameter or optimizer state). Where the bufferized function reads every
// element of `X` before it writes that element of `new:X`, and never after,
// the caller may hand it one buffer for both: the update then reads and
// writes the same cache lines instead of pulling in a third buffer to write.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILMARKINPLACEUPDATES
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

static constexpr StringLiteral kInPlaceOutputsAttr = "mithril.in_place_outputs";

namespace {
/// One op's access to a buffer: a read or write of a vector or an element at
/// indices it names, or anything else (a call, a copy, a linalg op, the
/// buffer's address), which may touch any element.
struct Access {
  Operation *op;
  enum Kind { Read, Write, Opaque } kind;
};
} // namespace

/// Every access to `root` and to the memrefs derived from it.
static SmallVector<Access> accessesOf(Value root) {
  SmallVector<Access> accesses;
  SmallVector<Value> worklist{root};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<vector::TransferReadOp, memref::LoadOp>(user)) {
        accesses.push_back({user, Access::Read});
        continue;
      }
      auto write = dyn_cast<vector::TransferWriteOp>(user);
      auto store = dyn_cast<memref::StoreOp>(user);
      if ((write && use.get() == write.getBase()) || (store && use.get() == store.getMemRef())) {
        accesses.push_back({user, Access::Write});
        continue;
      }
      // Views, casts and reshapes touch nothing themselves: their results
      // are followed. Sizes (memref.dim) are not contents. An address
      // escapes to whatever takes it, and a value of another type (a
      // tensor) to whatever reads it.
      if (isMemoryEffectFree(user) && !isa<memref::ExtractAlignedPointerAsIndexOp>(user) &&
          llvm::all_of(user->getResultTypes(),
                       [](Type type) { return isa<BaseMemRefType, IndexType>(type); })) {
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            worklist.push_back(result);
        continue;
      }
      accesses.push_back({user, Access::Opaque});
    }
  }
  return accesses;
}

namespace {
/// An index as a sum of values times constants plus a constant: what
/// additions and affine maps of loop variables and subview offsets give.
struct LinearIndex {
  SmallVector<std::pair<Value, int64_t>> terms; // sorted, no zero coefficient
  int64_t constant = 0;
  bool operator==(const LinearIndex &other) const {
    return terms == other.terms && constant == other.constant;
  }
};

/// Where and how much of a buffer an element or vector access touches, in
/// the coordinates of the function's argument (through subviews).
struct Footprint {
  SmallVector<LinearIndex> indices;
  /// The extent in each of the buffer's dimensions (1 for an element).
  SmallVector<int64_t> extents;
};
} // namespace

static void addLinear(Value value, int64_t scale, llvm::SmallDenseMap<Value, int64_t> &terms,
                      int64_t &constant, unsigned depth = 0);

static bool addAffine(AffineExpr expr, ValueRange dims, ValueRange symbols, int64_t scale,
                      llvm::SmallDenseMap<Value, int64_t> &terms, int64_t &constant,
                      unsigned depth) {
  if (auto value = dyn_cast<AffineConstantExpr>(expr)) {
    constant += scale * value.getValue();
    return true;
  }
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    addLinear(dims[dim.getPosition()], scale, terms, constant, depth + 1);
    return true;
  }
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr)) {
    addLinear(symbols[symbol.getPosition()], scale, terms, constant, depth + 1);
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (expr.getKind() == AffineExprKind::Add)
    return addAffine(binary.getLHS(), dims, symbols, scale, terms, constant, depth) &&
           addAffine(binary.getRHS(), dims, symbols, scale, terms, constant, depth);
  if (expr.getKind() == AffineExprKind::Mul)
    if (auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS()))
      return addAffine(binary.getLHS(), dims, symbols, scale * factor.getValue(), terms, constant,
                       depth);
  return false;
}

static void addLinear(Value value, int64_t scale, llvm::SmallDenseMap<Value, int64_t> &terms,
                      int64_t &constant, unsigned depth) {
  if (std::optional<int64_t> known = getConstantIntValue(value)) {
    constant += scale * *known;
    return;
  }
  if (depth < 8) {
    if (auto add = value.getDefiningOp<arith::AddIOp>()) {
      addLinear(add.getLhs(), scale, terms, constant, depth + 1);
      addLinear(add.getRhs(), scale, terms, constant, depth + 1);
      return;
    }
    if (auto apply = value.getDefiningOp<affine::AffineApplyOp>()) {
      AffineMap map = apply.getAffineMap();
      llvm::SmallDenseMap<Value, int64_t> applied;
      int64_t appliedConstant = 0;
      if (map.getNumResults() == 1 &&
          addAffine(map.getResult(0), apply.getDimOperands(), apply.getSymbolOperands(), scale,
                    applied, appliedConstant, depth)) {
        for (auto [term, coefficient] : applied)
          terms[term] += coefficient;
        constant += appliedConstant;
        return;
      }
    }
  }
  terms[value] += scale;
}

/// The sum of `parts` (indices, offsets) as one linear index.
static LinearIndex linearize(ArrayRef<OpFoldResult> parts) {
  LinearIndex linear;
  llvm::SmallDenseMap<Value, int64_t> terms;
  for (OpFoldResult part : parts) {
    if (auto value = dyn_cast<Value>(part))
      addLinear(value, 1, terms, linear.constant);
    else
      linear.constant += *getConstantIntValue(part);
  }
  for (auto [term, coefficient] : terms)
    if (coefficient != 0)
      linear.terms.push_back({term, coefficient});
  llvm::sort(linear.terms, [](auto &a, auto &b) {
    return a.first.getAsOpaquePointer() < b.first.getAsOpaquePointer();
  });
  return linear;
}

/// The footprint of a read or write of `root` (directly or through unit-
/// stride subviews that keep the rank), none for any other access.
static std::optional<Footprint> footprintOf(Operation *op, Value root) {
  Footprint footprint;
  Value base;
  SmallVector<OpFoldResult> indices;
  // The buffer dimension each vector dimension runs along.
  SmallVector<std::pair<unsigned, int64_t>> vectorDims;
  if (auto transfer = dyn_cast<VectorTransferOpInterface>(op)) {
    // A mask would leave elements unread or unwritten; a transposing or
    // broadcasting map is another shape of footprint: neither is needed
    // here. A map that skips unit dimensions in order is a box still.
    AffineMap map = transfer.getPermutationMap();
    if (!isa<vector::TransferReadOp, vector::TransferWriteOp>(op) || transfer.getMask() ||
        !map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
    for (auto [d, result] : llvm::enumerate(map.getResults())) {
      unsigned position = cast<AffineDimExpr>(result).getPosition();
      if (!vectorDims.empty() && position <= vectorDims.back().first)
        return std::nullopt;
      vectorDims.push_back({position, transfer.getVectorType().getDimSize(d)});
    }
    base = transfer.getBase();
    indices = getAsOpFoldResult(transfer.getIndices());
  } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
    base = load.getMemRef();
    indices = getAsOpFoldResult(load.getIndices());
  } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
    base = store.getMemRef();
    indices = getAsOpFoldResult(store.getIndices());
  } else {
    return std::nullopt;
  }
  int64_t rank = indices.size();
  footprint.extents.assign(rank, 1);
  for (auto [position, size] : vectorDims)
    footprint.extents[position] = size;
  // Each subview adds its offsets.
  SmallVector<SmallVector<OpFoldResult>> offsets;
  while (base != root) {
    auto subview = base.getDefiningOp<memref::SubViewOp>();
    if (!subview || subview.getSourceType().getRank() != rank ||
        subview.getType().getRank() != rank ||
        llvm::any_of(subview.getMixedStrides(),
                     [](OpFoldResult stride) { return !isConstantIntValue(stride, 1); }))
      return std::nullopt;
    offsets.push_back(subview.getMixedOffsets());
    base = subview.getSource();
  }
  for (int64_t d = 0; d < rank; ++d) {
    SmallVector<OpFoldResult> parts{indices[d]};
    for (ArrayRef<OpFoldResult> offset : offsets)
      parts.push_back(offset[d]);
    footprint.indices.push_back(linearize(parts));
  }
  return footprint;
}

/// The same elements (vectors of the same extents, whatever their unit
/// dimensions).
static bool sameFootprint(const Footprint &a, const Footprint &b) {
  return a.indices == b.indices && a.extents == b.extents;
}

namespace {
/// A loop variable inside the op that touches the buffers: its step, and
/// the distance from its first value to its last (none where unknown).
struct LoopRange {
  std::optional<int64_t> lower, step, span;
};
} // namespace

/// The loop variables of the loops from `block` out to `top`; false if
/// another op with regions lies between them. None where the access is `top`
/// itself, in `top`'s block (a read or write outside any loop).
static bool loopsAround(Block *block, Operation *top,
                        llvm::SmallDenseMap<Value, LoopRange> &loops) {
  if (top->getBlock() == block)
    return true;
  for (Operation *loop = block->getParentOp();; loop = loop->getParentOp()) {
    if (!loop)
      return false;
    auto record = [&](ValueRange ivs, ArrayRef<OpFoldResult> lowers, ArrayRef<OpFoldResult> uppers,
                      ArrayRef<OpFoldResult> steps) {
      for (auto [iv, lower, upper, step] : llvm::zip_equal(ivs, lowers, uppers, steps)) {
        LoopRange range{getConstantIntValue(lower), getConstantIntValue(step), std::nullopt};
        std::optional<int64_t> end = getConstantIntValue(upper);
        if (range.lower && range.step && end && *range.step > 0)
          range.span =
              *end > *range.lower ? (*end - *range.lower - 1) / *range.step * *range.step : 0;
        loops[iv] = range;
      }
    };
    // scf.for, scf.forall and scf.parallel say their variables and bounds;
    // an scf.if runs its block once or not at all.
    auto loopLike = dyn_cast<LoopLikeOpInterface>(loop);
    auto ivs = loopLike ? loopLike.getLoopInductionVars() : std::nullopt;
    auto lowers = loopLike ? loopLike.getLoopLowerBounds() : std::nullopt;
    auto uppers = loopLike ? loopLike.getLoopUpperBounds() : std::nullopt;
    auto steps = loopLike ? loopLike.getLoopSteps() : std::nullopt;
    if (ivs && lowers && uppers && steps)
      record(*ivs, *lowers, *uppers, *steps);
    else if (!isa<scf::IfOp>(loop))
      return false;
    if (loop == top)
      return true;
  }
}

/// Whether no two iterations of the loops around an access with this
/// footprint touch one element: each loop variable in one index only, with
/// coefficient 1, stepping further than everything finer in that index
/// reaches (the access's extent and the finer loops' spans); the other
/// terms fixed while `top` runs.
static bool oneIterationPerElement(const Footprint &footprint, Operation *top,
                                   const llvm::SmallDenseMap<Value, LoopRange> &loops) {
  llvm::SmallDenseSet<Value> used;
  for (auto [index, extent] : llvm::zip_equal(footprint.indices, footprint.extents)) {
    SmallVector<LoopRange> ranges;
    for (auto [term, coefficient] : index.terms) {
      auto loop = loops.find(term);
      if (loop == loops.end()) {
        // Not a loop variable here: it must be defined outside `top`.
        if (top->isAncestor(term.getParentBlock()->getParentOp()))
          return false;
        continue;
      }
      if (coefficient != 1 || !loop->second.step || !used.insert(term).second)
        return false;
      ranges.push_back(loop->second);
    }
    llvm::sort(ranges, [](const LoopRange &a, const LoopRange &b) { return *a.step < *b.step; });
    int64_t reach = extent;
    for (auto [i, range] : llvm::enumerate(ranges)) {
      if (*range.step < reach)
        return false;
      if (i + 1 < ranges.size()) {
        if (!range.span)
          return false;
        reach += *range.span;
      }
    }
  }
  return used.size() == loops.size();
}

/// The elements an access may touch, dimension by dimension (none where
/// unknown: any element).
static std::optional<SmallVector<std::pair<int64_t, int64_t>>> boxOf(Operation *op, Value root,
                                                                     Operation *top) {
  std::optional<Footprint> footprint = footprintOf(op, root);
  llvm::SmallDenseMap<Value, LoopRange> loops;
  if (!footprint || !loopsAround(op->getBlock(), top, loops))
    return std::nullopt;
  SmallVector<std::pair<int64_t, int64_t>> box;
  for (auto [index, extent] : llvm::zip_equal(footprint->indices, footprint->extents)) {
    int64_t low = index.constant, high = index.constant + extent - 1;
    for (auto [term, coefficient] : index.terms) {
      auto loop = loops.find(term);
      if (loop == loops.end() || !loop->second.lower || !loop->second.span)
        return std::nullopt;
      int64_t first = coefficient * *loop->second.lower;
      int64_t last = coefficient * (*loop->second.lower + *loop->second.span);
      low += std::min(first, last);
      high += std::max(first, last);
    }
    box.push_back({low, high});
  }
  return box;
}

static bool disjoint(const std::optional<SmallVector<std::pair<int64_t, int64_t>>> &a,
                     const std::optional<SmallVector<std::pair<int64_t, int64_t>>> &b) {
  if (!a || !b || a->size() != b->size())
    return false;
  for (auto [x, y] : llvm::zip_equal(*a, *b))
    if (x.second < y.first || y.second < x.first)
      return true;
  return false;
}

/// Whether the loop nest `top` reads `input` and writes `output` element by
/// element: all its reads of `input` before all its writes of `output`, in
/// one block, at the same indices, each element by one iteration only.
static bool updatesElementwise(Operation *top, Value input, Value output, ArrayRef<Access> reads,
                               ArrayRef<Access> writes) {
  if (reads.empty() || writes.empty())
    return false;
  Block *block = reads.front().op->getBlock();
  std::optional<Footprint> footprint = footprintOf(reads.front().op, input);
  if (!footprint)
    return false;
  Operation *lastRead = nullptr;
  for (const Access &read : reads) {
    std::optional<Footprint> other = footprintOf(read.op, input);
    if (read.kind != Access::Read || read.op->getBlock() != block || !other ||
        !sameFootprint(*footprint, *other))
      return false;
    if (!lastRead || lastRead->isBeforeInBlock(read.op))
      lastRead = read.op;
  }
  for (const Access &write : writes) {
    std::optional<Footprint> other = footprintOf(write.op, output);
    if (write.kind != Access::Write || write.op->getBlock() != block || !other ||
        !sameFootprint(*footprint, *other) || write.op->isBeforeInBlock(lastRead))
      return false;
  }
  llvm::SmallDenseMap<Value, LoopRange> loops;
  return loopsAround(block, top, loops) && oneIterationPerElement(*footprint, top, loops);
}

/// Whether `output` may be `input`'s buffer: `body` reads every element of
/// `input` before it writes that element of `output`. The ops that touch
/// `input` before the first that touches `output` may do anything; each
/// later one must update element by element (it reads `input` and writes
/// `output`) or only write, and what an op writes no later op may read.
static bool mayShareBuffer(Block &body, Value input, Value output) {
  SmallVector<Access> inputAccesses = accessesOf(input);
  SmallVector<Access> outputAccesses = accessesOf(output);
  if (outputAccesses.empty())
    return false;
  // The accesses of each op of `body`, in order.
  llvm::DenseMap<Operation *, std::pair<SmallVector<Access>, SmallVector<Access>>> byOp;
  Operation *firstOutput = nullptr;
  for (const Access &access : outputAccesses) {
    Operation *top = body.findAncestorOpInBlock(*access.op);
    if (!top)
      return false;
    if (!firstOutput || top->isBeforeInBlock(firstOutput))
      firstOutput = top;
  }
  for (const Access &access : inputAccesses) {
    Operation *top = body.findAncestorOpInBlock(*access.op);
    if (!top)
      return false;
    if (top != firstOutput && top->isBeforeInBlock(firstOutput))
      continue;
    byOp[top].first.push_back(access);
  }
  for (const Access &access : outputAccesses)
    byOp[body.findAncestorOpInBlock(*access.op)].second.push_back(access);
  SmallVector<Operation *> ops;
  for (auto &entry : byOp)
    ops.push_back(entry.first);
  llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  // What the earlier ops wrote (their boxes), no later op may read.
  SmallVector<std::optional<SmallVector<std::pair<int64_t, int64_t>>>> written;
  for (Operation *op : ops) {
    auto &[reads, writes] = byOp[op];
    if (!reads.empty() && !writes.empty() && !updatesElementwise(op, input, output, reads, writes))
      return false;
    for (const Access &read : reads) {
      auto box = boxOf(read.op, input, op);
      for (const auto &earlier : written)
        if (!disjoint(box, earlier))
          return false;
    }
    for (const Access &write : writes)
      written.push_back(boxOf(write.op, output, op));
  }
  return true;
}

namespace {
struct MarkInPlaceUpdatesPass
    : public mithril::impl::MithrilMarkInPlaceUpdatesBase<MarkInPlaceUpdatesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      Block &body = func.getBody().front();
      llvm::StringMap<BlockArgument> inputs;
      for (BlockArgument arg : func.getArguments())
        if (func.getArgAttr(arg.getArgNumber(), "mithril.kind"))
          if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "mithril.name"))
            inputs[name.getValue()] = arg;
      SmallVector<Attribute> marked;
      for (BlockArgument arg : func.getArguments()) {
        auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "mithril.name");
        if (!name || func.getArgAttr(arg.getArgNumber(), "mithril.kind") ||
            !name.getValue().starts_with("new:"))
          continue;
        auto input = inputs.find(name.getValue().drop_front(4));
        if (input == inputs.end() || input->second.getType() != arg.getType() ||
            !isa<MemRefType>(arg.getType()))
          continue;
        if (mayShareBuffer(body, input->second, arg))
          marked.push_back(name);
      }
      if (marked.empty())
        func->removeAttr(kInPlaceOutputsAttr);
      else
        func->setAttr(kInPlaceOutputsAttr, ArrayAttr::get(func.getContext(), marked));
    }
  }
};
} // namespace
