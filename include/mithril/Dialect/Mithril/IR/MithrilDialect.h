//===- MithrilDialect.h - The mithril dialect -------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_H
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "mithril/Dialect/Mithril/IR/MithrilOpsDialect.h.inc"
#include "mithril/Dialect/Mithril/IR/MithrilEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mithril/Dialect/Mithril/IR/MithrilAttrs.h.inc"

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILDIALECT_H
