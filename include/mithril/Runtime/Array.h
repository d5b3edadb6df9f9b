//===- Array.h - dense host arrays ------------------------------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_RUNTIME_ARRAY_H
#define MITHRIL_RUNTIME_ARRAY_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mithril::runtime {

/// Element types that cross the boundary between the host and compiled code.
/// F16 and BF16 are stored as their 2-byte bit patterns.
enum class DType { F32, F64, I32, I64, Bool, F16, BF16, I8, I16 };

/// Size of one element in bytes.
size_t dtypeSize(DType dtype);
/// numpy's name for it (`float32`, ...).
llvm::StringRef dtypeName(DType dtype);
/// The MLIR element type of `dtype`.
mlir::Type dtypeToType(DType dtype, mlir::MLIRContext *ctx);
/// The dtype of an MLIR element type, if it has one.
std::optional<DType> typeToDType(mlir::Type type);

/// Whether `dtype` is a floating-point type.
bool isFloatDType(DType dtype);

/// Blocks of at least this many bytes are worth backing with transparent
/// huge pages (2 MiB), as NumPy backs its arrays' data: a product streaming
/// from a matrix of more rows than the TLB maps pages waits on page walks
/// (dgemm 2048 on 4 KiB pages was 11% slower on an Intel Xeon core).
inline constexpr size_t kHugePageBytes = size_t(4) << 20;

/// Asks Linux to back the whole pages of [data, data + bytes) with
/// transparent huge pages, when the block is at least kHugePageBytes (a
/// hint: nothing happens where THP is off or on other systems).
void adviseHugePages(void *data, size_t bytes);

/// `bytes` of memory for array data, 64-byte aligned; blocks of at least
/// kHugePageBytes 2 MiB aligned with huge pages advised. Freed by std::free;
/// null when out of memory.
void *allocateArrayMemory(size_t bytes);

/// IEEE half and bfloat16 bit patterns to and from float, rounding to the
/// nearest even (NaN stays NaN).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

/// Number of elements of a shape; nullopt if it overflows int64.
std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape);
/// Number of bytes of a shape of `dtype`; nullopt if it overflows int64.
std::optional<int64_t> numBytes(DType dtype, llvm::ArrayRef<int64_t> shape);
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A non-owning view of a contiguous row-major array.
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t> shape;
};

/// An owning contiguous row-major array.
class Array {
public:
  Array() = default;
  /// A zero-filled array, for shapes known to fit in memory (a fatal error
  /// otherwise); use allocate() where the shape comes from user input.
  Array(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// A zero-filled array, or an error if the shape overflows or the memory
  /// cannot be had.
  static llvm::Expected<Array> allocate(DType dtype, llvm::ArrayRef<int64_t> shape);

  DType dtype() const { return dtype_; }
  llvm::ArrayRef<int64_t> shape() const { return shape_; }
  int64_t size() const;
  size_t byteSize() const { return bytes_; }
  void *data() { return storage_.get(); }
  const void *data() const { return storage_.get(); }
  template <typename T> T *as() { return reinterpret_cast<T *>(storage_.get()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(storage_.get()); }
  Array clone() const;
  TensorView view() { return TensorView{data(), dtype_, shape_}; }

  /// Element `i` (flat index) converted to double, for printing and checks.
  double getAsDouble(int64_t i) const;
  /// Sets element `i` (flat index) to `value`, rounded to the element type.
  void setFromDouble(int64_t i, double value);

private:
  DType dtype_ = DType::F32;
  llvm::SmallVector<int64_t> shape_;
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  // 64-byte aligned storage so that compiled code may use aligned vectors.
  std::unique_ptr<uint8_t, FreeDeleter> storage_;
  size_t bytes_ = 0;
};

} // namespace mithril::runtime

#endif // MITHRIL_RUNTIME_ARRAY_H
