//===- Collectives.cpp - all_reduce to the runtime's windows and sums -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

namespace {

/// The number compiled code names `group` by (0 data, 1 tensor).
Value groupNumber(OpBuilder &b, Location loc, StringRef group) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(collectiveGroupNumber(group)));
}

/// Calls the host's collective (mithrilAllReduceF32 / F64, which sum over the
/// op's group) on `source`, the operand's buffer (any layout), into a new
/// buffer, which becomes the result. Both go as unranked memrefs, whose
/// descriptors give the sizes and strides.
Value callAllReduce(OpBuilder &b, AllReduceOp op, Value source) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  Type element = type.getElementType();
  StringRef callee = element.isF64() ? "mithrilAllReduceF64" : "mithrilAllReduceF32";
  auto unranked = UnrankedMemRefType::get(element, /*memorySpace=*/nullptr);
  declarePrivateFunction(b, op->getParentOfType<ModuleOp>(), callee,
                         b.getFunctionType({b.getI64Type(), unranked, unranked}, {}));
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, op.getInput(), i));
  auto resultBuffer = MemRefType::get(type.getShape(), element);
  Value sum = memref::AllocOp::create(b, loc, resultBuffer, dynamicSizes, b.getI64IntegerAttr(64));
  func::CallOp::create(b, loc, callee, TypeRange{},
                       ValueRange{groupNumber(b, loc, op.getGroup()),
                                  memref::CastOp::create(b, loc, unranked, source),
                                  memref::CastOp::create(b, loc, unranked, sum)});
  return bufferization::ToTensorOp::create(b, loc, type, sum, /*restrict=*/true,
                                           /*writable=*/true);
}

/// The op of `op`'s block that holds the first reader of its result, or
/// null.
Operation *firstReaderInBlock(Operation *op) {
  Block *block = op->getBlock();
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

constexpr StringLiteral kWait = "mithrilAllReduceWait";
constexpr StringLiteral kWaitAll = "mithrilAllReduceWaitAll";

/// Starts the host's sum of `source` (the operand's place in the window)
/// over the op's group into `result` (its place in the group's buffer of
/// results, `results`, at byte `offset`): mithrilAllReduceStartF32 / F64,
/// which MPI may still run while the code goes on (operands of ranks on
/// several machines). The wait for it (mithrilAllReduceWait, a use of the
/// buffer of results, so that it lives on) goes just before the first op
/// that reads the sum, so that the sum runs while the rest of the backward
/// pass does. Returns the sum.
Value startAllReduce(OpBuilder &b, AllReduceOp op, Value source, Value results, Value result,
                     int64_t offset) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  Type element = type.getElementType();
  ModuleOp module = op->getParentOfType<ModuleOp>();
  StringRef callee = element.isF64() ? "mithrilAllReduceStartF64" : "mithrilAllReduceStartF32";
  auto unranked = UnrankedMemRefType::get(element, /*memorySpace=*/nullptr);
  declarePrivateFunction(b, module, callee,
                         b.getFunctionType({b.getI64Type(), unranked, unranked}, {}));
  func::CallOp::create(b, loc, callee, TypeRange{},
                       ValueRange{groupNumber(b, loc, op.getGroup()),
                                  memref::CastOp::create(b, loc, unranked, source),
                                  memref::CastOp::create(b, loc, unranked, result)});
  Operation *firstReader = firstReaderInBlock(op);
  OpBuilder atReader(b.getContext());
  if (firstReader)
    atReader.setInsertionPoint(firstReader);
  else
    atReader.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  auto bytes = UnrankedMemRefType::get(atReader.getI8Type(), /*memorySpace=*/nullptr);
  declarePrivateFunction(atReader, module, kWait,
                         atReader.getFunctionType({b.getI64Type(), bytes, b.getI64Type()}, {}));
  func::CallOp::create(
      atReader, loc, kWait, TypeRange{},
      ValueRange{groupNumber(atReader, loc, op.getGroup()),
                 memref::CastOp::create(atReader, loc, bytes, results),
                 arith::ConstantOp::create(atReader, loc, atReader.getI64IntegerAttr(offset))});
  return bufferization::ToTensorOp::create(atReader, loc, type, result, /*restrict=*/true,
                                           /*writable=*/true);
}

/// all_reduce of a dynamic shape (static ones go through a window,
/// lowerAllReducesIntoWindows): the operand's buffer read where it is.
struct AllReducePattern : OpRewritePattern<AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllReduceOp op, PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    // The operand's buffer may be a strided view: any layout.
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    auto anyLayout =
        MemRefType::get(type.getShape(), type.getElementType(),
                        StridedLayoutAttr::get(getContext(), ShapedType::kDynamic, strides));
    Value source = bufferization::ToBufferOp::create(rewriter, op.getLoc(), anyLayout,
                                                     op.getInput(), /*read_only=*/true);
    rewriter.replaceOp(op, callAllReduce(rewriter, op, source));
    return success();
  }
};

/// replicate: the identity forward (its sum is in the gradient).
struct ReplicatePattern : OpRewritePattern<ReplicateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReplicateOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// Bytes each operand's place in a window is aligned to: a cache line, so
/// that no two operands share one.
constexpr int64_t kWindowAlignment = 64;

/// The runtime's wait for every rank of a group whose ranks share a window
/// (Distributed.h). Its second operand, the address of the operand just
/// written there (or 0), ties the call to that write: the code that computes
/// the operand cannot be moved past it.
constexpr StringLiteral kBarrier = "mithrilCollectiveBarrier";

Operation *callBarrier(OpBuilder &b, Location loc, StringRef group, Value address) {
  declarePrivateFunction(b, b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>(),
                         kBarrier, b.getFunctionType({b.getI64Type(), b.getI64Type()}, {}));
  return func::CallOp::create(b, loc, kBarrier, TypeRange{},
                              ValueRange{groupNumber(b, loc, group), address});
}

/// The sum, in rank order (the runtime's order, so every rank gets the same
/// bits), of the operands at `offset` of every rank's segment, read where
/// they lie: an elementwise linalg.generic that later fuses with the users.
Value addSegments(OpBuilder &b, AllReduceOp op, ArrayRef<Value> segments, int64_t offset) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  Value shift = arith::ConstantIndexOp::create(b, loc, offset);
  SmallVector<Value> operands;
  for (Value segment : segments) {
    Value place =
        memref::ViewOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()),
                               segment, shift, ValueRange{});
    operands.push_back(bufferization::ToTensorOp::create(b, loc, type, place, /*restrict=*/true,
                                                         /*writable=*/false));
  }
  return buildElementwise(b, loc, type, operands,
                          [](OpBuilder &nested, Location at, ValueRange args, Type) {
                            Value total = args.front();
                            for (Value next : args.drop_front())
                              total = arith::AddFOp::create(nested, at, total, next);
                            return total;
                          });
}

} // namespace

void mithril::linalg_lowering::lowerAllReducesIntoWindows(func::FuncOp func, unsigned windowRanks) {
  // Each group's static all_reduces, in order, with their byte offsets, and
  // the bytes of its window.
  struct Window {
    SmallVector<std::pair<AllReduceOp, int64_t>> ops;
    int64_t bytes = 0;
  };
  llvm::MapVector<StringRef, Window> byGroup;
  func.walk([&](AllReduceOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || type.getNumElements() == 0)
      return;
    Window &window = byGroup[op.getGroup()];
    window.ops.push_back({op, window.bytes});
    int64_t size = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    window.bytes += llvm::alignTo(size, kWindowAlignment);
  });
  if (byGroup.empty())
    return;
  MLIRContext *ctx = func.getContext();
  // The windows and the operands' places go first in the function, so that
  // whatever computes an operand can write there; nothing there is erased
  // below (an all_reduce may be the entry's first op).
  OpBuilder atEntry = OpBuilder::atBlockBegin(&func.getBody().front());
  // Each operand's place in this rank's segment, and its offset there;
  // where the runtime sums it, its result's place in the group's buffer of
  // results (at the same offset, so that operands side by side in the
  // window have their results side by side too: the runtime hands them to
  // MPI together).
  struct Place {
    AllReduceOp op;
    Value dest;
    int64_t offset;
    Value results, result;
  };
  SmallVector<Place> places;
  // Where the data group's ranks share the window: every rank's segment.
  SmallVector<Value> segments;
  // The groups the runtime sums.
  SmallVector<StringRef> startedGroups;
  for (auto &[group, placed] : byGroup) {
    Location loc = placed.ops.front().first.getLoc();
    auto windowType = MemRefType::get({placed.bytes}, IntegerType::get(ctx, 8));
    Value window = CollectiveWindowOp::create(atEntry, loc, windowType, StringAttr::get(ctx, group),
                                              /*rank=*/IntegerAttr());
    Value results;
    if (windowRanks > 1 && group == "data") {
      // After this rank's own segment: that call makes the window.
      for (unsigned rank = 0; rank < windowRanks; ++rank)
        segments.push_back(CollectiveWindowOp::create(atEntry, loc, windowType,
                                                      StringAttr::get(ctx, group),
                                                      atEntry.getI64IntegerAttr(rank)));
    } else {
      results = memref::AllocOp::create(atEntry, loc, windowType, ValueRange{},
                                        atEntry.getI64IntegerAttr(kWindowAlignment));
      startedGroups.push_back(group);
    }
    for (auto [op, offset] : placed.ops) {
      auto type = cast<RankedTensorType>(op.getType());
      auto placeType = MemRefType::get(type.getShape(), type.getElementType());
      Value shift = arith::ConstantIndexOp::create(atEntry, op.getLoc(), offset);
      Value place =
          memref::ViewOp::create(atEntry, op.getLoc(), placeType, window, shift, ValueRange{});
      Value result = results ? memref::ViewOp::create(atEntry, op.getLoc(), placeType, results,
                                                      shift, ValueRange{})
                             : Value();
      places.push_back({op,
                        bufferization::ToTensorOp::create(atEntry, op.getLoc(), type, place,
                                                          /*restrict=*/true, /*writable=*/true),
                        offset, results, result});
    }
  }
  // The data group's sums the code adds itself: each operand's address,
  // the first reader of its sum, and its offset.
  struct Added {
    AllReduceOp op;
    Value address;
    Operation *reader;
    int64_t offset;
  };
  SmallVector<Added> added;
  for (auto [op, dest, offset, results, result] : places) {
    auto type = cast<RankedTensorType>(op.getType());
    OpBuilder b(op);
    Value staged =
        bufferization::MaterializeInDestinationOp::create(b, op.getLoc(), type, op.getInput(), dest)
            .getResult();
    Value source = bufferization::ToBufferOp::create(
        b, op.getLoc(), MemRefType::get(type.getShape(), type.getElementType()), staged,
        /*read_only=*/true);
    if (results) {
      op.replaceAllUsesWith(startAllReduce(b, op, source, results, result, offset));
      op.erase();
      continue;
    }
    // Every rank has written its operand once all have reached a barrier
    // after the write; the sum reads them after it (below).
    Value address = arith::IndexCastOp::create(
        b, op.getLoc(), b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, op.getLoc(), source));
    added.push_back({op, address, nullptr, offset});
  }
  // (Found once the runtime's sums are lowered: a first reader may be one.)
  for (Added &sum : added) {
    Operation *reader = firstReaderInBlock(sum.op);
    sum.reader = reader ? reader : sum.op->getNextNode();
  }
  // The barriers wait as late as they may, just before the sums' first
  // readers (the optimizer's updates, after the whole backward pass), and
  // as few as cover every operand (each needs one between its write and its
  // first reader: in the order of the readers, a barrier where the next
  // uncovered operand is first read): a rank that ran behind in one layer
  // and ahead in another does not wait twice. A barrier's operand, the
  // operands' addresses added up, ties it to each write: nothing moves the
  // code that computes an operand past it.
  // (A barrier serves the sums of its own block only; the gradients' are all
  // in the function's.)
  llvm::stable_sort(added, [](const Added &x, const Added &y) {
    if (x.reader->getBlock() != y.reader->getBlock())
      return x.reader->getBlock() < y.reader->getBlock();
    return x.reader->isBeforeInBlock(y.reader);
  });
  Operation *barrier = nullptr;
  for (Added &sum : added) {
    Operation *write = sum.address.getDefiningOp();
    if (barrier && barrier->getBlock() == write->getBlock() && write->isBeforeInBlock(barrier)) {
      OpBuilder atBarrier(barrier);
      barrier->setOperand(1, arith::AddIOp::create(atBarrier, sum.op.getLoc(),
                                                   barrier->getOperand(1), sum.address));
      continue;
    }
    OpBuilder atReader(sum.reader);
    barrier = callBarrier(atReader, sum.op.getLoc(), sum.op.getGroup(), sum.address);
  }
  for (Added &sum : added) {
    OpBuilder atReader(sum.reader);
    sum.op.replaceAllUsesWith(addSegments(atReader, sum.op, segments, sum.offset));
    sum.op.erase();
  }
  func.walk([&](func::ReturnOp ret) {
    OpBuilder b(ret);
    // No sum the function started outlives it (each is waited for where it
    // is read; this catches any that is not).
    for (StringRef group : startedGroups) {
      declarePrivateFunction(b, func->getParentOfType<ModuleOp>(), kWaitAll,
                             b.getFunctionType({b.getI64Type()}, {}));
      func::CallOp::create(b, ret.getLoc(), kWaitAll, TypeRange{},
                           ValueRange{groupNumber(b, ret.getLoc(), group)});
    }
    // The others may still read this rank's operands: none may write the
    // next ones (the next call's) into the window before all are done.
    if (!segments.empty())
      callBarrier(b, ret.getLoc(), "data",
                  arith::ConstantOp::create(b, ret.getLoc(), b.getI64IntegerAttr(0)));
  });
}

void mithril::linalg_lowering::populateCollectivePatterns(RewritePatternSet &patterns) {
  patterns.add<AllReducePattern, ReplicatePattern>(patterns.getContext());
}
