//===- Utils.h - helpers shared by mithril-to-linalg patterns ---*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// Internal to the MithrilToLinalg library: the helpers that patterns of more
// than one op family use, and the per-family pattern population functions
// that populateMithrilToLinalgPatterns calls.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_CONVERSION_MITHRILTOLINALG_UTILS_H
#define MITHRIL_LIB_CONVERSION_MITHRILTOLINALG_UTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include <functional>
#include <utility>

namespace mithril::linalg_lowering {

inline constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

mlir::RankedTensorType tensorType(mlir::Value v);

/// The size of dimension `d` of `v` as an index value or attribute.
mlir::OpFoldResult dimOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t d);

/// A tensor.empty of `type`, taking dynamic sizes from `sizes`.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// Index attributes for static offsets, sizes or strides.
llvm::SmallVector<mlir::OpFoldResult> indexAttrs(mlir::OpBuilder &b,
                                                 llvm::ArrayRef<int64_t> values);

/// A static-shaped tensor of `type` filled with zeros.
mlir::Value zeroFilled(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type);

/// A tensor of `type` (its dynamic sizes those of `like`), whose every element `element`
/// computes from its indices (linalg.index) alone.
mlir::Value
generateElements(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                 mlir::Value like,
                 llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location)> element);

//===----------------------------------------------------------------------===//
// Elementwise computations and scalars
//===----------------------------------------------------------------------===//

using ScalarFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange,
                                                mlir::Type)>;

/// Declares `name` of `type` in `module`, private (a function the host
/// provides), unless it is there already.
void declarePrivateFunction(mlir::OpBuilder &b, mlir::ModuleOp module, llvm::StringRef name,
                            mlir::FunctionType type);

/// An elementwise linalg.generic computing `fn` over broadcast operands.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType, mlir::ValueRange operands,
                             ScalarFn fn);

mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc, mlir::Type t, double v);

bool isFloat(mlir::Type t);

/// x for integers, x for floats; the scalar "zero" of type t.
mlir::Value zeroOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Type t);

/// 1 where `cond` holds and 0 elsewhere, in `et` (float or integer).
mlir::Value oneWhere(mlir::OpBuilder &b, mlir::Location loc, mlir::Value cond, mlir::Type et);

//===----------------------------------------------------------------------===//
// Reductions and reshapes
//===----------------------------------------------------------------------===//

/// The neutral element of a reduction and its combiner. An additive reduction
/// of floats narrower than f64 accumulates in f64 (see buildReduction): its
/// combiner is then called on f64 values, so it must not bake in a type.
struct Reducer {
  using Combine =
      std::function<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::Value)>;
  mlir::TypedAttr init;
  Combine combine;
  bool additive = false;
};

/// Reduces `input` over `axes` (normalized) with `reducer`; the result has the
/// reduced axes removed and the input's element type. A float sum over the
/// innermost axis, long and static, is taken in two steps: kSumLanes partial
/// sums of every kSumLanes-th element, then their sum.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                           llvm::ArrayRef<int64_t> axes, const Reducer &reducer);

/// Reshapes `input` to `type`, whose dynamic sizes are given by `sizes`, via
/// collapse to 1-D and expand (both free after bufferization).
mlir::Value buildReshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                         mlir::RankedTensorType type, llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// Adds back the reduced `axes` (normalized) as size-1 dimensions for keepdim;
/// `reduced` is already of `type` without keepdim. The axes must be given: a
/// [1, 5] sum reduced to [1, 5, 1] has two unit dimensions that only they tell
/// apart.
mlir::Value keepDims(mlir::OpBuilder &b, mlir::Location loc, mlir::Value reduced,
                     mlir::RankedTensorType type, llvm::ArrayRef<int64_t> axes);

/// Divides every element of `t` by the scalar `s`.
mlir::Value divideByScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value t, mlir::Value s);

//===----------------------------------------------------------------------===//
// Windows (convolution and pooling)
//===----------------------------------------------------------------------===//

/// Zero-pads (or -inf pads) the spatial dimensions of `input`, which start at
/// `firstSpatial`.
mlir::Value padSpatial(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                       int64_t firstSpatial, llvm::ArrayRef<int64_t> padding, mlir::Value padValue);

/// Channels-last [n, h * w, f] as planes [n, f, h, w]: a transpose of the
/// last two dimensions, which the CPU schedule moves in 16 x 16 register
/// blocks.
mlir::Value channelsLastToPlanes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value flat,
                                 int64_t h, int64_t w);

/// `out` computed in `chunks` contiguous chunks of its first dimension, one
/// per thread of a CPU schedule: an scf.forall of them (one call of `chunk`
/// for the whole where `chunks` is 1), each chunk the value `chunk` builds
/// from the chunk's first index and its slice of `out` (a loop over blocks
/// of it). The loop that results is marked kInPlaceBlocksAttr.
mlir::Value inParallelChunks(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value out, int64_t chunks,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Value, mlir::Value)> chunk);

/// What a Winograd convolution computes of each 2x2 block of its outputs in
/// place of the block: max(relu(y + bias)) over the block, the 2x2 max
/// pooling of stride 2 that alone reads the convolution (through a ReLU).
struct PooledBlocks {
  mlir::Value bias; // [F], or null
  bool relu = false;
  /// The narrower float that mixed precision rounds the convolution's result
  /// to (before the ReLU), or null.
  mlir::FloatType roundTo;
};

/// A 3x3 float32 convolution of static `input` [N, C, H, W] and `weight` [F,
/// C, 3, 3] by Winograd's F(2x2, 3x3) (Winograd.cpp), or nullopt where it
/// does not pay (few channels) or does not apply (a stride or dilation other
/// than 1). With `pooled`, the result is the pooling [N, F, OH / 2, OW / 2]
/// (even OH, OW). With `bf16Products`, the transformed input and filter are
/// rounded to bf16 and multiplied in pairs of channels (f32 sums), as the
/// bf16 dot-product register tiles take them (even C). A pooled float32 one
/// runs its products and output transform in blocks of tiles, in `threads`
/// chunks (0: whole).
std::optional<mlir::Value>
lowerWinogradConv(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input, mlir::Value weight,
                  llvm::ArrayRef<int64_t> stride, llvm::ArrayRef<int64_t> padding,
                  llvm::ArrayRef<int64_t> dilation, const PooledBlocks *pooled = nullptr,
                  bool bf16Products = false, unsigned threads = 0);

/// For a gather-form window gradient: given input position `i` and window
/// offset `k` along one spatial dimension, the output position `o` whose
/// window covers `i` through `k` (when `valid`).
std::pair<mlir::Value, mlir::Value> windowSource(mlir::OpBuilder &b, mlir::Location loc,
                                                 mlir::Value i, mlir::Value k, int64_t stride,
                                                 int64_t padLo, int64_t dilation, int64_t outSize);

//===----------------------------------------------------------------------===//
// Indices (defined in Indexing.cpp)
//===----------------------------------------------------------------------===//

/// Checks at run time that every element of the integer tensor `indices` lies
/// in [0, bound), and reports the smallest (if negative) or else the largest
/// one out of range through kIndexErrorFunction, naming `op` and where the
/// indices come from. One pass over the indices: their min and max.
void reportIndicesOutOfRange(mlir::PatternRewriter &rewriter, mlir::Location loc,
                             mlir::Operation *op, mlir::Value indices, mlir::OpFoldResult bound);

/// `index` (an integer of any width, as an index) clamped into [0, bound - 1]:
/// an index out of range reads the nearest row instead of memory outside the
/// tensor (and is reported where the code reports such indices).
mlir::Value clampIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index,
                       mlir::Value bound);

//===----------------------------------------------------------------------===//
// Sequential loops
//===----------------------------------------------------------------------===//

/// An scf.for from `lower` to `upper` (step 1) carrying `init`; `body` gets
/// the induction variable and the carried values and returns the next ones.
/// Sequential recurrences are such loops over tensors that read with
/// tensor.extract and write with tensor.insert, which bufferization turns
/// into in-place stores.
mlir::scf::ForOp
forLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lower, mlir::Value upper,
        mlir::ValueRange init,
        llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, mlir::Location,
                                                          mlir::Value, mlir::ValueRange)>
            body);

/// tensor[row][column] of a matrix.
mlir::Value extract(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor, mlir::Value row,
                    mlir::Value column);

//===----------------------------------------------------------------------===//
// Patterns, by op family
//===----------------------------------------------------------------------===//

/// Elementwise ops, broadcast_to and constant (Elementwise.cpp).
void populateElementwisePatterns(mlir::RewritePatternSet &patterns);

/// sum, mean, max, min, prod, variance, argmax and argmin (Reduction.cpp).
void populateReductionPatterns(mlir::RewritePatternSet &patterns);

/// matmul, cholesky and triangular_solve (Linear.cpp).
void populateLinearPatterns(mlir::RewritePatternSet &patterns);

/// Convolutions and their gradients (Convolution.cpp).
void populateConvolutionPatterns(mlir::RewritePatternSet &patterns, bool bf16Products = false,
                                 bool bf16Tiles = false, unsigned threads = 0);

/// Max and average pooling and their gradients (Pooling.cpp).
void populatePoolingPatterns(mlir::RewritePatternSet &patterns);

/// transpose, reshapes, concat, slice (and its gradient), shape, reverse,
/// eye_like and tril (DataMovement.cpp).
void populateDataMovementPatterns(mlir::RewritePatternSet &patterns);

/// random_normal and random_uniform (Random.cpp).
void populateRandomPatterns(mlir::RewritePatternSet &patterns);

/// embedding (and its gradient) and one_hot (Indexing.cpp). With
/// `indexErrors`, embedding reports indices out of range.
void populateIndexingPatterns(mlir::RewritePatternSet &patterns, bool indexErrors);

/// cross_entropy (Losses.cpp). With `indexErrors`, class indices out of range
/// are reported.
void populateLossPatterns(mlir::RewritePatternSet &patterns, bool indexErrors);

/// all_reduce, as a call of the host's collective (Collectives.cpp).
void populateCollectivePatterns(mlir::RewritePatternSet &patterns);

/// Each all_reduce of a static shape in `func` with its operand placed in the
/// function's window of its group (a mithril.collective_window at the entry,
/// each operand at its own offset): computed there, it is summed where it
/// lies, without a copy (Collectives.cpp). With `windowRanks` above 1, the
/// data group's that many ranks share the window: after a barrier, the code
/// adds every rank's operand where it lies itself (a linalg.generic that
/// fuses with what uses the sum), and waits for the others once more before
/// it returns.
void lowerAllReducesIntoWindows(mlir::func::FuncOp func, unsigned windowRanks);

/// tsne_p_joint (Manifold.cpp).
void populateManifoldPatterns(mlir::RewritePatternSet &patterns);

/// mithril.unique (Sets.cpp).
void populateSetPatterns(mlir::RewritePatternSet &patterns);

} // namespace mithril::linalg_lowering

#endif // MITHRIL_LIB_CONVERSION_MITHRILTOLINALG_UTILS_H
