//===- GpuMapForall.cpp - block and thread loops to gpu.launch ------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/GPU/TransformOps/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUMAPFORALL
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// The 0-based grid or block dimension a loop dimension maps to.
std::optional<unsigned> mappedDimension(Attribute attr, bool blocks) {
  std::optional<gpu::MappingId> id;
  if (auto block = dyn_cast<gpu::GPUBlockMappingAttr>(attr); block && blocks)
    id = block.getBlock();
  if (auto thread = dyn_cast<gpu::GPUThreadMappingAttr>(attr); thread && !blocks)
    id = thread.getThread();
  if (!id || *id > gpu::MappingId::DimZ)
    return std::nullopt;
  return static_cast<unsigned>(*id);
}

/// The loop's static trip counts by grid/block dimension (1 where unmapped),
/// or failure with a diagnostic.
FailureOr<std::array<int64_t, 3>> mappedSizes(scf::ForallOp loop, bool blocks) {
  std::array<int64_t, 3> sizes = {1, 1, 1};
  ArrayRef<int64_t> lower = loop.getStaticLowerBound(), upper = loop.getStaticUpperBound(),
                    step = loop.getStaticStep();
  if (!loop.getMapping() || llvm::any_of(upper, ShapedType::isDynamic))
    return loop.emitOpError("needs static bounds and a GPU mapping to become a kernel");
  for (auto [i, attr] : llvm::enumerate(*loop.getMapping())) {
    std::optional<unsigned> dim = mappedDimension(attr, blocks);
    if (!dim || lower[i] != 0 || step[i] != 1)
      return loop.emitOpError("dimension ")
             << i << " needs bounds from 0 with step 1 and a " << (blocks ? "block" : "thread")
             << " x, y or z mapping, not " << attr;
    sizes[*dim] = upper[i];
  }
  return sizes;
}

/// How many leading indices of every load and store of `alloc` are the
/// thread ids themselves, the same ones each time and covering every block
/// dimension with more than one thread; 0 where that is not so. Such a buffer
/// holds each thread's own data.
unsigned threadOwnedPrefix(memref::AllocOp alloc, ArrayRef<Value> threadIds,
                           ArrayRef<int64_t> blockSizes) {
  std::optional<SmallVector<Value>> prefix;
  for (Operation *user : alloc->getUsers()) {
    ValueRange indices;
    if (auto load = dyn_cast<memref::LoadOp>(user))
      indices = load.getIndices();
    else if (auto store = dyn_cast<memref::StoreOp>(user); store && store.getMemRef() == alloc)
      indices = store.getIndices();
    else
      return 0;
    SmallVector<Value> ids;
    for (Value index : indices) {
      if (!llvm::is_contained(threadIds, index))
        break;
      ids.push_back(index);
    }
    if (prefix && *prefix != ids)
      return 0;
    prefix = std::move(ids);
  }
  if (!prefix || prefix->empty() ||
      llvm::SmallPtrSet<Value, 3>(prefix->begin(), prefix->end()).size() != prefix->size())
    return 0;
  for (unsigned d = 0; d < 3; ++d)
    if (blockSizes[d] > 1 && !llvm::is_contained(*prefix, threadIds[d]))
      return 0;
  return prefix->size();
}

/// Moves a thread-owned buffer into private memory: each thread keeps the
/// elements after the `owned` leading (thread id) indices.
void privatize(gpu::LaunchOp launch, memref::AllocOp alloc, unsigned owned) {
  MemRefType type = alloc.getType();
  SmallVector<int64_t> shape(type.getShape().drop_front(owned));
  bool scalar = shape.empty();
  if (scalar)
    shape.push_back(1);
  auto privateSpace = gpu::AddressSpaceAttr::get(alloc.getContext(), gpu::AddressSpace::Private);
  auto privateType = MemRefType::get(shape, type.getElementType(), AffineMap(), privateSpace);
  BlockArgument buffer = launch.addPrivateAttribution(privateType, alloc.getLoc());
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
    OpBuilder b(user);
    auto indices = [&](ValueRange all) -> SmallVector<Value> {
      if (scalar)
        return {arith::ConstantIndexOp::create(b, user->getLoc(), 0)};
      return SmallVector<Value>(all.drop_front(owned));
    };
    if (auto load = dyn_cast<memref::LoadOp>(user)) {
      load.replaceAllUsesWith(
          memref::LoadOp::create(b, load.getLoc(), buffer, indices(load.getIndices())).getResult());
    } else {
      auto store = cast<memref::StoreOp>(user);
      memref::StoreOp::create(b, store.getLoc(), store.getValueToStore(), buffer,
                              indices(store.getIndices()));
    }
    user->erase();
  }
  alloc.erase();
}

LogicalResult mapBlockLoop(scf::ForallOp blocks) {
  FailureOr<std::array<int64_t, 3>> grid = mappedSizes(blocks, /*blocks=*/true);
  if (failed(grid))
    return failure();
  SmallVector<scf::ForallOp> threadLoops;
  blocks.getBody()->walk([&](scf::ForallOp loop) { threadLoops.push_back(loop); });
  std::array<int64_t, 3> blockSizes = {1, 1, 1};
  for (scf::ForallOp loop : threadLoops) {
    if (loop->getParentOfType<scf::ForallOp>() != blocks)
      return loop.emitOpError("is a thread loop inside another thread loop");
    FailureOr<std::array<int64_t, 3>> sizes = mappedSizes(loop, /*blocks=*/false);
    if (failed(sizes))
      return failure();
    for (unsigned d = 0; d < 3; ++d)
      blockSizes[d] = std::max(blockSizes[d], (*sizes)[d]);
  }
  if (blockSizes[0] * blockSizes[1] * blockSizes[2] > 1024)
    return blocks.emitOpError("needs ") << blockSizes[0] * blockSizes[1] * blockSizes[2]
                                        << " threads per block; a GPU block holds at most 1024";

  // The launch, with the block loop inside; upstream's mapping (that of
  // transform.gpu.map_forall_to_blocks and map_nested_forall_to_threads)
  // then puts the block loop on the block ids and each thread loop on the
  // thread ids, guarded where it is smaller than the block and followed by a
  // barrier (the next loop reads what this one wrote).
  IRRewriter rewriter(blocks.getContext());
  rewriter.setInsertionPoint(blocks);
  Location loc = blocks.getLoc();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto launch = gpu::LaunchOp::create(rewriter, loc, constant((*grid)[0]), constant((*grid)[1]),
                                      constant((*grid)[2]), constant(blockSizes[0]),
                                      constant(blockSizes[1]), constant(blockSizes[2]));
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  blocks->moveBefore(terminator);
  rewriter.setInsertionPoint(blocks);
  SmallVector<int64_t> gridDims((*grid).begin(), (*grid).end());
  transform::gpu::GpuBlockIdBuilder blockIds(blocks.getContext());
  DiagnosedSilenceableFailure mapped = transform::gpu::mapForallToBlocksImpl(
      rewriter, transform::TransformOpInterface(), blocks, gridDims, blockIds);
  if (!mapped.succeeded())
    return launch.emitOpError("cannot map its block loop onto the grid");
  rewriter.setInsertionPointToStart(&body);
  mapped = transform::gpu::mapNestedForallToThreadsImpl(
      rewriter, std::nullopt, launch, blockSizes, /*warpSize=*/32, /*syncAfterDistribute=*/true);
  if (!mapped.succeeded())
    return launch.emitOpError("cannot map its thread loops onto the block");
  // The mapping reads the ids with gpu.block_id / gpu.thread_id, one per
  // loop: the launch's own ids instead, so that every access of a buffer
  // indexes with the same values (threadOwnedPrefix compares them).
  gpu::KernelDim3 blockIdArgs = launch.getBlockIds(), threadIdArgs = launch.getThreadIds();
  Value ids[3] = {threadIdArgs.x, threadIdArgs.y, threadIdArgs.z};
  Value blockIdValues[3] = {blockIdArgs.x, blockIdArgs.y, blockIdArgs.z};
  SmallVector<Operation *> idOps;
  body.walk([&](Operation *op) {
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      id.replaceAllUsesWith(ids[static_cast<unsigned>(id.getDimension())]);
      idOps.push_back(op);
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      id.replaceAllUsesWith(blockIdValues[static_cast<unsigned>(id.getDimension())]);
      idOps.push_back(op);
    }
  });
  for (Operation *op : idOps)
    op->erase();

  // Buffers in workgroup memory become the kernel's: private memory
  // (registers) where each thread only touches its own elements, shared
  // memory otherwise.
  SmallVector<memref::AllocOp> sharedAllocs;
  body.walk([&](memref::AllocOp alloc) {
    if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(alloc.getType()))
      sharedAllocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : sharedAllocs) {
    if (!alloc.getType().hasStaticShape())
      return alloc.emitOpError("workgroup memory needs a static shape");
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    if (unsigned owned = threadOwnedPrefix(alloc, ids, blockSizes)) {
      privatize(launch, alloc, owned);
      continue;
    }
    BlockArgument shared = launch.addWorkgroupAttribution(alloc.getType(), alloc.getLoc());
    alloc.replaceAllUsesWith(shared);
    alloc.erase();
  }
  return success();
}

struct GpuMapForallPass : public mithril::impl::MithrilGpuMapForallBase<GpuMapForallPass> {
  void runOnOperation() override {
    SmallVector<scf::ForallOp> blockLoops;
    getOperation().walk([&](scf::ForallOp loop) {
      std::optional<ArrayAttr> mapping = loop.getMapping();
      if (mapping && !mapping->empty() && isa<gpu::GPUBlockMappingAttr>((*mapping)[0]) &&
          !loop->getParentOfType<scf::ForallOp>())
        blockLoops.push_back(loop);
    });
    for (scf::ForallOp loop : blockLoops)
      if (failed(mapBlockLoop(loop)))
        return signalPassFailure();
  }
};

} // namespace
