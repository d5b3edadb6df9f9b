//===- MithrilDialect.cpp - The mithril dialect ---------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mithril;

#include "mithril/Dialect/Mithril/IR/MithrilOpsDialect.cpp.inc"
#include "mithril/Dialect/Mithril/IR/MithrilEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "mithril/Dialect/Mithril/IR/MithrilAttrs.cpp.inc"

namespace {
/// Mithril primitives are pure and may be inlined anywhere; flattening inlines
/// whole models through its own logic, which keeps instance paths.
struct MithrilInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void MithrilDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mithril/Dialect/Mithril/IR/MithrilOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mithril/Dialect/Mithril/IR/MithrilAttrs.cpp.inc"
      >();
  addInterfaces<MithrilInlinerInterface>();
}

Operation *MithrilDialect::materializeConstant(OpBuilder &builder,
                                               Attribute value, Type type,
                                               Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
