//===- GpuMergeModules.cpp - one gpu.module for all kernels ---------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUMERGEMODULES
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct GpuMergeModulesPass
    : public mithril::impl::MithrilGpuMergeModulesBase<GpuMergeModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.size() < 2)
      return;
    gpu::GPUModuleOp target = gpuModules.front();
    SymbolTable targetSymbols(target);
    // Where each moved symbol went: (old module, old name) -> new name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> moved;
    for (gpu::GPUModuleOp source : ArrayRef(gpuModules).drop_front()) {
      if (source.getTargetsAttr() != target.getTargetsAttr()) {
        source.emitError("mithril-gpu-merge-modules: kernel modules for different targets");
        return signalPassFailure();
      }
      for (Operation &op : llvm::make_early_inc_range(source.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(&op);
        if (!symbol)
          continue;
        StringAttr oldName = symbol.getNameAttr();
        op.remove();
        // insert() renames the symbol when the name is taken.
        StringAttr newName = targetSymbols.insert(&op);
        moved[{source.getSymNameAttr(), oldName}] = newName;
      }
    }
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it = moved.find({kernel.getRootReference(), kernel.getLeafReference()});
      if (it == moved.end())
        return WalkResult::advance();
      launch.setKernelAttr(SymbolRefAttr::get(target.getSymNameAttr(),
                                              {FlatSymbolRefAttr::get(it->second)}));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp source : ArrayRef(gpuModules).drop_front())
      source.erase();
  }
};
} // namespace
