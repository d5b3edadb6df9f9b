//===- GpuTileContractions.cpp - shared-memory tiles for GPU contractions -===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// A contraction (matmul, a Linear's product, a flat-row convolution, ...) is
// seen as a batch of GEMMs, C[m, n] += sum_k A[m, k] * B[k, n], whatever its
// indexing maps: `n` linearizes the output dimensions only B reads (B being
// the input that reads the innermost such dimension), `m` those only A reads,
// the dimensions both read index the batch, and the reduction dimensions are
// linearized into `k`. A
// block of tile x tile threads owns a tile of C, each thread up to
// thread-tile x thread-tile elements of it; for each step of `k` the threads
// copy a tile of A and one of B into shared memory (reading each operand
// through its own indexing map, so a convolution is an implicit GEMM with no
// im2col buffer) and then each thread accumulates its elements of C from the
// two tiles. The sums live in a buffer indexed by the thread first, which
// mithril-gpu-map-forall turns into registers.
//
// The result is scf.forall loops with GPU mappings. Each thread loop reads
// only what earlier thread loops wrote, so running the loops one after the
// other (scf.forall -> scf.for) computes what the GPU computes with a barrier
// after each thread loop: that is how the schedule is checked on the host.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <optional>

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUTILECONTRACTIONS
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// A contraction's iteration space as a batch of GEMMs. Each group of
/// dimensions is linearized, its last dimension varying fastest.
struct GemmView {
  /// Output dimensions only `lhs` reads (the rows of C), only `rhs` reads
  /// (its columns), and both or neither read (the batch).
  SmallVector<unsigned> mDims, nDims, batchDims;
  SmallVector<unsigned> reductionDims;
  /// Input operand numbers.
  unsigned lhs = 0, rhs = 1;
  SmallVector<int64_t> ranges;

  int64_t extent(ArrayRef<unsigned> dims) const {
    int64_t product = 1;
    for (unsigned d : dims)
      product *= ranges[d];
    return product;
  }
};

/// The grid's y and z dimensions hold row tiles and the batch.
constexpr int64_t kMaxGridYZ = 65535;
/// Static shared memory per block.
constexpr int64_t kMaxSharedBytes = 48 * 1024;

std::optional<GemmView> matchGemm(linalg::LinalgOp op, int64_t tile) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 0)
    return std::nullopt;
  auto isMultiplyAdd = [](Operation *elementwise, Operation *reduce) {
    return isa<arith::MulFOp>(elementwise) && isa<arith::AddFOp>(reduce);
  };
  if (!linalg::detail::isContractionBody(*op.getBlock(), isMultiplyAdd))
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands())
    if (!isa<MemRefType>(operand.get().getType()))
      return std::nullopt;

  GemmView view;
  view.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(view.ranges, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap outMap = maps[2];
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() == 0)
    return std::nullopt;
  // The output is indexed by exactly the parallel dimensions.
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [dim, iterator] : llvm::enumerate(iterators)) {
    bool parallel = iterator == utils::IteratorType::parallel;
    if (parallel != outMap.isFunctionOfDim(dim))
      return std::nullopt;
    if (!parallel)
      view.reductionDims.push_back(dim);
  }
  if (view.reductionDims.empty())
    return std::nullopt;

  // `rhs` is the input that reads the innermost output dimension read by one
  // input only: consecutive threads then store consecutive elements of C.
  auto reads = [&](unsigned operand, unsigned dim) { return maps[operand].isFunctionOfDim(dim); };
  SmallVector<unsigned> outDims = llvm::map_to_vector(
      outMap.getResults(), [](AffineExpr e) { return cast<AffineDimExpr>(e).getPosition(); });
  auto innermost = llvm::find_if(llvm::reverse(outDims),
                                 [&](unsigned dim) { return reads(0, dim) != reads(1, dim); });
  if (innermost == outDims.rend())
    return std::nullopt;
  view.rhs = reads(0, *innermost) ? 0 : 1;
  view.lhs = 1 - view.rhs;
  for (unsigned dim : outDims) {
    bool lhs = reads(view.lhs, dim), rhs = reads(view.rhs, dim);
    (lhs == rhs ? view.batchDims : lhs ? view.mDims : view.nDims).push_back(dim);
  }
  if (view.mDims.empty() || view.extent(view.batchDims) > kMaxGridYZ ||
      llvm::divideCeil(view.extent(view.mDims), tile) > kMaxGridYZ)
    return std::nullopt;
  return view;
}

struct TileBuilder {
  OpBuilder &b;
  Location loc;
  linalg::LinalgOp op;
  const GemmView &view;
  int64_t tile;

  Value index(int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); }

  /// `linear` split into indices over `dims` (the last varies fastest). The
  /// first takes the whole quotient: `linear` is in bounds where it is used.
  void delinearize(Value linear, ArrayRef<unsigned> dims, SmallVectorImpl<Value> &iv) {
    if (dims.empty())
      return;
    for (unsigned dim : llvm::reverse(dims.drop_front())) {
      Value size = index(view.ranges[dim]);
      iv[dim] = arith::RemUIOp::create(b, loc, linear, size);
      linear = arith::DivUIOp::create(b, loc, linear, size);
    }
    iv[dims.front()] = linear;
  }

  /// The element of operand `number` at iteration `iv` (dimensions the
  /// operand does not read may be null), or zero where `inBounds` is false.
  Value loadOrZero(unsigned number, ArrayRef<Value> iv, Value inBounds) {
    Value zero = index(0);
    SmallVector<Value> dims = llvm::map_to_vector(iv, [&](Value v) { return v ? v : zero; });
    Value memref = op->getOperand(number);
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    AffineMap map = op.getIndexingMapsArray()[number];
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{element}, inBounds, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      SmallVector<Value> indices;
      for (unsigned i = 0, e = map.getNumResults(); i < e; ++i)
        indices.push_back(affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), dims));
      scf::YieldOp::create(b, loc, memref::LoadOp::create(b, loc, memref, indices).getResult());
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc,
                           arith::ConstantOp::create(b, loc, b.getZeroAttr(element)).getResult());
    }
    return ifOp.getResult(0);
  }

  /// The output's indices at iteration `iv`.
  SmallVector<Value> outputIndices(ArrayRef<Value> iv) {
    AffineMap map = op.getIndexingMapsArray()[2];
    return llvm::map_to_vector(
        map.getResults(), [&](AffineExpr e) { return iv[cast<AffineDimExpr>(e).getPosition()]; });
  }

  Value allLess(ArrayRef<std::pair<Value, int64_t>> bounds) {
    Value result;
    for (auto [value, bound] : bounds) {
      Value less = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, value, index(bound));
      result = result ? arith::AndIOp::create(b, loc, result, less).getResult() : less;
    }
    return result;
  }

  /// A tile x tile loop over the block's threads; `body` gets (row, column).
  template <typename Body> void threadLoop(Body body) {
    MLIRContext *ctx = b.getContext();
    auto mapping = b.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimY),
                                   gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)});
    auto loop = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(tile), b.getIndexAttr(tile)}, ValueRange{},
        mapping);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar(0), loop.getInductionVar(1));
  }

  /// What one input contributes to a step of k: the output dimensions it
  /// reads alone (extent `extent`, this block's from `base`), how many of
  /// them each thread copies, and the shared tile it copies them to.
  struct Slice {
    unsigned operand;
    ArrayRef<unsigned> dims;
    int64_t extent;
    Value base;
    int64_t each;
    Value buffer;
    /// The tile is [k, position] (rhs) rather than [position, k] (lhs).
    bool kFirst;
  };

  /// One thread's share of a step: the elements at k = depthBase + kOffset
  /// and at positions position + tile * e (e < slice.each) of the block's
  /// slice, zero outside the operand. Consecutive threads read consecutive k
  /// of the lhs and consecutive positions of the rhs.
  void stageTile(const Slice &slice, Value position, Value kOffset, Value depthBase, int64_t depth,
                 ArrayRef<Value> blockIv) {
    Value k = arith::AddIOp::create(b, loc, depthBase, kOffset);
    SmallVector<Value> iv(blockIv);
    delinearize(k, view.reductionDims, iv);
    for (int64_t e = 0; e < slice.each; ++e) {
      Value tilePosition = plus(position, tile * e);
      Value global = arith::AddIOp::create(b, loc, slice.base, tilePosition);
      delinearize(global, slice.dims, iv);
      Value element = loadOrZero(slice.operand, iv, allLess({{global, slice.extent}, {k, depth}}));
      SmallVector<Value> at = {tilePosition, kOffset};
      if (slice.kFirst)
        std::swap(at[0], at[1]);
      memref::StoreOp::create(b, loc, element, slice.buffer, at);
    }
  }

  Value plus(Value value, int64_t offset) {
    return offset ? arith::AddIOp::create(b, loc, value, index(offset)).getResult() : value;
  }

  /// Multiplies and adds through the contraction's own body; `contract`
  /// lets them fuse into one FMA, as cuBLAS and the CPU code do (without it
  /// NVPTX emits mul.rn and add.rn).
  Value multiplyAdd(Value lhs, Value rhs, Value acc) {
    Block &body = *op.getBlock();
    IRMapping args;
    args.map(body.getArgument(view.lhs), lhs);
    args.map(body.getArgument(view.rhs), rhs);
    args.map(body.getArgument(2), acc);
    auto contract = arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::contract);
    for (Operation &bodyOp : body.without_terminator()) {
      Operation *clone = b.clone(bodyOp, args);
      if (auto fastMath = dyn_cast<arith::ArithFastMathInterface>(clone))
        clone->setAttr(fastMath.getFastMathAttrName(), contract);
    }
    return args.lookup(body.getTerminator()->getOperand(0));
  }

  void build(Attribute memorySpace, int64_t threadTile, int64_t minBlocks) {
    MLIRContext *ctx = b.getContext();
    int64_t rows = view.extent(view.mDims), columns = view.extent(view.nDims);
    int64_t depth = view.extent(view.reductionDims), batch = view.extent(view.batchDims);
    // Each thread computes rowsEach x columnsEach elements of C, `tile` apart
    // (so that a warp's threads read neighbouring words of the tiles): more
    // work per element staged in shared memory, no more than C needs, and
    // smaller while that leaves fewer than minBlocks blocks to spread over
    // the GPU's multiprocessors.
    int64_t rowsEach = std::clamp<int64_t>(llvm::divideCeil(rows, tile), 1, threadTile);
    int64_t columnsEach = std::clamp<int64_t>(llvm::divideCeil(columns, tile), 1, threadTile);
    auto blockCount = [&]() -> int64_t {
      return batch * llvm::divideCeil(rows, tile * rowsEach) *
             llvm::divideCeil(columns, tile * columnsEach);
    };
    int64_t elementBytes = llvm::divideCeil(
        cast<MemRefType>(op.getDpsInits()[0].getType()).getElementTypeBitWidth(), 8);
    auto sharedBytes = [&] { return tile * tile * (rowsEach + columnsEach) * elementBytes; };
    while ((blockCount() < minBlocks || sharedBytes() > kMaxSharedBytes) &&
           (rowsEach > 1 || columnsEach > 1)) {
      int64_t &larger = rowsEach >= columnsEach ? rowsEach : columnsEach;
      larger = llvm::divideCeil(larger, 2);
    }
    int64_t blockRows = tile * rowsEach, blockColumns = tile * columnsEach;
    auto mapping = b.getArrayAttr({gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ),
                                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY),
                                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
    auto blocks = scf::ForallOp::create(
        b, loc,
        ArrayRef<OpFoldResult>{b.getIndexAttr(batch),
                               b.getIndexAttr(llvm::divideCeil(rows, blockRows)),
                               b.getIndexAttr(llvm::divideCeil(columns, blockColumns))},
        ValueRange{}, mapping);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(blocks.getBody()->getTerminator());

    SmallVector<Value> blockIv(view.ranges.size());
    delinearize(blocks.getInductionVar(0), view.batchDims, blockIv);
    Value rowBase = arith::MulIOp::create(b, loc, blocks.getInductionVar(1), index(blockRows));
    Value columnBase =
        arith::MulIOp::create(b, loc, blocks.getInductionVar(2), index(blockColumns));

    // Each tile holds its operand's type (bf16 or f16 operands stay narrow
    // in shared memory; the body widens them as it multiplies).
    auto elementOf = [&](unsigned operand) {
      return cast<MemRefType>(op->getOperand(operand).getType()).getElementType();
    };
    auto sharedType = [&](ArrayRef<int64_t> shape, Type element) {
      return MemRefType::get(shape, element, AffineMap(), memorySpace);
    };
    Value lhsTile =
        memref::AllocOp::create(b, loc, sharedType({blockRows, tile}, elementOf(view.lhs)));
    Value rhsTile =
        memref::AllocOp::create(b, loc, sharedType({tile, blockColumns}, elementOf(view.rhs)));
    // Indexed by the thread first: each thread's sums are its own, which
    // mithril-gpu-map-forall turns into registers.
    Value accTile = memref::AllocOp::create(
        b, loc, sharedType({tile, tile, rowsEach, columnsEach}, elementOf(2)));

    // Element (i, j) of thread (row, column): its iteration and whether it
    // lies inside C.
    auto outputIv = [&](Value row, Value column, int64_t i, int64_t j, SmallVector<Value> &iv,
                        Value &inBounds) {
      iv = blockIv;
      Value m = arith::AddIOp::create(b, loc, rowBase, plus(row, tile * i));
      Value n = arith::AddIOp::create(b, loc, columnBase, plus(column, tile * j));
      delinearize(m, view.mDims, iv);
      delinearize(n, view.nDims, iv);
      inBounds = allLess({{m, rows}, {n, columns}});
    };
    auto accIndices = [&](Value row, Value column, int64_t i, int64_t j) {
      return SmallVector<Value>{row, column, index(i), index(j)};
    };
    // A thread loop over the thread's own elements of C: `body` gets the
    // element's place in the sums, its iteration and whether it lies in C.
    auto ownElementsLoop = [&](auto body) {
      threadLoop([&](Value row, Value column) {
        for (int64_t i = 0; i < rowsEach; ++i)
          for (int64_t j = 0; j < columnsEach; ++j) {
            SmallVector<Value> iv;
            Value inBounds;
            outputIv(row, column, i, j, iv, inBounds);
            body(accIndices(row, column, i, j), iv, inBounds);
          }
      });
    };

    ownElementsLoop([&](ArrayRef<Value> acc, ArrayRef<Value> iv, Value inBounds) {
      Value init = loadOrZero(op.getNumDpsInputs(), iv, inBounds);
      memref::StoreOp::create(b, loc, init, accTile, acc);
    });

    auto steps = scf::ForOp::create(b, loc, index(0), index(depth), index(tile));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(steps.getBody()->getTerminator());
      Value depthBase = steps.getInductionVar();
      threadLoop([&](Value row, Value column) {
        // The lhs tile is [m, k], the rhs tile [k, n].
        Slice lhs{view.lhs, view.mDims, rows, rowBase, rowsEach, lhsTile, /*kFirst=*/false};
        stageTile(lhs, /*position=*/row, /*kOffset=*/column, depthBase, depth, blockIv);
        Slice rhs{view.rhs,       view.nDims, columns, columnBase, columnsEach, rhsTile,
                  /*kFirst=*/true};
        stageTile(rhs, /*position=*/column, /*kOffset=*/row, depthBase, depth, blockIv);
      });
      threadLoop([&](Value row, Value column) {
        SmallVector<Value> sums;
        for (int64_t i = 0; i < rowsEach; ++i)
          for (int64_t j = 0; j < columnsEach; ++j)
            sums.push_back(memref::LoadOp::create(b, loc, accTile, accIndices(row, column, i, j)));
        auto inner = scf::ForOp::create(b, loc, index(0), index(tile), index(1), sums);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(inner.getBody());
          Value kk = inner.getInductionVar();
          SmallVector<Value> lhs, rhs, next;
          for (int64_t i = 0; i < rowsEach; ++i)
            lhs.push_back(
                memref::LoadOp::create(b, loc, lhsTile, ValueRange{plus(row, tile * i), kk}));
          for (int64_t j = 0; j < columnsEach; ++j)
            rhs.push_back(
                memref::LoadOp::create(b, loc, rhsTile, ValueRange{kk, plus(column, tile * j)}));
          for (int64_t i = 0; i < rowsEach; ++i)
            for (int64_t j = 0; j < columnsEach; ++j)
              next.push_back(
                  multiplyAdd(lhs[i], rhs[j], inner.getRegionIterArg(i * columnsEach + j)));
          scf::YieldOp::create(b, loc, next);
        }
        for (int64_t i = 0; i < rowsEach; ++i)
          for (int64_t j = 0; j < columnsEach; ++j)
            memref::StoreOp::create(b, loc, inner.getResult(i * columnsEach + j), accTile,
                                    accIndices(row, column, i, j));
      });
    }

    ownElementsLoop([&](ArrayRef<Value> acc, ArrayRef<Value> iv, Value inBounds) {
      auto ifOp = scf::IfOp::create(b, loc, inBounds, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value sum = memref::LoadOp::create(b, loc, accTile, acc);
      memref::StoreOp::create(b, loc, sum, op.getDpsInits()[0], outputIndices(iv));
    });
    for (Value buffer : {lhsTile, rhsTile, accTile})
      memref::DeallocOp::create(b, loc, buffer);
  }
};

struct GpuTileContractionsPass
    : public mithril::impl::MithrilGpuTileContractionsBase<GpuTileContractionsPass> {
  using MithrilGpuTileContractionsBase::MithrilGpuTileContractionsBase;

  void runOnOperation() override {
    int64_t tile = tileSize;
    if (threadTile < 1 || threadTile > 8) {
      getOperation()->emitError("mithril-gpu-tile-contractions: thread-tile ")
          << threadTile.getValue() << " is not 1 to 8";
      return signalPassFailure();
    }
    if (tile < 1 || tile * tile > 1024) {
      getOperation()->emitError("mithril-gpu-tile-contractions: tile-size ")
          << tile << " gives " << tile * tile << " threads per block; a GPU block holds 1 to 1024";
      return signalPassFailure();
    }
    // Matched first, rewritten after: the walk must not see its own output.
    SmallVector<std::pair<linalg::LinalgOp, GemmView>, 4> contractions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<GemmView> view = matchGemm(op, tile))
        contractions.push_back({op, std::move(*view)});
    });
    Attribute space;
    if (workgroupMemory)
      space = gpu::AddressSpaceAttr::get(&getContext(), gpu::AddressSpace::Workgroup);
    for (auto &[op, view] : contractions) {
      OpBuilder b(op);
      TileBuilder{b, op.getLoc(), op, view, tile}.build(space, threadTile, minBlocks);
      op->erase();
    }
  }
};

} // namespace
