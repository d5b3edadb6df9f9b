//===- GpuBf16MmaToNvvm.cpp - bf16 nvgpu.mma.sync to nvvm.mma.sync --------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Codegen/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILGPUBF16MMATONVVM
#include "mithril/Codegen/GPU/Passes.h.inc"
} // namespace mithril

using namespace mlir;

namespace {

/// Whether `value` is a vector<rows x 2 x element>.
bool isPairs(Value value, int64_t rows, Type element) {
  auto type = dyn_cast<VectorType>(value.getType());
  return type && type.getShape() == ArrayRef<int64_t>{rows, 2} && type.getElementType() == element;
}

LogicalResult lower(nvgpu::MmaSyncOp mma) {
  OpBuilder b(mma);
  Location loc = mma.getLoc();
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type(), i32 = b.getI32Type();
  SmallVector<int64_t> shape = llvm::map_to_vector(
      mma.getMmaShape(), [](Attribute a) { return cast<IntegerAttr>(a).getInt(); });
  if (shape != SmallVector<int64_t>{16, 8, 16} || !isPairs(mma.getMatrixA(), 4, bf16) ||
      !isPairs(mma.getMatrixB(), 2, bf16) || !isPairs(mma.getMatrixC(), 2, f32))
    return mma.emitOpError("of bf16 operands lowers as m16n8k16 with float32 sums only "
                           "(vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>)");
  // Each pair of bf16 values is one 32-bit register, the first in its low
  // half (a little-endian bitcast), as PTX's .bf16x2 operands are.
  auto registers = [&](Value pairs, int64_t count) {
    SmallVector<Value> words;
    for (int64_t r = 0; r < count; ++r) {
      Value pair = vector::ExtractOp::create(b, loc, pairs, ArrayRef<int64_t>{r});
      Value word = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair).getResult();
      words.push_back(vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0}));
    }
    return words;
  };
  SmallVector<Value> a = registers(mma.getMatrixA(), 4), bRegs = registers(mma.getMatrixB(), 2);
  SmallVector<Value> c;
  for (int64_t v = 0; v < 4; ++v)
    c.push_back(
        vector::ExtractOp::create(b, loc, mma.getMatrixC(), ArrayRef<int64_t>{v / 2, v % 2}));
  auto sums = LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  auto op = NVVM::MmaOp::create(
      b, loc, sums, a, bRegs, c, shape, /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
  SmallVector<Value> results;
  for (int64_t v = 0; v < 4; ++v)
    results.push_back(LLVM::ExtractValueOp::create(b, loc, op.getResult(), v));
  mma.replaceAllUsesWith(
      vector::FromElementsOp::create(b, loc, mma.getMatrixC().getType(), results).getResult());
  mma.erase();
  return success();
}

struct GpuBf16MmaToNvvmPass
    : public mithril::impl::MithrilGpuBf16MmaToNvvmBase<GpuBf16MmaToNvvmPass> {
  void runOnOperation() override {
    SmallVector<nvgpu::MmaSyncOp> bf16Products;
    getOperation()->walk([&](nvgpu::MmaSyncOp mma) {
      if (cast<VectorType>(mma.getMatrixA().getType()).getElementType().isBF16())
        bf16Products.push_back(mma);
    });
    for (nvgpu::MmaSyncOp mma : bf16Products)
      if (failed(lower(mma)))
        return signalPassFailure();
  }
};

} // namespace
