//===- TransposeConstant.h - a dense constant's elements permuted -*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_SUPPORT_TRANSPOSECONSTANT_H
#define MITHRIL_SUPPORT_TRANSPOSECONSTANT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstring>
#include <vector>

namespace mithril {

/// `input`'s elements transposed by `permutation` (output dimension d is
/// input dimension permutation[d]), as a constant of `outType`, moved as raw
/// bytes: a weight compiled in is transposed when compiling, not at each
/// call, and without a per-element attribute (a 784 x 512 weight's 400,000
/// APFloats). Null for splats and for elements that are not whole bytes.
inline mlir::DenseElementsAttr transposeConstant(mlir::DenseElementsAttr input,
                                                 llvm::ArrayRef<int64_t> permutation,
                                                 mlir::RankedTensorType outType) {
  auto inType = llvm::dyn_cast<mlir::RankedTensorType>(input.getType());
  if (input.isSplat() || !inType || !inType.hasStaticShape() || !outType.hasStaticShape() ||
      !inType.getElementType().isIntOrFloat() || inType.getElementTypeBitWidth() % 8 != 0 ||
      static_cast<int64_t>(permutation.size()) != inType.getRank() ||
      outType.getRank() != inType.getRank())
    return nullptr;
  int64_t bytes = inType.getElementTypeBitWidth() / 8;
  llvm::ArrayRef<char> raw = input.getRawData();
  if (static_cast<int64_t>(raw.size()) != inType.getNumElements() * bytes)
    return nullptr;
  // Walk the output in order and read the input at the permuted strides.
  llvm::ArrayRef<int64_t> outShape = outType.getShape();
  int64_t rank = outType.getRank();
  llvm::SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * inType.getDimSize(d + 1);
  llvm::SmallVector<int64_t> readStride;
  for (int64_t dim : permutation)
    readStride.push_back(inStrides[dim] * bytes);
  std::vector<char> out(raw.size());
  llvm::SmallVector<int64_t> at(rank, 0);
  int64_t from = 0;
  for (int64_t written = 0; written < static_cast<int64_t>(out.size()); written += bytes) {
    std::memcpy(out.data() + written, raw.data() + from, bytes);
    // The next output index, last dimension fastest.
    for (int64_t d = rank - 1; d >= 0; --d) {
      from += readStride[d];
      if (++at[d] < outShape[d])
        break;
      from -= readStride[d] * outShape[d];
      at[d] = 0;
    }
  }
  return mlir::DenseElementsAttr::getFromRawBuffer(outType, llvm::ArrayRef<char>(out));
}

} // namespace mithril

#endif // MITHRIL_SUPPORT_TRANSPOSECONSTANT_H
