//===- GpuHostMemory.cpp - device buffers in kernel-launching host code ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUHOSTMEMORY
#include "mithril/Codegen/GPU/Passes.h.inc"
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
          isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp, memref::GetGlobalOp>(op))
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
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        // A constant (a folded arange, an attention mask) lives in host
        // memory: the kernels read a device copy of it, made per call.
        auto type = cast<MemRefType>(global.getType());
        b.setInsertionPointAfter(global);
        auto device = gpu::AllocOp::create(
            b, loc, MemRefType::get(type.getShape(), type.getElementType()),
            /*asyncToken=*/Type(), ValueRange{}, ValueRange{}, ValueRange{}, /*hostShared=*/false);
        auto upload = gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                                            device.getMemref(), global.getResult());
        global.getResult().replaceAllUsesExcept(device.getMemref(), upload);
        func.walk([&](func::ReturnOp ret) {
          OpBuilder atReturn(ret);
          gpu::DeallocOp::create(atReturn, loc, /*asyncToken=*/Type(), ValueRange{},
                                 device.getMemref());
        });
        continue;
      }
      op->erase();
    }
  }
};
} // namespace
