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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
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
  /// On the function's argument itself, not on a view of it.
  bool direct;
};
} // namespace

/// Every access to `root` and to the memrefs derived from it.
static SmallVector<Access> accessesOf(Value root) {
  SmallVector<Access> accesses;
  SmallVector<std::pair<Value, bool>> worklist{{root, true}};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    auto [value, direct] = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<vector::TransferReadOp, memref::LoadOp>(user)) {
        accesses.push_back({user, Access::Read, direct});
        continue;
      }
      auto write = dyn_cast<vector::TransferWriteOp>(user);
      auto store = dyn_cast<memref::StoreOp>(user);
      if ((write && use.get() == write.getBase()) || (store && use.get() == store.getMemRef())) {
        accesses.push_back({user, Access::Write, direct});
        continue;
      }
      // Views, casts and reshapes touch nothing themselves: their results
      // are followed. Sizes (memref.dim) are not contents. An address
      // escapes to whatever takes it.
      if (isMemoryEffectFree(user) && !isa<memref::ExtractAlignedPointerAsIndexOp>(user)) {
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            worklist.push_back({result, false});
        continue;
      }
      accesses.push_back({user, Access::Opaque, direct});
    }
  }
  return accesses;
}

namespace {
/// Where and how much of a buffer an element or vector access touches.
struct Footprint {
  SmallVector<Value> indices;
  /// The extent in each of the buffer's dimensions (1 for an element).
  SmallVector<int64_t> extents;
  VectorType vectorType;
  AffineMap map;
};
} // namespace

static std::optional<Footprint> footprintOf(Operation *op) {
  Footprint footprint;
  auto fromTransfer = [&](VectorTransferOpInterface transfer,
                          MemRefType memref) -> std::optional<Footprint> {
    // A mask would leave elements unread or unwritten; a permuted or
    // broadcast map is another shape of footprint: neither is needed here.
    if (transfer.getMask() || !transfer.getPermutationMap().isMinorIdentity())
      return std::nullopt;
    footprint.indices.assign(transfer.getIndices().begin(), transfer.getIndices().end());
    footprint.vectorType = transfer.getVectorType();
    footprint.map = transfer.getPermutationMap();
    int64_t rank = memref.getRank(), vectorRank = footprint.vectorType.getRank();
    footprint.extents.assign(rank, 1);
    for (int64_t d = 0; d < vectorRank; ++d)
      footprint.extents[rank - vectorRank + d] = footprint.vectorType.getDimSize(d);
    return footprint;
  };
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    return fromTransfer(read, dyn_cast<MemRefType>(read.getBase().getType()));
  if (auto write = dyn_cast<vector::TransferWriteOp>(op))
    return fromTransfer(write, dyn_cast<MemRefType>(write.getBase().getType()));
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    footprint.indices.assign(load.getIndices().begin(), load.getIndices().end());
    footprint.extents.assign(footprint.indices.size(), 1);
    return footprint;
  }
  if (auto store = dyn_cast<memref::StoreOp>(op)) {
    footprint.indices.assign(store.getIndices().begin(), store.getIndices().end());
    footprint.extents.assign(footprint.indices.size(), 1);
    return footprint;
  }
  return std::nullopt;
}

static bool sameFootprint(const Footprint &a, const Footprint &b) {
  return a.indices == b.indices && a.extents == b.extents && a.vectorType == b.vectorType &&
         a.map == b.map;
}

/// Whether the loop nest `top` reads `input` and writes `output` element by
/// element: all its reads of `input` before all its writes of `output`, in
/// one block, at the same indices, each element by one iteration only.
static bool updatesElementwise(Operation *top, ArrayRef<Access> reads, ArrayRef<Access> writes) {
  if (reads.empty() || writes.empty())
    return false;
  Block *block = reads.front().op->getBlock();
  std::optional<Footprint> footprint = footprintOf(reads.front().op);
  if (!footprint)
    return false;
  Operation *lastRead = nullptr;
  for (const Access &read : reads) {
    std::optional<Footprint> other = footprintOf(read.op);
    if (read.kind != Access::Read || !read.direct || read.op->getBlock() != block || !other ||
        !sameFootprint(*footprint, *other))
      return false;
    if (!lastRead || lastRead->isBeforeInBlock(read.op))
      lastRead = read.op;
  }
  for (const Access &write : writes) {
    std::optional<Footprint> other = footprintOf(write.op);
    if (write.kind != Access::Write || !write.direct || write.op->getBlock() != block || !other ||
        !sameFootprint(*footprint, *other) || write.op->isBeforeInBlock(lastRead))
      return false;
  }
  // The loops around the block: each induction variable must pick the
  // element (so no two iterations share one), stepping at least the
  // access's extent in its dimension.
  llvm::SmallDenseMap<Value, int64_t> steps;
  for (Operation *loop = block->getParentOp();; loop = loop->getParentOp()) {
    if (!loop)
      return false;
    auto record = [&](ValueRange ivs, ArrayRef<OpFoldResult> loopSteps) {
      for (auto [iv, step] : llvm::zip_equal(ivs, loopSteps)) {
        std::optional<int64_t> constant = getConstantIntValue(step);
        steps[iv] = constant ? *constant : 0;
      }
    };
    if (auto forOp = dyn_cast<scf::ForOp>(loop))
      record(forOp.getInductionVar(), OpFoldResult(forOp.getStep()));
    else if (auto forall = dyn_cast<scf::ForallOp>(loop))
      record(forall.getInductionVars(), forall.getMixedStep());
    else if (auto parallel = dyn_cast<scf::ParallelOp>(loop))
      record(parallel.getInductionVars(), getAsOpFoldResult(parallel.getStep()));
    else if (!isa<scf::IfOp>(loop))
      return false;
    if (loop == top)
      break;
  }
  llvm::SmallDenseSet<Value> used;
  for (auto [index, extent] : llvm::zip_equal(footprint->indices, footprint->extents)) {
    if (matchPattern(index, m_Constant()))
      continue;
    auto step = steps.find(index);
    if (step == steps.end() || step->second < extent || !used.insert(index).second)
      return false;
  }
  return used.size() == steps.size();
}

/// Whether `output` may be `input`'s buffer: `body` touches `input` only
/// before it first touches `output`, or in that op, element by element.
static bool mayShareBuffer(Block &body, Value input, Value output) {
  SmallVector<Access> inputAccesses = accessesOf(input);
  SmallVector<Access> outputAccesses = accessesOf(output);
  if (outputAccesses.empty())
    return false;
  Operation *firstOutput = nullptr;
  for (const Access &access : outputAccesses) {
    Operation *top = body.findAncestorOpInBlock(*access.op);
    if (!top)
      return false;
    if (!firstOutput || top->isBeforeInBlock(firstOutput))
      firstOutput = top;
  }
  SmallVector<Access> shared, written;
  for (const Access &access : inputAccesses) {
    Operation *top = body.findAncestorOpInBlock(*access.op);
    if (!top)
      return false;
    if (top == firstOutput)
      shared.push_back(access);
    else if (firstOutput->isBeforeInBlock(top))
      return false;
  }
  if (shared.empty())
    return true;
  for (const Access &access : outputAccesses)
    if (body.findAncestorOpInBlock(*access.op) == firstOutput)
      written.push_back(access);
  return updatesElementwise(firstOutput, shared, written);
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
