//===- SliceSubsetModels.cpp - slices compared term by term first ---------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/SliceSubsetModels.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SubsetOpInterface.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;

namespace {
/// Whether the terms are the same, one by one: the same SSA value or equal
/// constants.
bool sameTerms(ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip_equal(a, b), [](auto pair) {
           return isEqualConstantIntOrValue(std::get<0>(pair), std::get<1>(pair));
         });
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
    HyperrectangularSlice slice(cast<OffsetSizeAndStrideOpInterface>(op));
    FailureOr<HyperrectangularSlice> other = candidate.getAccessedHyperrectangularSlice();
    if (succeeded(other) && sameTerms(slice.getMixedOffsets(), other->getMixedOffsets()) &&
        sameTerms(slice.getMixedSizes(), other->getMixedSizes()) &&
        sameTerms(slice.getMixedStrides(), other->getMixedStrides()))
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
