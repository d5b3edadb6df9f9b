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
// Contractions of f16 or bf16 operands with float32 sums run on tensor cores
// instead (sm_80 and later): warps of a 128-thread block each own 32x32 of
// a 64x64 tile of C as 2x4 products of `mma.sync.m16n8k16`; the threads stage
// 32-deep slices of both operands in shared memory (B as [n][k]), and each
// lane loads its fragments where upstream's nvgpu layout map
// (getLaneIdAndValueIdToOperandCoord) puts them.
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
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/NVGPU/Utils/MMAUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

/// The tensor-core schedule: a block of 2x2 warps, each computing 32x32 of
/// C as 2x4 products of m16n8k16, over 32-deep shared slices of A and B
/// whose rows are padded by 8 elements (16 bytes), so that the lanes of a
/// warp read their fragments from 32 different banks.
constexpr int64_t kWarpSize = 32;
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int64_t kWarpsDown = 2, kWarpsAcross = 2;
constexpr int64_t kMmaTilesDown = 2, kMmaTilesAcross = 4;
constexpr int64_t kWarpRows = kMmaTilesDown * kMmaM, kWarpColumns = kMmaTilesAcross * kMmaN;
constexpr int64_t kMmaBlockRows = kWarpsDown * kWarpRows;
constexpr int64_t kMmaBlockColumns = kWarpsAcross * kWarpColumns;
constexpr int64_t kMmaThreads = kWarpsDown * kWarpsAcross * kWarpSize;
constexpr int64_t kMmaDepth = 32, kMmaRowPad = 8;
/// Registers of a lane's fragments (m16n8k16, 16-bit operands): A holds 4
/// pairs, B 2 pairs, C 4 float32 sums (2 pairs).
constexpr int64_t kARegisters = 4, kBRegisters = 2, kCValues = 4;

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

  /// A loop over the block's threads, `sizes` of them along (y,) x; `body`
  /// gets their ids.
  template <typename Body> void threadLoop(ArrayRef<int64_t> sizes, Body body) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Attribute> mapping;
    if (sizes.size() == 2)
      mapping.push_back(gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimY));
    mapping.push_back(gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX));
    auto loop = scf::ForallOp::create(b, loc, getAsIndexOpFoldResult(ctx, sizes), ValueRange{},
                                      b.getArrayAttr(mapping));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVars());
  }

  /// A tile x tile loop over the block's threads; `body` gets (row, column).
  template <typename Body> void threadLoop(Body body) {
    threadLoop({tile, tile}, [&](ValueRange ids) { body(ids[0], ids[1]); });
  }

  /// Stores `sum` (at `at` of `sums`) into the output at iteration `iv`
  /// where `inBounds`.
  void storeInside(Value sums, ArrayRef<Value> at, ArrayRef<Value> iv, Value inBounds) {
    auto ifOp = scf::IfOp::create(b, loc, inBounds, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    Value sum = memref::LoadOp::create(b, loc, sums, at);
    memref::StoreOp::create(b, loc, sum, op.getDpsInits()[0], outputIndices(iv));
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

  Type elementOf(unsigned operand) {
    return cast<MemRefType>(op->getOperand(operand).getType()).getElementType();
  }

  /// The loop over the batch and the blocks of blockRows x blockColumns of
  /// C, mapped to the grid's z, y and x, with the builder left inside it: a
  /// block's batch indices (in blockIv) and its first row and column.
  void blockLoop(int64_t blockRows, int64_t blockColumns, SmallVector<Value> &blockIv,
                 Value &rowBase, Value &columnBase) {
    MLIRContext *ctx = b.getContext();
    int64_t rows = view.extent(view.mDims), columns = view.extent(view.nDims);
    auto mapping = b.getArrayAttr({gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ),
                                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY),
                                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
    auto blocks = scf::ForallOp::create(
        b, loc,
        ArrayRef<OpFoldResult>{b.getIndexAttr(view.extent(view.batchDims)),
                               b.getIndexAttr(llvm::divideCeil(rows, blockRows)),
                               b.getIndexAttr(llvm::divideCeil(columns, blockColumns))},
        ValueRange{}, mapping);
    b.setInsertionPoint(blocks.getBody()->getTerminator());
    blockIv.assign(view.ranges.size(), Value());
    delinearize(blocks.getInductionVar(0), view.batchDims, blockIv);
    rowBase = arith::MulIOp::create(b, loc, blocks.getInductionVar(1), index(blockRows));
    columnBase = arith::MulIOp::create(b, loc, blocks.getInductionVar(2), index(blockColumns));
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
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> blockIv;
    Value rowBase, columnBase;
    blockLoop(blockRows, blockColumns, blockIv, rowBase, columnBase);

    // Each tile holds its operand's type (bf16 or f16 operands stay narrow
    // in shared memory; the body widens them as it multiplies).
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
      storeInside(accTile, acc, iv, inBounds);
    });
    for (Value buffer : {lhsTile, rhsTile, accTile})
      memref::DeallocOp::create(b, loc, buffer);
  }
};

/// Whether the contraction multiplies f16 or bf16 operands, widened to
/// float32, into float32 sums: what mma.sync m16n8k16 computes.
bool isTensorCoreContraction(linalg::LinalgOp op) {
  auto element = [&](unsigned i) {
    return cast<MemRefType>(op->getOperand(i).getType()).getElementType();
  };
  Type lhs = element(0), rhs = element(1);
  if (lhs != rhs || !(lhs.isF16() || lhs.isBF16()) || !element(2).isF32())
    return false;
  return llvm::all_of(op.getBlock()->without_terminator(), [](Operation &bodyOp) {
    return isa<arith::ExtFOp, arith::MulFOp, arith::AddFOp>(bodyOp);
  });
}

/// The tensor-core schedule of a contraction (see the file comment). Each
/// thread's sums live in a buffer indexed by the thread first (registers on
/// the GPU). On the host (no workgroup memory) the lanes' fragments go to
/// memory instead and each warp's mma.sync is emulated by loops that find
/// the fragments by the PTX ISA's figures for m16n8k16, written out apart
/// from upstream's map: the host run checks where the lanes load and store
/// as well as the tiles.
struct MmaTileBuilder : TileBuilder {
  /// (lane, value) -> (row, column) of A (16x16), B (8x16, as [n][k]) and
  /// C (16x8).
  AffineMap layoutA, layoutB, layoutC;

  LogicalResult buildLayouts() {
    // bf16 fragments are laid out as f16's (the PTX ISA has one figure for
    // both 16-bit types); upstream's map knows f16 only.
    Type half = b.getF16Type();
    auto layout = [&](int64_t rows, int64_t columns, Type element, nvgpu::MatMulOperandRole role,
                      AffineMap &map) {
      FailureOr<AffineMap> result = nvgpu::getLaneIdAndValueIdToOperandCoord(
          b, loc, nvgpu::WarpMatrixInfo{VectorType::get({rows, columns}, element), role});
      if (succeeded(result))
        map = *result;
      return result;
    };
    if (failed(layout(kMmaM, kMmaK, half, nvgpu::MatMulOperandRole::A, layoutA)) ||
        failed(layout(kMmaN, kMmaK, half, nvgpu::MatMulOperandRole::B, layoutB)) ||
        failed(layout(kMmaM, kMmaN, b.getF32Type(), nvgpu::MatMulOperandRole::C, layoutC)))
      return op.emitOpError("has no mma.sync fragment layout for its operands");
    return success();
  }

  Value add(Value lhs, Value rhs) { return arith::AddIOp::create(b, loc, lhs, rhs); }
  Value times(Value value, int64_t factor) {
    return arith::MulIOp::create(b, loc, value, index(factor));
  }
  Value apply(AffineExpr expr, ValueRange operands) {
    auto map = AffineMap::get(operands.size(), 0, expr);
    return affine::AffineApplyOp::create(b, loc, map, operands);
  }
  /// Coordinate `result` (0: row, 1: column) of value `value` of a lane's
  /// fragment.
  Value coordinate(AffineMap layout, unsigned result, Value lane, int64_t value) {
    return affine::AffineApplyOp::create(b, loc, layout.getSubMap({result}),
                                         ValueRange{lane, index(value)});
  }

  /// A loop over `count` threads of the block along x; body(thread).
  template <typename Body> void threadsLoop(int64_t count, Body body) {
    threadLoop({count}, [&](ValueRange ids) { body(ids[0]); });
  }

  /// A thread's warp (as the row and column of its 32x32 of the block's C)
  /// and lane.
  struct Lane {
    Value rowBase, columnBase, lane;
  };
  Lane laneOf(Value thread) {
    Value warp = arith::DivUIOp::create(b, loc, thread, index(kWarpSize));
    Value lane = arith::RemUIOp::create(b, loc, thread, index(kWarpSize));
    Value down = arith::DivUIOp::create(b, loc, warp, index(kWarpsAcross));
    Value across = arith::RemUIOp::create(b, loc, warp, index(kWarpsAcross));
    return {times(down, kWarpRows), times(across, kWarpColumns), lane};
  }

  /// Thread `thread`'s share of a kMmaDepth-deep slice of one operand: the
  /// block's positions along m or n (from `base`) at k from `depthBase`,
  /// copied to tile[position][k], zero outside the operand.
  /// Consecutive threads read consecutive elements of the operand's
  /// innermost dimension where it is k or the position.
  void stageSlice(unsigned operand, ArrayRef<unsigned> dims, int64_t extent, Value base, Value tile,
                  Value thread, Value depthBase, int64_t depth, ArrayRef<Value> blockIv) {
    AffineExpr innermost = op.getIndexingMapsArray()[operand].getResults().back();
    bool kInnermost = llvm::any_of(view.reductionDims,
                                   [&](unsigned dim) { return innermost.isFunctionOfDim(dim); });
    int64_t positions = kMmaBlockRows;
    for (int64_t e = 0; e < positions * kMmaDepth / kMmaThreads; ++e) {
      Value linear = plus(thread, e * kMmaThreads);
      int64_t inner = kInnermost ? kMmaDepth : positions;
      Value outer = arith::DivUIOp::create(b, loc, linear, index(inner));
      Value within = arith::RemUIOp::create(b, loc, linear, index(inner));
      Value position = kInnermost ? outer : within, kOffset = kInnermost ? within : outer;
      Value k = add(depthBase, kOffset);
      SmallVector<Value> iv(blockIv);
      delinearize(k, view.reductionDims, iv);
      Value global = add(base, position);
      delinearize(global, dims, iv);
      Value element = loadOrZero(operand, iv, allLess({{global, extent}, {k, depth}}));
      memref::StoreOp::create(b, loc, element, tile, ValueRange{position, kOffset});
    }
  }

  /// A lane's fragment of a 16-bit operand from a shared slice laid out
  /// [position][k]: `registers` pairs of neighbouring k (the layout puts
  /// value 2r + 1 next to value 2r), as mma.sync takes them.
  Value loadFragment(Value tile, AffineMap layout, int64_t registers, Value lane,
                     Value positionBase, int64_t kBase) {
    Type element = cast<MemRefType>(tile.getType()).getElementType();
    auto type = VectorType::get({registers, 2}, element);
    Value fragment = arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
    for (int64_t r = 0; r < registers; ++r) {
      Value position = add(positionBase, coordinate(layout, 0, lane, 2 * r));
      Value k = plus(coordinate(layout, 1, lane, 2 * r), kBase);
      Value pair = vector::LoadOp::create(b, loc, VectorType::get({2}, element), tile,
                                          ValueRange{position, k});
      fragment = vector::InsertOp::create(b, loc, pair, fragment, ArrayRef<int64_t>{r});
    }
    return fragment;
  }

  /// Emulates warp `warp`'s mma.sync for its product (i, j) on the host:
  /// D = A B + C from the fragments its lanes stored, located by the PTX
  /// ISA's m16n8k16 figures (groupID = lane / 4, threadID_in_group = lane % 4):
  ///   A[row][k]: lane (row % 8) * 4 + (k % 8) / 2, value (k / 8) * 4 + (row / 8) * 2 + k % 2
  ///   B[k][n]:   lane n * 4 + (k % 8) / 2,         value (k / 8) * 2 + k % 2
  ///   C[row][n]: lane (row % 8) * 4 + n / 2,       value (row / 8) * 2 + n % 2
  void emulateMma(Value warp, int64_t i, int64_t j, Value fragmentsA, Value fragmentsB,
                  Value sums) {
    AffineExpr x, y;
    bindDims(b.getContext(), x, y);
    Value firstThread = times(warp, kWarpSize);
    auto rows = scf::ForOp::create(b, loc, index(0), index(kMmaM), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    auto columns = scf::ForOp::create(b, loc, index(0), index(kMmaN), index(1));
    b.setInsertionPointToStart(columns.getBody());
    Value column = columns.getInductionVar();
    SmallVector<Value> cAt = {add(firstThread, apply((x % 8) * 4 + y.floorDiv(2), {row, column})),
                              index(i), index(j), apply(x.floorDiv(8) * 2 + y % 2, {row, column})};
    Value sum = memref::LoadOp::create(b, loc, sums, cAt);
    auto depth = scf::ForOp::create(b, loc, index(0), index(kMmaK), index(1), ValueRange{sum});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(depth.getBody());
      Value k = depth.getInductionVar();
      Value a = memref::LoadOp::create(
          b, loc, fragmentsA,
          ValueRange{add(firstThread, apply((x % 8) * 4 + (y % 8).floorDiv(2), {row, k})), index(i),
                     apply(y.floorDiv(8) * 4 + x.floorDiv(8) * 2 + y % 2, {row, k})});
      Value bValue = memref::LoadOp::create(
          b, loc, fragmentsB,
          ValueRange{add(firstThread, apply(x * 4 + (y % 8).floorDiv(2), {column, k})), index(j),
                     apply(y.floorDiv(8) * 2 + y % 2, {column, k})});
      scf::YieldOp::create(b, loc, multiplyAdd(a, bValue, depth.getRegionIterArg(0)));
    }
    memref::StoreOp::create(b, loc, depth.getResult(0), sums, cAt);
  }

  void build(Attribute memorySpace) {
    bool onDevice = memorySpace != nullptr;
    int64_t rows = view.extent(view.mDims), columns = view.extent(view.nDims);
    int64_t depth = view.extent(view.reductionDims);
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> blockIv;
    Value rowBase, columnBase;
    blockLoop(kMmaBlockRows, kMmaBlockColumns, blockIv, rowBase, columnBase);
    auto buffer = [&](ArrayRef<int64_t> shape, Type element, Attribute space) -> Value {
      return memref::AllocOp::create(b, loc, MemRefType::get(shape, element, AffineMap(), space));
    };
    // Slices of A as [m][k] and of B as [n][k]: each lane's pairs of k are
    // neighbours in both.
    static_assert(kMmaBlockRows == kMmaBlockColumns, "both slices have the block's extent");
    Value lhsTile =
        buffer({kMmaBlockRows, kMmaDepth + kMmaRowPad}, elementOf(view.lhs), memorySpace);
    Value rhsTile =
        buffer({kMmaBlockColumns, kMmaDepth + kMmaRowPad}, elementOf(view.rhs), memorySpace);
    Value sums = buffer({kMmaThreads, kMmaTilesDown, kMmaTilesAcross, kCValues}, b.getF32Type(),
                        memorySpace);

    // Sum (i, j, v) of a thread: its iteration and whether it lies in C.
    auto sumIv = [&](const Lane &lane, int64_t i, int64_t j, int64_t v, SmallVector<Value> &iv,
                     Value &inBounds) {
      Value m =
          add(add(rowBase, lane.rowBase), plus(coordinate(layoutC, 0, lane.lane, v), i * kMmaM));
      Value n = add(add(columnBase, lane.columnBase),
                    plus(coordinate(layoutC, 1, lane.lane, v), j * kMmaN));
      iv = blockIv;
      delinearize(m, view.mDims, iv);
      delinearize(n, view.nDims, iv);
      inBounds = allLess({{m, rows}, {n, columns}});
    };
    auto forEachSum = [&](auto body) {
      threadsLoop(kMmaThreads, [&](Value thread) {
        Lane lane = laneOf(thread);
        for (int64_t i = 0; i < kMmaTilesDown; ++i)
          for (int64_t j = 0; j < kMmaTilesAcross; ++j)
            for (int64_t v = 0; v < kCValues; ++v) {
              SmallVector<Value> iv;
              Value inBounds;
              sumIv(lane, i, j, v, iv, inBounds);
              body(SmallVector<Value>{thread, index(i), index(j), index(v)}, iv, inBounds);
            }
      });
    };

    forEachSum([&](ArrayRef<Value> at, ArrayRef<Value> iv, Value inBounds) {
      Value init = loadOrZero(op.getNumDpsInputs(), iv, inBounds);
      memref::StoreOp::create(b, loc, init, sums, at);
    });

    // The host's fragments, per thread.
    Value fragmentsA, fragmentsB;
    if (!onDevice) {
      fragmentsA = buffer({kMmaThreads, kMmaTilesDown, 2 * kARegisters}, elementOf(view.lhs), {});
      fragmentsB = buffer({kMmaThreads, kMmaTilesAcross, 2 * kBRegisters}, elementOf(view.rhs), {});
    }

    auto steps = scf::ForOp::create(b, loc, index(0), index(depth), index(kMmaDepth));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(steps.getBody()->getTerminator());
      Value depthBase = steps.getInductionVar();
      threadsLoop(kMmaThreads, [&](Value thread) {
        stageSlice(view.lhs, view.mDims, rows, rowBase, lhsTile, thread, depthBase, depth, blockIv);
        stageSlice(view.rhs, view.nDims, columns, columnBase, rhsTile, thread, depthBase, depth,
                   blockIv);
      });
      auto fragmentA = [&](const Lane &lane, int64_t i, int64_t kk) {
        return loadFragment(lhsTile, layoutA, kARegisters, lane.lane, plus(lane.rowBase, i * kMmaM),
                            kk);
      };
      auto fragmentB = [&](const Lane &lane, int64_t j, int64_t kk) {
        return loadFragment(rhsTile, layoutB, kBRegisters, lane.lane,
                            plus(lane.columnBase, j * kMmaN), kk);
      };
      if (onDevice) {
        threadsLoop(kMmaThreads, [&](Value thread) {
          Lane lane = laneOf(thread);
          auto accType = VectorType::get({2, 2}, b.getF32Type());
          SmallVector<Value> acc;
          for (int64_t i = 0; i < kMmaTilesDown; ++i)
            for (int64_t j = 0; j < kMmaTilesAcross; ++j) {
              SmallVector<Value> values;
              for (int64_t v = 0; v < kCValues; ++v)
                values.push_back(memref::LoadOp::create(
                    b, loc, sums, ValueRange{thread, index(i), index(j), index(v)}));
              acc.push_back(vector::FromElementsOp::create(b, loc, accType, values));
            }
          for (int64_t kk = 0; kk < kMmaDepth; kk += kMmaK) {
            SmallVector<Value> as, bs;
            for (int64_t i = 0; i < kMmaTilesDown; ++i)
              as.push_back(fragmentA(lane, i, kk));
            for (int64_t j = 0; j < kMmaTilesAcross; ++j)
              bs.push_back(fragmentB(lane, j, kk));
            for (int64_t i = 0; i < kMmaTilesDown; ++i)
              for (int64_t j = 0; j < kMmaTilesAcross; ++j) {
                Value &sum = acc[i * kMmaTilesAcross + j];
                sum = nvgpu::MmaSyncOp::create(b, loc, as[i], bs[j], sum,
                                               ArrayRef<int64_t>{kMmaM, kMmaN, kMmaK});
              }
          }
          for (int64_t i = 0; i < kMmaTilesDown; ++i)
            for (int64_t j = 0; j < kMmaTilesAcross; ++j)
              for (int64_t v = 0; v < kCValues; ++v) {
                Value value = vector::ExtractOp::create(b, loc, acc[i * kMmaTilesAcross + j],
                                                        ArrayRef<int64_t>{v / 2, v % 2});
                memref::StoreOp::create(b, loc, value, sums,
                                        ValueRange{thread, index(i), index(j), index(v)});
              }
        });
      } else {
        for (int64_t kk = 0; kk < kMmaDepth; kk += kMmaK) {
          threadsLoop(kMmaThreads, [&](Value thread) {
            Lane lane = laneOf(thread);
            auto spill = [&](Value fragment, Value into, int64_t tile, int64_t registers) {
              for (int64_t v = 0; v < 2 * registers; ++v)
                memref::StoreOp::create(
                    b, loc,
                    vector::ExtractOp::create(b, loc, fragment, ArrayRef<int64_t>{v / 2, v % 2}),
                    into, ValueRange{thread, index(tile), index(v)});
            };
            for (int64_t i = 0; i < kMmaTilesDown; ++i)
              spill(fragmentA(lane, i, kk), fragmentsA, i, kARegisters);
            for (int64_t j = 0; j < kMmaTilesAcross; ++j)
              spill(fragmentB(lane, j, kk), fragmentsB, j, kBRegisters);
          });
          threadsLoop(kWarpsDown * kWarpsAcross, [&](Value warp) {
            for (int64_t i = 0; i < kMmaTilesDown; ++i)
              for (int64_t j = 0; j < kMmaTilesAcross; ++j)
                emulateMma(warp, i, j, fragmentsA, fragmentsB, sums);
          });
        }
      }
    }

    forEachSum([&](ArrayRef<Value> at, ArrayRef<Value> iv, Value inBounds) {
      storeInside(sums, at, iv, inBounds);
    });
    for (Value used : {lhsTile, rhsTile, sums, fragmentsA, fragmentsB})
      if (used)
        memref::DeallocOp::create(b, loc, used);
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
      if (tensorCores && isTensorCoreContraction(op)) {
        MmaTileBuilder mma{{b, op.getLoc(), op, view, tile}, {}, {}, {}};
        if (failed(mma.buildLayouts()))
          return signalPassFailure();
        mma.build(space);
      } else {
        TileBuilder{b, op.getLoc(), op, view, tile}.build(space, threadTile, minBlocks);
      }
      op->erase();
    }
  }
};

} // namespace
