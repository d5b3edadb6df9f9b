//===- ConvertBodiesToLLVM.cpp - function bodies to LLVM, in parallel -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Analysis/DataLayoutAnalysis.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Threading.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILCONVERTBODIESTOLLVM
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
struct ConvertBodiesToLLVMPass
    : public mithril::impl::MithrilConvertBodiesToLLVMBase<ConvertBodiesToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    bool allocates = false, declaresOthers = false;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      functions.push_back(function);
      function.walk([&](Operation *op) {
        allocates |= isa<memref::AllocOp, memref::DeallocOp>(op);
        // Lowerings that declare functions of their own (memrefCopy,
        // realloc's allocation): those tasks would add to the module.
        declaresOthers |= isa<memref::CopyOp, memref::ReallocOp>(op);
      });
    }
    if (functions.empty())
      return;
    // What the allocations' lowering looks up, declared now: the tasks
    // then only read the module.
    Type indexType = IntegerType::get(
        &getContext(), LowerToLLVMOptions(&getContext(), DataLayout(module)).getIndexBitwidth());
    if (allocates && !declareAllocationFunctions(module, indexType))
      return signalPassFailure();
    // Each task its own type converter and data layout (whose queries fill
    // caches of their own) and patterns. A module that states its own data
    // layout is lowered one function after the other, with the analysis
    // that finds it for each op.
    bool ownLayout = module->hasAttr(DLTIDialect::kDataLayoutAttrName);
    if (declaresOthers || ownLayout) {
      const auto &dataLayouts = getAnalysis<DataLayoutAnalysis>();
      SmallVector<Operation *> all(functions.begin(), functions.end());
      for (auto global : module.getOps<memref::GlobalOp>())
        all.push_back(global);
      if (failed(convert(all, dataLayouts.getAtOrAbove(module), &dataLayouts)))
        signalPassFailure();
      return;
    }
    if (failed(failableParallelForEach(&getContext(), functions, [&](func::FuncOp function) {
          return convert(function.getOperation(), DataLayout(), nullptr);
        })))
      return signalPassFailure();
    // The buffers' globals, which the bodies' llvm.mlir.addressof ops now
    // name, as LLVM globals.
    SmallVector<Operation *> globals;
    for (auto global : module.getOps<memref::GlobalOp>())
      globals.push_back(global);
    if (!globals.empty() && failed(convert(globals, DataLayout(module), nullptr)))
      signalPassFailure();
  }

  /// The memref, arith, control flow, index and ub ops of `ops` (functions,
  /// globals) as LLVM dialect ops; the function ops themselves stay for
  /// `convert-to-llvm`, which converts their signatures with the calls and
  /// returns.
  LogicalResult convert(ArrayRef<Operation *> ops, const DataLayout &layout,
                        const DataLayoutAnalysis *dataLayouts) {
    MLIRContext *ctx = &getContext();
    LowerToLLVMOptions options(ctx, layout);
    options.allocLowering = useAlignedAlloc ? LowerToLLVMOptions::AllocLowering::AlignedAlloc
                                            : LowerToLLVMOptions::AllocLowering::Malloc;
    options.useGenericFunctions = useGenericFunctions;
    LLVMTypeConverter converter(ctx, options, dataLayouts);
    RewritePatternSet patterns(ctx);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    index::populateIndexToLLVMConversionPatterns(converter, patterns);
    ub::populateUBToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    target.addLegalDialect<func::FuncDialect>();
    return applyPartialConversion(ops, target, std::move(patterns));
  }

  bool declareAllocationFunctions(ModuleOp module, Type indexType) {
    OpBuilder builder(module.getContext());
    FailureOr<LLVM::LLVMFuncOp> allocate, release;
    if (useGenericFunctions) {
      allocate = useAlignedAlloc
                     ? LLVM::lookupOrCreateGenericAlignedAllocFn(builder, module, indexType)
                     : LLVM::lookupOrCreateGenericAllocFn(builder, module, indexType);
      release = LLVM::lookupOrCreateGenericFreeFn(builder, module);
    } else {
      allocate = useAlignedAlloc ? LLVM::lookupOrCreateAlignedAllocFn(builder, module, indexType)
                                 : LLVM::lookupOrCreateMallocFn(builder, module, indexType);
      release = LLVM::lookupOrCreateFreeFn(builder, module);
    }
    if (failed(allocate) || failed(release)) {
      module.emitError("mithril-convert-bodies-to-llvm: the allocation functions cannot be "
                       "declared (a symbol of their name with another type?)");
      return false;
    }
    return true;
  }
};
} // namespace
