//===- MithrilToLinalg.h - mithril to linalg on tensors ---------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CONVERSION_MITHRILTOLINALG_MITHRILTOLINALG_H
#define MITHRIL_CONVERSION_MITHRILTOLINALG_MITHRILTOLINALG_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mithril {

#define GEN_PASS_DECL_CONVERTMITHRILTOLINALG
#define GEN_PASS_DECL_MITHRILUNIQUERESULTS
#include "mithril/Conversion/Passes.h.inc"

// The forms the lowering builds for the CPU schedule carry their register
// kernel in `mithril.lowering_config` (LoweringConfig.h): conv_spatial (a
// convolution with s spatial dimensions: loops n, group, output channel, s
// output positions, input channel and s kernel positions), conv_flat (a plain
// 2-D convolution over rows flattened at the padded width: loops n, output
// channel, flat output position p, input channel, kernel row, kernel column;
// the input read at p + row * width + column), conv_flat_weight_grad (its
// weight gradient's partial sums: loops output channel, input channel, kernel
// row, kernel column, lane, n, block of lanes; with bf16 operands n / 2 and
// a last loop over the pair of images) and pool_window (a pooling
// over non-overlapping windows, each spatial axis of the input split into
// output position and window offset; `window` lists the loops a register
// tile keeps whole).

/// Marks a loop the lowering builds over blocks of an op's result (the rows
/// of a first layer with their pooling, Winograd's blocks of tiles): the CPU
/// schedule computes the values its body inserts into the loop's result in
/// their slice of it (bufferization's empty-tensor elimination, there only:
/// across a whole training step it added copies).
inline constexpr llvm::StringLiteral kInPlaceBlocksAttr = "mithril.in_place_blocks";

/// Positions along the flat rows a register tile covers, and the lanes of
/// the weight gradient's partial sums.
inline constexpr int64_t kConvFlatTile = 32;
inline constexpr int64_t kConvFlatLanes = 16;

/// The body of a multiply-accumulate linalg.generic over floats: yields
/// out + in0 * in1 (block arguments 2, 0 and 1).
void yieldMultiplyAdd(mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange args);

/// The function compiled code calls with the first index out of range:
/// `void mithrilIndexError(int64_t value, int64_t bound, const char *message)`.
inline constexpr llvm::StringLiteral kIndexErrorFunction = "mithrilIndexError";

/// Adds the patterns that lower mithril primitives to linalg on tensors.
/// With `indexErrors`, ops indexing by data report indices out of range
/// through kIndexErrorFunction (they clamp them either way). With
/// `bf16Products`, Winograd convolutions multiply their transformed operands
/// in bf16, and flat weight gradients of bf16 values multiply them in pairs
/// of images (convert-mithril-to-linalg's bf16-products). With `bf16Tiles`,
/// stride-1 convolutions of such models whose sizes suit AMX tiles are one
/// bf16 matrix product of the input's windows (bf16-tiles). `threads`: the
/// CPU schedule's threads, for the lowering's own loops (threads; 0: none).
void populateMithrilToLinalgPatterns(mlir::RewritePatternSet &patterns, bool indexErrors = false,
                                     bool bf16Products = false, bool bf16Tiles = false,
                                     unsigned threads = 0);

} // namespace mithril

#endif // MITHRIL_CONVERSION_MITHRILTOLINALG_MITHRILTOLINALG_H
