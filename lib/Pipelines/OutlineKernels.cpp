//===- OutlineKernels.cpp - each large kernel in a function of its own ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILOUTLINEKERNELS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// An op the kernel function computes again instead of receiving its
/// result: a constant, a view, index arithmetic. LLVM then sees the static
/// offsets and bounds they carry.
bool isRecomputable(Operation *op) {
  return op && op->getNumRegions() == 0 && op->getNumResults() == 1 && isMemoryEffectFree(op);
}

/// About how much LLVM code `op` becomes: one for the op and one for each
/// row of its largest vector (a vector<8x32xf32> is 8 vectors of 32 lanes
/// in LLVM), with what its regions hold.
int64_t codeSize(Operation *op) {
  int64_t size = 0;
  op->walk([&](Operation *inner) {
    int64_t rows = 1;
    auto count = [&](Type type) {
      if (auto vector = dyn_cast<VectorType>(type); vector && vector.getRank() > 1)
        rows = std::max(rows, vector.getNumElements() / vector.getShape().back());
    };
    for (Type type : inner->getResultTypes())
      count(type);
    for (Type type : inner->getOperandTypes())
      count(type);
    size += rows;
  });
  return size;
}

/// A kernel worth a function: an op with regions and no results (a loop
/// nest after bufferization) of at least `minSize` in codeSize.
bool isLargeKernel(Operation &op, int64_t minSize) {
  if (op.getNumRegions() == 0 || op.getNumResults() != 0 ||
      op.hasTrait<OpTrait::IsIsolatedFromAbove>())
    return false;
  return codeSize(&op) >= minSize;
}

/// An op a run of straight-line code may hold: no regions, no call, no
/// terminator, and no effects but reads and writes (an allocation or a free
/// stays with the caller, which owns the buffer).
bool isStraightLine(Operation &op) {
  if (op.getNumRegions() > 0 || op.hasTrait<OpTrait::IsTerminator>() || isa<CallOpInterface>(op))
    return false;
  if (isMemoryEffectFree(&op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::all_of(instances, [](const MemoryEffects::EffectInstance &effect) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect());
  });
}

/// An allocation (its only effect): a run of code to outline goes on past
/// it, and it stays before the call, which only the ops after it use.
bool isAllocation(Operation &op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects || op.getNumRegions() > 0)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return !instances.empty() &&
         llvm::all_of(instances, [](const MemoryEffects::EffectInstance &effect) {
           return isa<MemoryEffects::Allocate>(effect.getEffect());
         });
}

/// Code a kernel function can take whole: straight-line ops, and ops with
/// regions (loops, conditionals) holding only such code, with no
/// allocation, free or call anywhere inside.
bool isMovableCode(Operation &op) {
  if (op.getNumRegions() == 0)
    return isStraightLine(op) || op.hasTrait<OpTrait::IsTerminator>();
  if (op.hasTrait<OpTrait::IsIsolatedFromAbove>())
    return false;
  for (Region &region : op.getRegions())
    for (Block &block : region)
      for (Operation &inner : block)
        if (!isMovableCode(inner))
          return false;
  return true;
}

/// The buffer `value` is a view of, or null where it is no view: a view op's
/// source, or the one buffer a pure op makes a buffer of (a transpose).
Value viewSource(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || !isa<BaseMemRefType>(value.getType()))
    return nullptr;
  if (auto view = dyn_cast<ViewLikeOpInterface>(def))
    return view.getViewSource();
  if (!isMemoryEffectFree(def) || def->getNumResults() != 1)
    return nullptr;
  Value source;
  for (Value operand : def->getOperands())
    if (isa<BaseMemRefType>(operand.getType())) {
      if (source)
        return nullptr;
      source = operand;
    }
  return source;
}

/// Where the memory of the buffer `value` comes from, through its views.
Value bufferRoot(Value value) {
  while (Value source = viewSource(value))
    value = source;
  return value;
}

/// Whether the root `root` (bufferRoot) is memory allocated in the function
/// itself, which nothing else the function uses can point into.
bool isAllocation(Value root) {
  return root.getDefiningOp<memref::AllocOp>() || root.getDefiningOp<memref::AllocaOp>();
}

/// Whether the roots `a` and `b` (bufferRoot) are different memory, as far
/// as the function they are used in shows: an allocation is fresh memory,
/// apart from every other allocation, global and argument; two globals of
/// different names are apart. Two arguments of the model's entry may be one
/// array (an in-place update's input and output), as may anything else.
bool areApart(Value a, Value b) {
  if (a == b)
    return false;
  auto isKnown = [&](Value root) {
    return isAllocation(root) || root.getDefiningOp<memref::GetGlobalOp>() ||
           isa<BlockArgument>(root);
  };
  if ((isAllocation(a) && isKnown(b)) || (isAllocation(b) && isKnown(a)))
    return true;
  auto globalA = a.getDefiningOp<memref::GetGlobalOp>();
  auto globalB = b.getDefiningOp<memref::GetGlobalOp>();
  return globalA && globalB && globalA.getName() != globalB.getName();
}

/// Whether anything may write the buffer `value` or a view of it (an op of
/// unknown effects, a call, may).
bool mayBeWritten(Value value) {
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value buffer = worklist.pop_back_val();
    for (Operation *user : buffer.getUsers()) {
      if (user->getNumResults() == 1 && viewSource(user->getResult(0)) == buffer) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects)
        return true;
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      if (llvm::any_of(instances, [&](const MemoryEffects::EffectInstance &effect) {
            return isa<MemoryEffects::Write>(effect.getEffect()) &&
                   (!effect.getValue() || effect.getValue() == buffer);
          }))
        return true;
    }
  }
  return false;
}

struct OutlineKernelsPass : public mithril::impl::MithrilOutlineKernelsBase<OutlineKernelsPass> {
  using MithrilOutlineKernelsBase::MithrilOutlineKernelsBase;

  /// The caller's last kernel function: the next goes after it, so that
  /// they follow in the module in the order they run.
  Operation *lastFunction = nullptr;

  /// The kernel functions made so far, by their type and number of ops:
  /// where a new one computes what one of them does, op for op, it is
  /// called instead (the same layer's kernels of a transformer's every
  /// block, their shapes alike, generated and compiled once).
  llvm::DenseMap<std::pair<Type, int64_t>, SmallVector<func::FuncOp>> kernelsByShape;

  /// The kernel functions in the module now.
  llvm::SmallPtrSet<Operation *, 32> kernelFunctions;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // (A pass instance may run on one module after another.)
    kernelsByShape.clear();
    kernelFunctions.clear();
    // The model entries: the private functions are chunk functions or
    // declarations already.
    SmallVector<func::FuncOp> callers;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic())
        callers.push_back(func);
    for (func::FuncOp caller : callers) {
      // Large loop nests, and the runs of code between them: straight-line
      // code (small ops vectorized whole, with no loop around their
      // vectors) and small loop nests, which would each be too small for a
      // function of their own (a CNN training step's loss, padding and
      // optimizer loops: a fifth of its entry's code).
      SmallVector<SmallVector<Operation *>> kernels;
      for (Block &block : caller.getBody()) {
        SmallVector<Operation *> run;
        for (Operation &op : block) {
          bool smallNest = op.getNumRegions() > 0 && op.getNumResults() == 0 && isMovableCode(op) &&
                           !isLargeKernel(op, minOps);
          if (isStraightLine(op) || smallNest || isAllocation(op)) {
            run.push_back(&op);
            continue;
          }
          SmallVector<Operation *> moved = movableOps(run);
          int64_t size = 0;
          for (Operation *movedOp : moved)
            size += codeSize(movedOp);
          if (size >= minOps)
            kernels.push_back(std::move(moved));
          run.clear();
          if (isLargeKernel(op, minOps))
            kernels.push_back({&op});
        }
      }
      lastFunction = nullptr;
      for (ArrayRef<Operation *> kernel : kernels)
        outline(kernel, caller, symbols);
    }
    keepSharedOnly();
    markNoAliasArguments(module);
  }

  /// Gives a kernel function's buffer argument `llvm.noalias` where every
  /// call passes it memory apart (areApart) from each other buffer the
  /// function reads or writes, its arguments and the globals it reads,
  /// unless neither is written there: inline, LLVM saw the allocations
  /// themselves and could move a kernel's loads past its stores.
  void markNoAliasArguments(ModuleOp module) {
    // Every call of each kernel function, in one walk (only these calls
    // use them).
    llvm::MapVector<func::FuncOp, SmallVector<func::CallOp>> callsOf;
    SymbolTable symbols(module);
    module.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && kernelFunctions.contains(callee))
        callsOf[callee].push_back(call);
    });
    auto noAlias = StringAttr::get(module.getContext(), LLVM::LLVMDialect::getNoAliasAttrName());
    for (auto &[function, calls] : callsOf) {
      unsigned numArgs = function.getNumArguments();
      SmallVector<bool> written(numArgs, false), apart(numArgs, false);
      for (unsigned i = 0; i < numArgs; ++i) {
        bool isBuffer = isa<BaseMemRefType>(function.getArgument(i).getType());
        apart[i] = isBuffer;
        written[i] = isBuffer && mayBeWritten(function.getArgument(i));
      }
      // The globals it reads or writes itself, by name.
      SmallVector<std::pair<StringRef, bool>> globals;
      function.walk([&](memref::GetGlobalOp global) {
        globals.push_back({global.getName(), mayBeWritten(global.getResult())});
      });
      for (func::CallOp call : calls) {
        SmallVector<Value> roots;
        for (Value operand : call.getOperands())
          roots.push_back(isa<BaseMemRefType>(operand.getType()) ? bufferRoot(operand) : nullptr);
        for (unsigned i = 0; i < numArgs; ++i) {
          if (!apart[i])
            continue;
          for (unsigned j = 0; j < numArgs && apart[i]; ++j)
            if (j != i && roots[j] && (written[i] || written[j]) && !areApart(roots[i], roots[j]))
              apart[i] = false;
          auto global = roots[i].getDefiningOp<memref::GetGlobalOp>();
          for (auto [name, globalWritten] : globals)
            if ((written[i] || globalWritten) && !isAllocation(roots[i]) &&
                !(global && global.getName() != name))
              apart[i] = false;
        }
      }
      for (unsigned i = 0; i < numArgs; ++i)
        if (apart[i])
          function.setArgAttr(i, noAlias, UnitAttr::get(module.getContext()));
    }
  }

  /// The ops of a straight-line run that a function can take: all but the
  /// pure ones whose results the code after the run uses (and what they
  /// read), and allocations, which stay. Empty when a stay would read what
  /// the function writes, or a result with effects is used after the run.
  static SmallVector<Operation *> movableOps(ArrayRef<Operation *> run) {
    llvm::SmallPtrSet<Operation *, 32> inRun(run.begin(), run.end());
    llvm::SmallPtrSet<Operation *, 8> stays;
    SmallVector<Operation *> worklist;
    for (Operation *op : run) {
      if (isAllocation(*op)) {
        if (stays.insert(op).second)
          worklist.push_back(op);
        continue;
      }
      for (Operation *user : op->getUsers())
        if (!inRun.contains(op->getBlock()->findAncestorOpInBlock(*user))) {
          if (!isMemoryEffectFree(op))
            return {};
          if (stays.insert(op).second)
            worklist.push_back(op);
          break;
        }
    }
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || !inRun.contains(def) || stays.contains(def))
          continue;
        if (!isMemoryEffectFree(def))
          return {};
        stays.insert(def);
        worklist.push_back(def);
      }
    }
    SmallVector<Operation *> moved;
    for (Operation *op : run)
      if (!stays.contains(op))
        moved.push_back(op);
    return moved;
  }

  /// A value a kernel function takes as it is: a buffer or a scalar, which
  /// crosses pieces as a pointer or an integer.
  static bool isPassedAsIs(Type type) {
    return isa<BaseMemRefType, IndexType, IntegerType, FloatType>(type);
  }

  /// A vector a kernel function takes through a stack buffer of its shape
  /// instead (the caller writes it, the function reads it back): vectors
  /// passed by value crashed a training step once caller and callee were
  /// compiled in different pieces. Whole bytes only (no masks).
  static bool isPassedInMemory(Type type) {
    auto vector = dyn_cast<VectorType>(type);
    if (!vector || vector.isScalable())
      return false;
    Type element = vector.getElementType();
    return isa<IndexType>(element) ||
           (element.isIntOrFloat() && element.getIntOrFloatBitWidth() % 8 == 0);
  }

  /// A scalar, or a buffer whose shape, strides and offset are all static
  /// (what MLIR's bare pointer convention takes).
  static bool isStaticMemRefOrScalar(Type type) {
    auto memref = dyn_cast<BaseMemRefType>(type);
    return !memref || (memref.hasStaticShape() && LLVMTypeConverter::canConvertToBarePtr(memref));
  }

  /// Moves `kernel` (one op with regions, or a run of straight-line ops in
  /// order, none of whose results is used after it) into a function and
  /// calls it in place of the last op. Buffers and scalars it uses become
  /// arguments as they are, vectors go through memory (isPassedInMemory);
  /// a kernel that would take any other value stays.
  void outline(ArrayRef<Operation *> kernel, func::FuncOp caller, SymbolTable &symbols) {
    Location loc = kernel.back()->getLoc();
    Block *block = kernel.front()->getBlock();
    llvm::SmallPtrSet<Operation *, 32> moved(kernel.begin(), kernel.end());
    // What the kernel reads from outside: recomputable ops (and what they
    // read, transitively) are cloned, the other values become arguments.
    // (Not the values of the kernel's own ops, which a loop in it may use.)
    llvm::SetVector<Value> used;
    for (Operation *op : kernel) {
      llvm::SetVector<Value> above;
      for (Region &region : op->getRegions())
        getUsedValuesDefinedAbove(region, above);
      for (Value value : llvm::concat<Value>(above, op->getOperands()))
        if (!moved.contains(value.getDefiningOp()))
          used.insert(value);
    }
    llvm::SetVector<Operation *> clones;
    llvm::SetVector<Value> arguments;
    SmallVector<Value> worklist(used.begin(), used.end());
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      Operation *def = value.getDefiningOp();
      if (!isRecomputable(def) || def->getBlock() != block) {
        arguments.insert(value);
        continue;
      }
      if (clones.insert(def))
        llvm::append_range(worklist, def->getOperands());
    }
    if (!llvm::all_of(arguments, [](Value value) {
          return isPassedAsIs(value.getType()) || isPassedInMemory(value.getType());
        }))
      return;
    SmallVector<Operation *> ordered(clones.begin(), clones.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    // Arguments in the caller's order: its own arguments, then values by
    // where they are defined.
    SmallVector<Value> args(arguments.begin(), arguments.end());
    llvm::stable_sort(args, [&](Value a, Value b) {
      auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
      if (argA || argB)
        return argA && (!argB || argA.getArgNumber() < argB.getArgNumber());
      Operation *defA = a.getDefiningOp(), *defB = b.getDefiningOp();
      return defA->getBlock() == defB->getBlock() && defA != defB && defA->isBeforeInBlock(defB);
    });

    OpBuilder moduleBuilder(caller);
    moduleBuilder.setInsertionPointAfter(lastFunction ? lastFunction : caller.getOperation());
    SmallVector<Type> argTypes;
    for (Value arg : args) {
      auto vector = dyn_cast<VectorType>(arg.getType());
      argTypes.push_back(vector ? MemRefType::get(vector.getShape(), vector.getElementType())
                                : arg.getType());
    }
    auto type = moduleBuilder.getFunctionType(argTypes, {});
    auto function =
        func::FuncOp::create(moduleBuilder, loc, (caller.getName() + "_kernel").str(), type);
    function.setPrivate();
    // LLVM would inline a function called once back into its caller.
    function->setAttr("passthrough",
                      moduleBuilder.getArrayAttr({moduleBuilder.getStringAttr("noinline")}));
    // Buffers of static shapes, strides and offset cross as one pointer
    // each (MLIR's bare pointer convention) rather than as a descriptor of
    // 2 pointers and 1 + 2 x rank integers whose values the type fixes
    // already: a CNN training step's kernel calls took 28 arguments on
    // average, most on the stack, which the entry's code generation lowered
    // call by call (18% of its instructions).
    if (llvm::all_of(argTypes, isStaticMemRefOrScalar))
      function->setAttr("llvm.bareptr", moduleBuilder.getUnitAttr());
    symbols.insert(function);
    lastFunction = function;
    Block *entry = function.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(args, entry->getArguments())) {
      auto vector = dyn_cast<VectorType>(value.getType());
      if (!vector) {
        mapping.map(value, argument);
        continue;
      }
      SmallVector<Value> zeros(vector.getRank(), arith::ConstantIndexOp::create(body, loc, 0));
      SmallVector<bool> inBounds(vector.getRank(), true);
      mapping.map(value, vector::TransferReadOp::create(body, loc, vector, argument, zeros,
                                                        /*padding=*/std::nullopt, inBounds));
    }
    for (Operation *op : ordered)
      body.clone(*op, mapping);
    for (Operation *op : kernel)
      body.clone(*op, mapping);
    func::ReturnOp::create(body, loc);

    // The stack buffers at the caller's start (static allocations), each
    // written just before the call.
    OpBuilder builder(kernel.back());
    OpBuilder allocas = OpBuilder::atBlockBegin(&caller.getBody().front());
    SmallVector<Value> operands;
    SmallVector<Operation *> stackWrites;
    for (auto [value, argType] : llvm::zip(args, argTypes)) {
      auto buffer = dyn_cast<MemRefType>(argType);
      if (!buffer || isa<BaseMemRefType>(value.getType())) {
        operands.push_back(value);
        continue;
      }
      Value stack = memref::AllocaOp::create(allocas, loc, buffer);
      SmallVector<Value> zeros(buffer.getRank(), arith::ConstantIndexOp::create(builder, loc, 0));
      SmallVector<bool> inBounds(buffer.getRank(), true);
      stackWrites.push_back(
          vector::TransferWriteOp::create(builder, loc, value, stack, zeros, inBounds));
      operands.push_back(stack);
    }
    func::FuncOp callee = sameKernel(function, symbols);
    auto call = func::CallOp::create(builder, loc, callee, operands);
    if (sharedOnly) {
      // Both stay until every kernel is outlined (keepSharedOnly).
      pending.push_back({call, callee, SmallVector<Operation *>(kernel), std::move(stackWrites)});
      return;
    }
    for (Operation *op : llvm::reverse(kernel))
      op->erase();
  }

  /// A kernel outlined with shared-only: the call, and the kernel's own ops
  /// still in place, one of which keepSharedOnly erases.
  struct PendingKernel {
    func::CallOp call;
    func::FuncOp function;
    SmallVector<Operation *> kernel;
    /// The writes of the vectors the call passes in stack buffers.
    SmallVector<Operation *> stackWrites;
  };
  SmallVector<PendingKernel> pending;

  /// With shared-only: a kernel whose function no other kernel calls stays
  /// where it was, the call and function erased; the others' ops go.
  void keepSharedOnly() {
    llvm::DenseMap<Operation *, int64_t> calls;
    for (const PendingKernel &kernel : pending)
      ++calls[kernel.function];
    for (PendingKernel &kernel : pending) {
      func::FuncOp function = kernel.function;
      if (calls[function] > 1) {
        for (Operation *op : llvm::reverse(kernel.kernel))
          op->erase();
        continue;
      }
      kernel.call->erase();
      for (Operation *write : kernel.stackWrites) {
        Value stack = cast<vector::TransferWriteOp>(write).getBase();
        write->erase();
        if (Operation *alloca = stack.getDefiningOp(); alloca && alloca->use_empty())
          alloca->erase();
      }
      kernelFunctions.erase(function);
      function->erase();
    }
    pending.clear();
  }

  /// `function`, or an earlier kernel function whose body is the same up to
  /// locations, in which case `function` is erased.
  func::FuncOp sameKernel(func::FuncOp function, SymbolTable &symbols) {
    int64_t ops = 0;
    function.walk([&](Operation *) { ++ops; });
    SmallVector<func::FuncOp> &alike = kernelsByShape[{function.getFunctionType(), ops}];
    for (func::FuncOp earlier : alike) {
      if (OperationEquivalence::isRegionEquivalentTo(&earlier.getBody(), &function.getBody(),
                                                     OperationEquivalence::IgnoreLocations)) {
        if (lastFunction == function.getOperation())
          lastFunction = function->getPrevNode();
        symbols.erase(function);
        return earlier;
      }
    }
    alike.push_back(function);
    kernelFunctions.insert(function);
    return function;
  }
};

} // namespace
