//===- SliceSubsetModels.cpp - slices compared term by term first ---------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/SliceSubsetModels.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SubsetOpInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;

namespace {
/// Whether two slice ops have the same offsets, sizes and strides: the same
/// static values, and the same SSA values where they are dynamic. (Compared
/// as the ops hold them: building the mixed lists makes an attribute of each
/// static value, which was a tenth of the analysis.)
bool sameSlices(OffsetSizeAndStrideOpInterface a, OffsetSizeAndStrideOpInterface b) {
  return a.getStaticOffsets() == b.getStaticOffsets() && a.getStaticSizes() == b.getStaticSizes() &&
         a.getStaticStrides() == b.getStaticStrides() &&
         llvm::equal(a.getOffsets(), b.getOffsets()) && llvm::equal(a.getSizes(), b.getSizes()) &&
         llvm::equal(a.getStrides(), b.getStrides());
}

/// A tensor slice op's subset: its offsets, sizes and strides.
template <typename SliceOp>
struct SliceSubsetModel
    : public SubsetOpInterface::ExternalModel<SliceSubsetModel<SliceOp>, SliceOp> {
  FailureOr<HyperrectangularSlice> getAccessedHyperrectangularSlice(Operation *op) const {
    return HyperrectangularSlice(cast<OffsetSizeAndStrideOpInterface>(op));
  }

  bool operatesOnEquivalentSubset(Operation *op, SubsetOpInterface candidate,
                                  function_ref<bool(Value, Value)> equivalenceFn) const {
    auto other = dyn_cast<OffsetSizeAndStrideOpInterface>(candidate.getOperation());
    if (other && sameSlices(cast<OffsetSizeAndStrideOpInterface>(op), other))
      return equivalenceFn(cast<SubsetOpInterface>(op).getTensorContainer(),
                           candidate.getTensorContainer());
    return detail::defaultOperatesOnEquivalentSubset(op, candidate, equivalenceFn);
  }
};
} // namespace

void mithril::registerSliceSubsetModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<SliceSubsetModel<tensor::ExtractSliceOp>>(*ctx);
    tensor::InsertSliceOp::attachInterface<SliceSubsetModel<tensor::InsertSliceOp>>(*ctx);
    tensor::ParallelInsertSliceOp::attachInterface<SliceSubsetModel<tensor::ParallelInsertSliceOp>>(
        *ctx);
  });
}
