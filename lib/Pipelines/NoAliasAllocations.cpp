//===- NoAliasAllocations.cpp - allocations as noalias pointers ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILNOALIASALLOCATIONS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// The functions the memref lowering takes buffers from: the C library's,
/// and the generic ones the host provides (mithril's JIT: its buffer cache).
constexpr llvm::StringLiteral kAllocationFunctions[] = {
    "malloc", "aligned_alloc", "_mlir_memref_to_llvm_alloc", "_mlir_memref_to_llvm_aligned_alloc"};

struct NoAliasAllocationsPass
    : public mithril::impl::MithrilNoAliasAllocationsBase<NoAliasAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto noAlias = StringAttr::get(&getContext(), LLVM::LLVMDialect::getNoAliasAttrName());
    for (StringRef name : kAllocationFunctions) {
      auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      // Only a declaration: a definition in the module is not the host's.
      if (!function || !function.isExternal() ||
          !isa<LLVM::LLVMPointerType>(function.getFunctionType().getReturnType()))
        continue;
      function.setResultAttr(0, noAlias, UnitAttr::get(&getContext()));
    }
  }
};
} // namespace
