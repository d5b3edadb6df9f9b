//===- ProfileKernels.cpp - host timers around each kernel ----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/BufferizableOpInterfaceImpl.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Path.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILPROFILEKERNELS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

static constexpr StringLiteral kEnter = "mithrilProfileEnter";
static constexpr StringLiteral kExit = "mithrilProfileExit";

/// Calls `leaf` on each location `loc` is made of: through fused locations
/// and call sites' callees, down to names (whose child locations `leaf` may
/// visit itself) and file positions.
static void forEachLeaf(Location loc, llvm::function_ref<void(Location)> leaf) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      forEachLeaf(inner, leaf);
    return;
  }
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return forEachLeaf(callSite.getCallee(), leaf);
  leaf(loc);
}

/// The logical names in `loc` (the model paths its ops came from), in order.
static void collectNames(Location loc, llvm::SetVector<StringRef> &names) {
  forEachLeaf(loc, [&](Location leaf) {
    if (auto name = dyn_cast<NameLoc>(leaf))
      names.insert(name.getName().getValue());
  });
}

/// The source lines in `loc` (a model written as .mlir text has no model
/// paths), as "file:line".
static void collectLines(Location loc, SmallVectorImpl<std::string> &lines) {
  forEachLeaf(loc, [&](Location leaf) {
    if (auto name = dyn_cast<NameLoc>(leaf))
      return collectLines(name.getChildLoc(), lines);
    auto file = dyn_cast<FileLineColLoc>(leaf);
    if (!file)
      return;
    std::string line =
        (llvm::sys::path::filename(file.getFilename().getValue()) + ":" + Twine(file.getLine()))
            .str();
    if (!llvm::is_contained(lines, line))
      lines.push_back(line);
  });
}

/// A kernel's name: the logical ops it computes (the model paths in its
/// locations), or else what its ops are and the source lines they came from.
static std::string kernelName(Operation *op) {
  llvm::SetVector<StringRef> kinds, names;
  SmallVector<std::string> lines;
  op->walk([&](Operation *inner) {
    if (isa<linalg::LinalgOp, memref::CopyOp>(inner))
      kinds.insert(inner->getName().stripDialect());
    collectNames(inner->getLoc(), names);
    collectLines(inner->getLoc(), lines);
  });
  if (names.empty()) {
    std::string what =
        kinds.empty() ? op->getName().getStringRef().str() : llvm::join(kinds.getArrayRef(), "+");
    if (lines.empty())
      return what;
    ArrayRef<std::string> shown = ArrayRef<std::string>(lines).take_front(4);
    return what + " (" + llvm::join(shown, ", ") + (lines.size() > 4 ? ", ..." : "") + ")";
  }
  ArrayRef<StringRef> shown = names.getArrayRef().take_front(6);
  return llvm::join(shown, " + ") + (names.size() > 6 ? " + ..." : "");
}

/// A kernel: an op at a function's top level that does the work of a loop
/// nest (and not an allocation, a view or a constant), or the call of a
/// user's C function (mithril.custom_call, bufferized).
static bool isKernel(Operation &op) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return call.getCallee().starts_with(mithril::kCustomCallWrapperPrefix);
  return op.getNumRegions() > 0 || isa<linalg::LinalgOp, memref::CopyOp>(op);
}

namespace {
struct ProfileKernelsPass : public mithril::impl::MithrilProfileKernelsBase<ProfileKernelsPass> {
  using MithrilProfileKernelsBase::MithrilProfileKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    SmallVector<Attribute> names;
    if (auto existing = module->getAttrOfType<ArrayAttr>("mithril.profile_kernels"))
      llvm::append_range(names, existing);
    auto hookType = FunctionType::get(ctx, {b.getI64Type()}, {});
    for (StringRef hook : {kEnter, kExit}) {
      if (module.lookupSymbol(hook))
        continue;
      b.setInsertionPointToEnd(module.getBody());
      auto decl = func::FuncOp::create(b, module.getLoc(), hook, hookType);
      decl.setPrivate();
    }
    int64_t next = firstId + static_cast<int64_t>(names.size());
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      for (Block &block : func.getBody()) {
        for (Operation &op : llvm::make_early_inc_range(block)) {
          if (!isKernel(op))
            continue;
          Location loc = op.getLoc();
          b.setInsertionPoint(&op);
          Value id = arith::ConstantIntOp::create(b, loc, next, 64);
          func::CallOp::create(b, loc, kEnter, TypeRange{}, ValueRange{id});
          b.setInsertionPointAfter(&op);
          func::CallOp::create(b, loc, kExit, TypeRange{}, ValueRange{id});
          names.push_back(b.getStringAttr(kernelName(&op)));
          ++next;
        }
      }
    }
    module->setAttr("mithril.profile_kernels", b.getArrayAttr(names));
  }
};
} // namespace
