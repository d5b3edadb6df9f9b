//===- CpuSchedule.cpp - tiling and vectorization for the host ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The schedule is a transform-dialect script, kept as text so that it can be
// read and tried with mithril-opt's --transform-interpreter as well.
//
//===----------------------------------------------------------------------===//

#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Parser/Parser.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILCPUSCHEDULE
#include "mithril/Pipelines/Passes.h.inc"
} // namespace mithril

using namespace mlir;

/// After tiling and vectorization, clean up the vector code (reductions of
/// products become contractions) and hoist the matmul accumulators out of
/// the reduction loops while still on tensors.
static constexpr llvm::StringLiteral kVectorize = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
    } : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %funcs
        : (!transform.any_op) -> !transform.any_op
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
    transform.yield
  }
}
)mlir";

/// Tile sizes for the host: matmuls get a register block of 8 rows by 32
/// columns (sixteen 512-bit f32 accumulators) stepping the reduction one at
/// a time; every other op tiles its last two loops to 8 x 32 and the others
/// to 1, so that no vector grows beyond a few registers.
static SmallVector<int64_t> hostTileSizes(linalg::LinalgOp op) {
  if (isa<linalg::MatmulOp>(op.getOperation()))
    return {8, 32, 1};
  if (isa<linalg::BatchMatmulOp>(op.getOperation()))
    return {1, 8, 32, 1};
  unsigned loops = op.getNumLoops();
  SmallVector<int64_t> sizes(loops, 1);
  if (loops >= 1)
    sizes[loops - 1] = 32;
  if (loops >= 2)
    sizes[loops - 2] = 8;
  return sizes;
}

static bool touchesBooleans(Operation *op) {
  auto isBool = [](Type t) { return getElementTypeOrSelf(t).isInteger(1); };
  return llvm::any_of(op->getOperandTypes(), isBool) ||
         llvm::any_of(op->getResultTypes(), isBool);
}

namespace {
struct CpuSchedulePass : public mithril::impl::MithrilCpuScheduleBase<CpuSchedulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumLoops() > 0)
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<int64_t> sizes = hostTileSizes(op);
      // Loops shorter than their tile gain nothing from tiling.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      for (auto [size, range] : llvm::zip(sizes, ranges))
        if (!ShapedType::isDynamic(range) && range <= size)
          size = 0;
      if (llvm::all_of(sizes, [](int64_t s) { return s == 0; }))
        continue;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled =
          scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op.emitError("mithril-cpu-schedule: cannot tile this op");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, tiled->replacements);
    }
    // Vectorize the tiles. Booleans stay scalar: a vector of i1 is stored as
    // packed bits, while a tensor of i1 is one byte per element in memory.
    SmallVector<linalg::LinalgOp> tiles;
    module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && !touchesBooleans(op))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(rewriter, op);
      if (succeeded(vectorized))
        rewriter.replaceOp(op, vectorized->replacements);
    }
    OwningOpRef<ModuleOp> script = parseSourceString<ModuleOp>(kVectorize, &getContext());
    if (!script) {
      module.emitError("mithril-cpu-schedule: the embedded schedule does not parse");
      return signalPassFailure();
    }
    Operation *entry =
        SymbolTable::lookupSymbolIn(*script, StringRef("__transform_main"));
    if (!entry ||
        failed(transform::applyTransformNamedSequence(module, entry, *script,
                                                      transform::TransformOptions())))
      signalPassFailure();
  }
};
} // namespace
