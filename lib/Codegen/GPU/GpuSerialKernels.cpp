//===- GpuSerialKernels.cpp - host loops over buffers as one-thread kernels ===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Loops with no parallel dimension (a reduction to one value, a 0-d op such
// as Adam's bias correction) have no scf.parallel for the GPU mapping to take:
// they stay in the host function, where they would read and write device
// memory through host pointers. Each run of them becomes a kernel of one
// thread instead.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUSERIALKERNELS
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// Whether `op` reads or writes the contents of a buffer.
bool accessesBufferContents(Operation *op) {
  return isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp, memref::GenericAtomicRMWOp,
             vector::LoadOp, vector::StoreOp, vector::TransferReadOp, vector::TransferWriteOp,
             vector::MaskedLoadOp, vector::MaskedStoreOp, affine::AffineLoadOp,
             affine::AffineStoreOp>(op);
}

/// Whether `op` or an op nested in it, outside kernels, accesses buffer
/// contents.
bool runsOnBuffers(Operation *op) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (isa<gpu::LaunchOp>(nested))
      return WalkResult::skip();
    if (accessesBufferContents(nested)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

bool containsLaunch(Operation *op) {
  return op->walk([](gpu::LaunchOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

/// Ops a kernel cannot hold: they stay on the host (allocation, copies
/// between buffers, calls, launches).
bool hostOnly(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        if (isa<gpu::LaunchOp, memref::AllocOp, memref::AllocaOp, memref::DeallocOp, memref::CopyOp,
                CallOpInterface>(nested))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

struct GpuSerialKernelsPass
    : public mithril::impl::MithrilGpuSerialKernelsBase<GpuSerialKernelsPass> {
  void runOnOperation() override {
    if (failed(processBlock(getOperation().getBody().front())))
      signalPassFailure();
  }

  /// Wraps the runs of ops of `block` that access buffers into one-thread
  /// kernels; recurses into host loops around kernels.
  LogicalResult processBlock(Block &block) {
    for (Operation *op = block.empty() ? nullptr : &block.front(); op;) {
      if (isa<gpu::LaunchOp>(op) || op->hasTrait<OpTrait::IsTerminator>()) {
        op = op->getNextNode();
        continue;
      }
      if (containsLaunch(op)) {
        // A host loop around kernels: its body is host code too.
        for (Region &region : op->getRegions())
          for (Block &nested : region)
            if (failed(processBlock(nested)))
              return failure();
        op = op->getNextNode();
        continue;
      }
      if (!runsOnBuffers(op)) {
        op = op->getNextNode();
        continue;
      }
      // The run: this op, the ops that follow it and also access buffers,
      // and every later op that uses a value defined in the run (the values
      // stay inside the kernel).
      Operation *last = op;
      auto usedAfter = [&](Operation *end) -> Operation * {
        Operation *furthest = end;
        for (Operation *it = op;; it = it->getNextNode()) {
          for (Value result : it->getResults())
            for (Operation *user : result.getUsers()) {
              Operation *ancestor = block.findAncestorOpInBlock(*user);
              if (ancestor && furthest->isBeforeInBlock(ancestor))
                furthest = ancestor;
            }
          if (it == end)
            break;
        }
        return furthest;
      };
      while (true) {
        Operation *next = last->getNextNode();
        if (next && !next->hasTrait<OpTrait::IsTerminator>() && !containsLaunch(next) &&
            runsOnBuffers(next)) {
          last = next;
          continue;
        }
        Operation *furthest = usedAfter(last);
        if (furthest == last)
          break;
        last = furthest;
      }
      SmallVector<Operation *> run;
      for (Operation *it = op;; it = it->getNextNode()) {
        run.push_back(it);
        if (it == last)
          break;
      }
      for (Operation *it : run)
        if (hostOnly(it) || it->hasTrait<OpTrait::IsTerminator>())
          return it->emitOpError("stays in host code but takes a value read from a GPU "
                                 "buffer there (mithril-gpu-serial-kernels cannot move it "
                                 "into a kernel)");
      Operation *after = last->getNextNode();
      wrapInKernel(run);
      op = after;
    }
    return success();
  }

  static void wrapInKernel(ArrayRef<Operation *> run) {
    OpBuilder b(run.front());
    Location loc = run.front()->getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(b, loc);
    for (Operation *op : run)
      op->moveBefore(terminator);
  }
};
} // namespace
