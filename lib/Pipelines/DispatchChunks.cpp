//===- DispatchChunks.cpp - split ops' chunks on the host's task pool -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include <algorithm>
#include <functional>

namespace mithril {
#define GEN_PASS_DEF_MITHRILDISPATCHCHUNKS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
constexpr StringLiteral kParallelFor = "mithrilParallelFor";

/// An op the chunk function computes again instead of receiving its result:
/// a constant or a global's address, or a view or index arithmetic of values
/// it receives or computes in turn. (The bench CNN training step's Winograd
/// input transform read 16 views of each of two buffers: 32 pointers
/// stored, loaded and rebuilt into descriptors for two.)
bool isRematerializable(Operation *op) {
  if (!op || op->getNumRegions() != 0 || op->getNumResults() != 1 || !isMemoryEffectFree(op))
    return false;
  return op->getNumOperands() == 0 ||
         isa<BaseMemRefType, IndexType, IntegerType>(op->getResult(0).getType());
}

/// A buffer whose sizes, strides and offset are all static: its aligned
/// pointer alone travels to the chunk function, which rebuilds the rest of
/// the descriptor from the type (a 4-d buffer: 1 store and load instead of
/// 11; the bench CNN training step's entry function stored 1,900 fields).
bool travelsAsPointer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.hasStaticShape() && LLVMTypeConverter::canConvertToBarePtr(memref);
}

struct DispatchChunksPass : public mithril::impl::MithrilDispatchChunksBase<DispatchChunksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ForallOp> loops;
    // Innermost first: an outer chunk function then holds the inner call.
    module.walk<WalkOrder::PostOrder>([&](scf::ForallOp loop) { loops.push_back(loop); });
    if (loops.empty())
      return;
    LLVMTypeConverter converter(&getContext());
    SymbolTable symbols(module);
    for (scf::ForallOp loop : loops)
      if (failed(dispatch(loop, converter, symbols)))
        return signalPassFailure();
  }

  LogicalResult dispatch(scf::ForallOp loop, const LLVMTypeConverter &converter,
                         SymbolTable &symbols) {
    if (loop.getRank() != 1 || loop.getNumResults() != 0)
      return loop.emitOpError("mithril-dispatch-chunks: only a one-dimensional scf.forall "
                              "without results (after bufferization) can be dispatched");
    auto caller = loop->getParentOfType<func::FuncOp>();
    if (!caller)
      return loop.emitOpError("mithril-dispatch-chunks: the loop is not inside a func.func");
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    OpBuilder builder(loop);
    OpFoldResult lower = loop.getMixedLowerBound()[0], upper = loop.getMixedUpperBound()[0],
                 step = loop.getMixedStep()[0];

    // What the body uses from outside: constants, views and index
    // arithmetic are computed again in the chunk function (and what they
    // use in turn), the rest travels in the context struct (as does the
    // lower bound and the step when they are not constants).
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    for (OpFoldResult bound : {lower, step})
      if (auto value = dyn_cast<Value>(bound))
        used.insert(value);
    // (Fields in the order of first use; each clone after those it uses.)
    llvm::SetVector<Value> fields;
    SmallVector<Operation *> clones;
    llvm::SmallPtrSet<Operation *, 16> visited;
    std::function<void(Value)> collect = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (!isRematerializable(def)) {
        fields.insert(value);
        return;
      }
      if (!visited.insert(def).second)
        return;
      for (Value operand : def->getOperands())
        collect(operand);
      clones.push_back(def);
    };
    for (Value value : used)
      collect(value);
    SmallVector<Type> fieldTypes;
    SmallVector<bool> asPointer;
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    for (Value field : fields) {
      asPointer.push_back(travelsAsPointer(field.getType()));
      if (asPointer.back()) {
        fieldTypes.push_back(ptrType);
        continue;
      }
      Type type = converter.convertType(field.getType());
      if (!type)
        return loop.emitOpError("mithril-dispatch-chunks: a value of type ")
               << field.getType() << " used in the loop has no LLVM type";
      fieldTypes.push_back(type);
    }
    auto structType = LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);
    auto indexType = builder.getIndexType();
    auto chunkType = builder.getFunctionType({ptrType, indexType}, {});

    // The chunk function: the chunk's induction variable, the fields, and
    // the body.
    OpBuilder moduleBuilder(ctx);
    moduleBuilder.setInsertionPointAfter(caller);
    auto chunkFn =
        func::FuncOp::create(moduleBuilder, loc, (caller.getName() + "_chunk").str(), chunkType);
    chunkFn.setPrivate();
    symbols.insert(chunkFn);
    Block *entry = chunkFn.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    IRMapping mapping;
    Value context = entry->getArgument(0), chunk = entry->getArgument(1);
    for (auto [i, field] : llvm::enumerate(fields)) {
      auto address = LLVM::GEPOp::create(body, loc, ptrType, structType, context,
                                         ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      Value loaded = LLVM::LoadOp::create(body, loc, fieldTypes[i], address);
      if (asPointer[i])
        loaded = MemRefDescriptor::fromStaticShape(body, loc, converter,
                                                   cast<MemRefType>(field.getType()), loaded);
      if (loaded.getType() != field.getType())
        loaded =
            UnrealizedConversionCastOp::create(body, loc, field.getType(), loaded).getResult(0);
      mapping.map(field, loaded);
    }
    for (Operation *op : clones)
      body.clone(*op, mapping);
    auto inBody = [&](OpFoldResult bound) -> Value {
      if (auto value = dyn_cast<Value>(bound))
        return mapping.lookupOrDefault(value);
      return getValueOrCreateConstantIndexOp(body, loc, bound);
    };
    Value scaled = arith::MulIOp::create(body, loc, chunk, inBody(step));
    Value iv = arith::AddIOp::create(body, loc, inBody(lower), scaled);
    mapping.map(loop.getInductionVar(0), iv);
    for (Operation &op : loop.getBody()->without_terminator())
      body.clone(op, mapping);
    func::ReturnOp::create(body, loc);

    // The caller: the context struct in its entry block, filled where the
    // loop was, and the call of the pool. Inside another split loop, the
    // struct goes at the start of that loop's body, which becomes the entry
    // block of its own chunk function: one struct per chunk running, not one
    // that concurrent chunks share.
    Block *entryBlock = &caller.getBody().front();
    if (auto outer = loop->getParentOfType<scf::ForallOp>())
      entryBlock = outer.getBody();
    OpBuilder allocas = OpBuilder::atBlockBegin(entryBlock);
    Value one =
        LLVM::ConstantOp::create(allocas, loc, builder.getI64Type(), builder.getI64IntegerAttr(1));
    Value contextPtr = LLVM::AllocaOp::create(allocas, loc, ptrType, structType, one);
    for (auto [i, field] : llvm::enumerate(fields)) {
      Value value = field;
      if (asPointer[i]) {
        Type descriptor = converter.convertType(field.getType());
        value = UnrealizedConversionCastOp::create(builder, loc, descriptor, value).getResult(0);
        value = MemRefDescriptor(value).alignedPtr(builder, loc);
      } else if (value.getType() != fieldTypes[i]) {
        value = UnrealizedConversionCastOp::create(builder, loc, fieldTypes[i], value).getResult(0);
      }
      auto address = LLVM::GEPOp::create(builder, loc, ptrType, structType, contextPtr,
                                         ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      LLVM::StoreOp::create(builder, loc, value, address);
    }
    // ceil((upper - lower) / step) chunks.
    Value count;
    std::optional<int64_t> lowerInt = getConstantIntValue(lower),
                           upperInt = getConstantIntValue(upper),
                           stepInt = getConstantIntValue(step);
    if (lowerInt && upperInt && stepInt && *stepInt > 0) {
      int64_t span = std::max<int64_t>(0, *upperInt - *lowerInt);
      count = arith::ConstantIndexOp::create(builder, loc, llvm::divideCeil(span, *stepInt));
    } else {
      Value span =
          arith::SubIOp::create(builder, loc, getValueOrCreateConstantIndexOp(builder, loc, upper),
                                getValueOrCreateConstantIndexOp(builder, loc, lower));
      count = arith::CeilDivSIOp::create(builder, loc, span,
                                         getValueOrCreateConstantIndexOp(builder, loc, step));
    }
    Value function = func::ConstantOp::create(builder, loc, chunkType, chunkFn.getSymName());
    func::FuncOp parallelFor = declareParallelFor(symbols, chunkType, ptrType);
    if (!parallelFor)
      return failure();
    func::CallOp::create(builder, loc, parallelFor, ValueRange{function, contextPtr, count});
    loop.erase();
    // The views and arithmetic only the loop used.
    for (Operation *op : llvm::reverse(clones))
      if (op->use_empty())
        op->erase();
    return success();
  }

  /// `mithrilParallelFor(chunk function, context, count)`, declared once.
  func::FuncOp declareParallelFor(SymbolTable &symbols, FunctionType chunkType, Type ptrType) {
    auto type =
        FunctionType::get(&getContext(), {chunkType, ptrType, IndexType::get(&getContext())}, {});
    if (auto existing = symbols.lookup<func::FuncOp>(kParallelFor)) {
      if (existing.getFunctionType() == type)
        return existing;
      existing.emitOpError("mithril-dispatch-chunks: ")
          << kParallelFor << " is declared with another type than " << type;
      return nullptr;
    }
    auto module = cast<ModuleOp>(symbols.getOp());
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    auto declaration = func::FuncOp::create(builder, module.getLoc(), kParallelFor, type);
    declaration.setPrivate();
    symbols.insert(declaration);
    return declaration;
  }
};
} // namespace
