//===- Array.cpp - dense host arrays --------------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/Array.h"
#include "mithril/Support/BFloat16.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#ifdef __linux__
#include <sys/mman.h>
#endif

using namespace mithril::runtime;

static constexpr size_t kHugePageAlignment = size_t(2) << 20;

void mithril::runtime::adviseHugePages(void *data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < kHugePageBytes)
    return;
  // madvise takes whole pages: those inside the block.
  constexpr uintptr_t page = 4096;
  auto start = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end > start)
    (void)madvise(reinterpret_cast<void *>(start), end - start, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

void *mithril::runtime::allocateArrayMemory(size_t bytes) {
  if (bytes < kHugePageBytes)
    return std::aligned_alloc(64, llvm::alignTo(std::max<size_t>(bytes, 1), 64));
  // aligned_alloc wants a multiple of the alignment.
  if (bytes > std::numeric_limits<size_t>::max() - kHugePageAlignment)
    return nullptr;
  size_t rounded = llvm::alignTo(bytes, kHugePageAlignment);
  void *block = std::aligned_alloc(kHugePageAlignment, rounded);
  if (block)
    adviseHugePages(block, rounded);
  return block;
}

size_t mithril::runtime::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::Bool:
  case DType::I8:
    return 1;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  }
  return 1;
}

bool mithril::runtime::isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 || dtype == DType::BF16;
}

float mithril::runtime::halfToFloat(uint16_t bits) {
  llvm::APFloat half(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool lost;
  half.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return half.convertToFloat();
}

uint16_t mithril::runtime::floatToHalf(float value) {
  llvm::APFloat f(value);
  bool lost;
  f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

float mithril::runtime::bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = floatBitsFromBFloat16(bits);
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t mithril::runtime::floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bfloat16FromFloatBits(bits);
}

llvm::StringRef mithril::runtime::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  case DType::Bool:
    return "bool";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  case DType::I8:
    return "int8";
  case DType::I16:
    return "int16";
  }
  return "?";
}

mlir::Type mithril::runtime::dtypeToType(DType dtype, mlir::MLIRContext *ctx) {
  switch (dtype) {
  case DType::F32:
    return mlir::Float32Type::get(ctx);
  case DType::F64:
    return mlir::Float64Type::get(ctx);
  case DType::I32:
    return mlir::IntegerType::get(ctx, 32);
  case DType::I64:
    return mlir::IntegerType::get(ctx, 64);
  case DType::Bool:
    return mlir::IntegerType::get(ctx, 1);
  case DType::F16:
    return mlir::Float16Type::get(ctx);
  case DType::BF16:
    return mlir::BFloat16Type::get(ctx);
  case DType::I8:
    return mlir::IntegerType::get(ctx, 8);
  case DType::I16:
    return mlir::IntegerType::get(ctx, 16);
  }
  return {};
}

std::optional<DType> mithril::runtime::typeToDType(mlir::Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(64))
    return DType::I64;
  if (type.isInteger(1))
    return DType::Bool;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isInteger(8))
    return DType::I8;
  if (type.isInteger(16))
    return DType::I16;
  return std::nullopt;
}

std::optional<int64_t> mithril::runtime::numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

std::optional<int64_t> mithril::runtime::numBytes(DType dtype, llvm::ArrayRef<int64_t> shape) {
  std::optional<int64_t> n = numElements(shape);
  int64_t size = static_cast<int64_t>(dtypeSize(dtype));
  if (!n || *n > std::numeric_limits<int64_t>::max() / size)
    return std::nullopt;
  return *n * size;
}

std::string mithril::runtime::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (mlir::ShapedType::isDynamic(shape[i]) ? std::string("?")
                                                                   : std::to_string(shape[i]));
  return s + "]";
}

void Array::FreeDeleter::operator()(void *p) const { std::free(p); }

Array::Array(DType dtype, llvm::ArrayRef<int64_t> shape) {
  // Internal callers pass shapes that already exist in memory; user-given
  // shapes go through allocate() and get an error instead.
  llvm::Expected<Array> array = allocate(dtype, shape);
  if (!array)
    llvm::report_fatal_error(array.takeError());
  *this = std::move(*array);
}

llvm::Expected<Array> Array::allocate(DType dtype, llvm::ArrayRef<int64_t> shape) {
  std::optional<int64_t> bytes = numBytes(dtype, shape);
  // Keep the 64-byte rounding below from overflowing size_t as well.
  if (!bytes || static_cast<uint64_t>(*bytes) > std::numeric_limits<size_t>::max() - 64)
    return llvm::createStringError("a " + dtypeName(dtype) + " array of shape " +
                                   formatShape(shape) + " is too large to allocate");
  Array array;
  array.dtype_ = dtype;
  array.shape_.assign(shape.begin(), shape.end());
  array.bytes_ = static_cast<size_t>(*bytes);
  size_t rounded = llvm::alignTo(std::max<size_t>(array.bytes_, 1), 64);
  array.storage_.reset(static_cast<uint8_t *>(allocateArrayMemory(rounded)));
  if (!array.storage_)
    return llvm::createStringError("out of memory allocating " + llvm::Twine(*bytes) +
                                   " bytes for a " + dtypeName(dtype) + " array of shape " +
                                   formatShape(shape));
  std::memset(array.storage_.get(), 0, rounded);
  return std::move(array);
}

int64_t Array::size() const { return *numElements(shape_); }

Array Array::clone() const {
  Array copy(dtype_, shape_);
  std::memcpy(copy.data(), data(), bytes_);
  return copy;
}

double Array::getAsDouble(int64_t i) const {
  switch (dtype_) {
  case DType::F32:
    return as<float>()[i];
  case DType::F64:
    return as<double>()[i];
  case DType::I32:
    return as<int32_t>()[i];
  case DType::I64:
    return static_cast<double>(as<int64_t>()[i]);
  case DType::Bool:
    return as<uint8_t>()[i] ? 1.0 : 0.0;
  case DType::F16:
    return halfToFloat(as<uint16_t>()[i]);
  case DType::BF16:
    return bfloat16ToFloat(as<uint16_t>()[i]);
  case DType::I8:
    return as<int8_t>()[i];
  case DType::I16:
    return as<int16_t>()[i];
  }
  return 0;
}

void Array::setFromDouble(int64_t i, double value) {
  switch (dtype_) {
  case DType::F32:
    as<float>()[i] = static_cast<float>(value);
    return;
  case DType::F64:
    as<double>()[i] = value;
    return;
  case DType::I32:
    as<int32_t>()[i] = static_cast<int32_t>(value);
    return;
  case DType::I64:
    as<int64_t>()[i] = static_cast<int64_t>(value);
    return;
  case DType::Bool:
    as<uint8_t>()[i] = value != 0;
    return;
  case DType::F16:
    as<uint16_t>()[i] = floatToHalf(static_cast<float>(value));
    return;
  case DType::BF16:
    as<uint16_t>()[i] = floatToBfloat16(static_cast<float>(value));
    return;
  case DType::I8:
    as<int8_t>()[i] = static_cast<int8_t>(value);
    return;
  case DType::I16:
    as<int16_t>()[i] = static_cast<int16_t>(value);
    return;
  }
}
