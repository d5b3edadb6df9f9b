//===- FlatGlobals.cpp - constant buffers as flat arrays ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

#include <numeric>

namespace mithril {
#define GEN_PASS_DEF_MITHRILFLATGLOBALS
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {
/// `type`'s elements in one dimension.
MemRefType flatType(MemRefType type) {
  return MemRefType::get({type.getNumElements()}, type.getElementType(), AffineMap(),
                         type.getMemorySpace());
}

struct FlatGlobalsPass : public mithril::impl::MithrilFlatGlobalsBase<FlatGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The module's own globals, by name, with the type their readers keep.
    llvm::DenseMap<StringAttr, MemRefType> flattened;
    for (memref::GlobalOp global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      if (type.getRank() < 2 || !type.hasStaticShape() || !type.getLayout().isIdentity())
        continue;
      // An initial value other than dense elements (a resource blob) is
      // left as it is.
      Attribute init = global.getInitialValue().value_or(Attribute());
      auto dense = dyn_cast_or_null<DenseElementsAttr>(init);
      if (init && !isa<UnitAttr>(init) && !dense)
        continue;
      global.setType(flatType(type));
      if (dense)
        global.setInitialValueAttr(
            dense.reshape(RankedTensorType::get({type.getNumElements()}, type.getElementType())));
      flattened[global.getSymNameAttr()] = type;
    }
    if (flattened.empty())
      return;
    SmallVector<memref::GetGlobalOp> reads;
    module.walk([&](memref::GetGlobalOp read) {
      if (SymbolTable::getNearestSymbolTable(read) == module.getOperation() &&
          flattened.count(read.getNameAttr().getAttr()))
        reads.push_back(read);
    });
    IRRewriter rewriter(&getContext());
    for (memref::GetGlobalOp read : reads) {
      MemRefType type = flattened.lookup(read.getNameAttr().getAttr());
      rewriter.setInsertionPoint(read);
      auto flatRead =
          memref::GetGlobalOp::create(rewriter, read.getLoc(), flatType(type), read.getName());
      ReassociationIndices all(type.getRank());
      std::iota(all.begin(), all.end(), 0);
      rewriter.replaceOpWithNewOp<memref::ExpandShapeOp>(read, type, flatRead,
                                                         ArrayRef<ReassociationIndices>{all});
    }
  }
};
} // namespace
