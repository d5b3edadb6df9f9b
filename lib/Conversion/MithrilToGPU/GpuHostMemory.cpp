//===- GpuHostMemory.cpp - device buffers in kernel-launching host code ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Conversion/MithrilToGPU/MithrilToGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUHOSTMEMORY
#include "mithril/Conversion/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct GpuHostMemoryPass
    : public mithril::impl::MithrilGpuHostMemoryBase<GpuHostMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      // Kernels live in gpu.module; only host code is rewritten.
      if (!op->getParentOfType<gpu::GPUModuleOp>() &&
          isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto gpuAlloc = gpu::AllocOp::create(b, loc, alloc.getType(), /*asyncToken=*/Type(),
                                             ValueRange{}, alloc.getDynamicSizes(),
                                             alloc.getSymbolOperands(), /*hostShared=*/false);
        alloc.replaceAllUsesWith(gpuAlloc.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                               dealloc.getMemref());
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{}, copy.getTarget(),
                              copy.getSource());
      }
      op->erase();
    }
  }
};
} // namespace
