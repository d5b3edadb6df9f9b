//===- StackInPlace.cpp - buffers copied into a stack, written in place ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILSTACKINPLACE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// Bytes the view offsets and the allocation keep aligned to.
constexpr int64_t kAlignment = 64;

/// One buffer copied whole into a slice of the stack.
struct StackedBuffer {
  memref::AllocOp buffer;
  memref::CopyOp copy;
  memref::SubViewOp slice;
  int64_t byteOffset;
};

/// `op`, or its ancestor in `block`.
Operation *inBlock(Operation *op, Block *block) { return block->findAncestorOpInBlock(*op); }

/// A static allocation of identity layout and sized elements, no
/// dynamic sizes or symbols: what a view of raw bytes can stand for.
bool isPlainAlloc(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  return type.hasStaticShape() && type.getLayout().isIdentity() &&
         alloc.getDynamicSizes().empty() && alloc.getSymbolOperands().empty() &&
         type.getElementType().isIntOrFloat() &&
         type.getElementType().getIntOrFloatBitWidth() % 8 == 0 && !type.getMemorySpace();
}

/// The ops that use `value` or a view of it (subviews, casts, reshapes).
void collectUsers(Value value, SmallVectorImpl<Operation *> &users) {
  for (Operation *user : value.getUsers()) {
    users.push_back(user);
    if (auto view = dyn_cast<ViewLikeOpInterface>(user))
      if (view.getViewSource() == value)
        for (Value result : user->getResults())
          collectUsers(result, users);
  }
}

/// The buffer that a copy in `block` writes into `slice` whole (the
/// slice's other uses are checked by the caller), when that buffer is a
/// plain allocation of `block`; `slice` is a contiguous, aligned part of the
/// stack.
std::optional<StackedBuffer> stackedBuffer(memref::SubViewOp slice, Block *block) {
  memref::CopyOp copy;
  for (Operation *user : slice->getUsers())
    if (auto candidate = dyn_cast<memref::CopyOp>(user);
        candidate && candidate.getTarget() == slice.getResult() && candidate->getBlock() == block) {
      if (copy)
        return std::nullopt;
      copy = candidate;
    }
  if (!copy)
    return std::nullopt;
  // The buffer itself, or a reshape of it (a collapse of its dimensions
  // into the slice's).
  Value source = copy.getSource();
  while (isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(source.getDefiningOp()))
    source = source.getDefiningOp()->getOperand(0);
  auto buffer = source.getDefiningOp<memref::AllocOp>();
  if (!buffer || buffer->getBlock() != block || !isPlainAlloc(buffer))
    return std::nullopt;
  MemRefType sliceType = slice.getType();
  auto copiedType = dyn_cast<MemRefType>(copy.getSource().getType());
  if (!copiedType)
    return std::nullopt;
  if (sliceType.getShape() != copiedType.getShape() || !copiedType.getLayout().isIdentity() ||
      sliceType.getElementType() != copiedType.getElementType() ||
      !sliceType.areTrailingDimsContiguous(sliceType.getRank()))
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(sliceType.getStridesAndOffset(strides, offset)) || ShapedType::isDynamic(offset))
    return std::nullopt;
  int64_t byteOffset = offset * (sliceType.getElementTypeBitWidth() / 8);
  if (byteOffset % kAlignment != 0)
    return std::nullopt;
  return StackedBuffer{buffer, copy, slice, byteOffset};
}

/// Rewrites `stack` and the buffers copied into it when that is safe; the
/// buffers' allocations erased go into `erased`.
void stackInPlace(memref::AllocOp stack, IRRewriter &rewriter,
                  llvm::SmallPtrSetImpl<Operation *> &erased) {
  Block *block = stack->getBlock();
  if (!isPlainAlloc(stack))
    return;
  SmallVector<StackedBuffer> stacked;
  for (Operation *user : stack->getUsers())
    if (auto slice = dyn_cast<memref::SubViewOp>(user))
      if (std::optional<StackedBuffer> found = stackedBuffer(slice, block))
        stacked.push_back(*found);
  if (stacked.empty())
    return;
  // Each buffer takes its slice's bytes: no two slices may share any.
  auto bytesOf = [](StackedBuffer &s) {
    auto type = cast<MemRefType>(s.buffer->getResult(0).getType());
    return type.getNumElements() * (type.getElementTypeBitWidth() / 8);
  };
  llvm::sort(stacked, [](const StackedBuffer &a, const StackedBuffer &b) {
    return a.byteOffset < b.byteOffset;
  });
  for (size_t i = 1; i < stacked.size(); ++i)
    if (stacked[i - 1].byteOffset + bytesOf(stacked[i - 1]) > stacked[i].byteOffset)
      return;

  // Between the first buffer's allocation and the last copy nothing but
  // the buffers' own code and the copies touches the stack's memory (it may
  // be written before and read after: a buffer reused by bufferization),
  // and each buffer's memory is touched only before its copy. Views only
  // name memory: the ops that read or write through them count.
  Operation *firstBuffer = stacked.front().buffer, *lastCopy = stacked.front().copy;
  llvm::SmallPtrSet<Operation *, 16> copies;
  for (const StackedBuffer &s : stacked) {
    if (s.buffer->isBeforeInBlock(firstBuffer))
      firstBuffer = s.buffer;
    if (lastCopy->isBeforeInBlock(s.copy))
      lastCopy = s.copy;
    copies.insert(s.copy);
  }
  auto accesses = [](Value memory) {
    SmallVector<Operation *> users;
    collectUsers(memory, users);
    llvm::erase_if(users, [](Operation *user) { return isa<ViewLikeOpInterface>(user); });
    return users;
  };
  for (Operation *user : accesses(stack)) {
    Operation *top = inBlock(user, block);
    if (copies.contains(user))
      continue;
    if (!top || (!top->isBeforeInBlock(firstBuffer) && !lastCopy->isBeforeInBlock(top)))
      return;
  }
  for (StackedBuffer &s : stacked)
    for (Operation *user : accesses(s.buffer.getResult())) {
      Operation *top = inBlock(user, block);
      if (user != s.copy && (!top || !top->isBeforeInBlock(s.copy)))
        return;
    }
  // One allocation of bytes where the first of them was.
  Operation *first = stack->isBeforeInBlock(firstBuffer) ? stack.getOperation() : firstBuffer;
  MemRefType stackType = stack.getType();
  int64_t bytes = stackType.getNumElements() * (stackType.getElementTypeBitWidth() / 8);
  Location loc = stack.getLoc();
  rewriter.setInsertionPoint(first);
  Value raw =
      memref::AllocOp::create(rewriter, loc, MemRefType::get({bytes}, rewriter.getIntegerType(8)),
                              rewriter.getI64IntegerAttr(kAlignment));
  auto viewAt = [&](int64_t byteOffset, MemRefType type) {
    Value offset = arith::ConstantIndexOp::create(rewriter, loc, byteOffset);
    return memref::ViewOp::create(rewriter, loc, type, raw, offset, ValueRange{});
  };
  for (StackedBuffer &s : stacked) {
    rewriter.eraseOp(s.copy);
    if (s.slice->use_empty())
      rewriter.eraseOp(s.slice);
    erased.insert(s.buffer);
    rewriter.replaceOp(s.buffer, viewAt(s.byteOffset, s.buffer.getType()));
  }
  erased.insert(stack);
  rewriter.replaceOp(stack, viewAt(0, stackType));
}

struct StackInPlacePass : public mithril::impl::MithrilStackInPlaceBase<StackInPlacePass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    IRRewriter rewriter(&getContext());
    llvm::SmallPtrSet<Operation *, 32> erased;
    for (memref::AllocOp alloc : allocs)
      if (!erased.contains(alloc))
        stackInPlace(alloc, rewriter, erased);
  }
};
} // namespace
