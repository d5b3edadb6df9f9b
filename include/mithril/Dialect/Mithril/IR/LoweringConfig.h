//===- LoweringConfig.h - per-op code generation choices --------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Accessors for `mithril.lowering_config` (LoweringConfigAttr, declared in
// MithrilLoweringConfig.td): the lowering and mithril-cpu-strategy attach it
// to linalg ops, mithril-cpu-schedule reads it.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_LOWERINGCONFIG_H
#define MITHRIL_DIALECT_MITHRIL_IR_LOWERINGCONFIG_H

#include "mithril/Dialect/Mithril/IR/MithrilDialect.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Operation.h"

namespace mithril {

/// The op's lowering config, or null.
LoweringConfigAttr getLoweringConfig(mlir::Operation *op);

/// The op's register kernel: its config's, else Default.
CpuKernel getCpuKernel(mlir::Operation *op);

/// Attaches `config` to `op` (replacing any other).
void setLoweringConfig(mlir::Operation *op, LoweringConfigAttr config);

/// Attaches a config of `kernel` alone (the strategy fills in the rest).
void setCpuKernel(mlir::Operation *op, CpuKernel kernel);

/// The indexing maps of a CpuKernel::TileConv generic, over (n, oh, ow, f,
/// kh, kw, c / g, g): input [n][oh + kh][ow + kw][c / g][g], weight
/// [kh][kw][c / g][f][g], result [n][oh][ow][f]. The lowering builds its
/// generics with them and mithril-x86-tile-matmuls writes only those.
llvm::SmallVector<mlir::AffineMap> tileConvMaps(mlir::MLIRContext *ctx);

} // namespace mithril

#endif // MITHRIL_DIALECT_MITHRIL_IR_LOWERINGCONFIG_H
