//===- LowerCollectiveWindows.cpp - windows from the runtime --------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILLOWERCOLLECTIVEWINDOWS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// The runtime's entries (Distributed.h): this rank's segment of a group's
/// window of at least `bytes` bytes, and another rank's segment of it.
constexpr StringLiteral kCallee = "mithrilCollectiveWindow";
constexpr StringLiteral kSegmentCallee = "mithrilCollectiveWindowSegment";

struct LowerCollectiveWindowsPass
    : public mithril::impl::MithrilLowerCollectiveWindowsBase<LowerCollectiveWindowsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mithril::CollectiveWindowOp> windows;
    module.walk([&](mithril::CollectiveWindowOp op) { windows.push_back(op); });
    if (windows.empty())
      return;
    OpBuilder b(module.getContext());
    auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    auto declare = [&](StringRef callee, unsigned operands) {
      if (SymbolTable::lookupSymbolIn(module, callee))
        return;
      b.setInsertionPointToStart(module.getBody());
      SmallVector<Type> types(operands, b.getI64Type());
      auto decl = func::FuncOp::create(b, module.getLoc(), callee, b.getFunctionType(types, bytes));
      decl.setPrivate();
      // The descriptor comes back through a pointer: a C function can fill it.
      decl->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    };
    for (mithril::CollectiveWindowOp op : windows) {
      Location loc = op.getLoc();
      std::optional<int64_t> rank = op.getRank();
      StringRef callee = rank ? kSegmentCallee : kCallee;
      declare(callee, rank ? 3 : 2);
      b.setInsertionPoint(op);
      MemRefType type = op.getWindow().getType();
      SmallVector<Value> operands = {
          arith::ConstantOp::create(
              b, loc, b.getI64IntegerAttr(mithril::collectiveGroupNumber(op.getGroup()))),
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(type.getNumElements()))};
      if (rank)
        operands.push_back(arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(*rank)));
      Value segment = func::CallOp::create(b, loc, callee, TypeRange{bytes}, operands).getResult(0);
      op.replaceAllUsesWith(memref::CastOp::create(b, loc, type, segment).getResult());
      op.erase();
    }
  }
};
} // namespace
