//===- BufferizableOpInterfaceImpl.cpp - bufferizing mithril ops ----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//
//
// `mithril.custom_call` bufferizes into a call of its C function with an
// array of tensor records (include/mithril/Runtime/CustomCall.h):
//
//   struct MithrilTensor { void *data; int64_t rank; const int64_t *sizes; };
//   void callee(const MithrilTensor *tensors, int64_t count[, int64_t index]);
//
// The records are the operands' buffers, then a fresh result buffer; each is
// dense and row-major (an operand in a strided view is copied first). A
// private wrapper function takes the buffers, so that buffer deallocation
// keeps them until the call returns, and writes the records into one stack
// array of i64: 3 words per tensor, then every tensor's sizes.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/BufferizableOpInterfaceImpl.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mithril;

namespace {

/// The declaration of `name`, created at the start of the module if it is not
/// there; an existing symbol of that name with another signature is an error.
static FailureOr<func::FuncOp> declareCallee(RewriterBase &rewriter, Operation *op, StringRef name,
                                             FunctionType type) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return op->emitOpError("is not inside a module");
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, name)) {
    auto fn = dyn_cast<func::FuncOp>(existing);
    if (fn && fn.isExternal() && fn.getFunctionType() == type)
      return fn;
    return op->emitOpError("calls @")
           << name << ", but the module already has another symbol of that name";
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(rewriter, op->getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

/// A private function `@__mithril_custom_call_<callee>...` (the prefix is
/// what mithril-profile-kernels times as a kernel) that takes the
/// buffers of a custom call, writes their records in a stack array and calls
/// the C function with it.
static FailureOr<func::FuncOp> buildWrapper(RewriterBase &rewriter, CustomCallOp call,
                                            ValueRange buffers) {
  auto module = call->getParentOfType<ModuleOp>();
  if (!module)
    return call.emitOpError("is not inside a module");
  Location loc = call.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type i64 = rewriter.getI64Type();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  std::optional<int64_t> index = call.getIndex();
  SmallVector<Type> calleeTypes = {ptr, i64};
  if (index)
    calleeTypes.push_back(i64);
  FailureOr<func::FuncOp> callee =
      declareCallee(rewriter, call, call.getCallee(), rewriter.getFunctionType(calleeTypes, {}));
  if (failed(callee))
    return failure();

  std::string base = (Twine(kCustomCallWrapperPrefix) + call.getCallee()).str();
  std::string name = base;
  for (int n = 1; SymbolTable::lookupSymbolIn(module, name); ++n)
    name = base + "_" + std::to_string(n);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  auto fn =
      func::FuncOp::create(rewriter, loc, name, rewriter.getFunctionType(TypeRange(buffers), {}));
  fn.setPrivate();
  Block *body = fn.addEntryBlock();
  rewriter.setInsertionPointToStart(body);
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, i64, v);
  };

  // {data, rank, sizes} per tensor, then every tensor's sizes.
  int64_t count = buffers.size(), words = 3 * count;
  for (Value b : buffers)
    words += cast<MemRefType>(b.getType()).getRank();
  Value records = memref::AllocaOp::create(rewriter, loc, MemRefType::get({words}, i64));
  Value start = arith::IndexCastOp::create(
      rewriter, loc, i64, memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, records));
  auto store = [&](Value v, int64_t at) {
    memref::StoreOp::create(rewriter, loc, v, records,
                            ValueRange{arith::ConstantIndexOp::create(rewriter, loc, at)});
  };
  auto toI64 = [&](Value v) -> Value { return arith::IndexCastOp::create(rewriter, loc, i64, v); };
  int64_t sizesAt = 3 * count;
  for (auto [i, b] : llvm::enumerate(body->getArguments())) {
    auto type = cast<MemRefType>(b.getType());
    store(toI64(memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, b)), 3 * i);
    store(constant(type.getRank()), 3 * i + 1);
    store(arith::AddIOp::create(rewriter, loc, start, constant(8 * sizesAt)), 3 * i + 2);
    for (int64_t d = 0; d < type.getRank(); ++d)
      store(toI64(memref::DimOp::create(rewriter, loc, b, d)), sizesAt++);
  }
  SmallVector<Value> arguments = {LLVM::IntToPtrOp::create(rewriter, loc, ptr, start),
                                  constant(count)};
  if (index)
    arguments.push_back(constant(*index));
  func::CallOp::create(rewriter, loc, *callee, arguments);
  func::ReturnOp::create(rewriter, loc);
  return fn;
}

struct CustomCallOpInterface
    : public BufferizableOpInterface::ExternalModel<CustomCallOpInterface, CustomCallOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &, const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  FailureOr<BufferLikeType> getBufferType(Operation *op, Value value, const BufferizationOptions &,
                                          const BufferizationState &, SmallVector<Value> &) const {
    auto tensor = cast<RankedTensorType>(value.getType());
    return cast<BufferLikeType>(MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options, BufferizationState &state) const {
    auto call = cast<CustomCallOp>(op);
    Location loc = op->getLoc();

    // Dense operand buffers.
    SmallVector<Value> buffers;
    for (Value operand : call.getOperands()) {
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      auto type = cast<MemRefType>(buffer->getType());
      if (!type.getLayout().isIdentity()) {
        auto dense = MemRefType::get(type.getShape(), type.getElementType());
        SmallVector<Value> sizes;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            sizes.push_back(memref::DimOp::create(rewriter, loc, *buffer, d));
        FailureOr<Value> copy = options.createAlloc(rewriter, loc, dense, sizes);
        if (failed(copy) || failed(options.createMemCpy(rewriter, loc, *buffer, *copy)))
          return failure();
        buffer = copy;
      }
      buffers.push_back(*buffer);
    }

    // The result buffer, sized by the shape rule.
    auto resultType = cast<RankedTensorType>(call.getType());
    auto resultBuffer = MemRefType::get(resultType.getShape(), resultType.getElementType());
    SmallVector<Value> resultSizes;
    for (int64_t d = 0; d < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d))
        continue;
      int64_t operand = call.getShapeOf(), dim = d;
      if (std::optional<ArrayRef<int64_t>> spec = call.getResultShape()) {
        operand = (*spec)[2 * d];
        dim = (*spec)[2 * d + 1];
      }
      resultSizes.push_back(memref::DimOp::create(rewriter, loc, buffers[operand], dim));
    }
    FailureOr<Value> result = options.createAlloc(rewriter, loc, resultBuffer, resultSizes);
    if (failed(result))
      return failure();
    buffers.push_back(*result);

    // The call goes through a function of ours that takes the buffers: the
    // records hold their addresses as integers, which buffer deallocation
    // does not follow, so the buffers must be operands of the call to live
    // until it returns.
    FailureOr<func::FuncOp> wrapper = buildWrapper(rewriter, call, buffers);
    if (failed(wrapper))
      return failure();
    func::CallOp::create(rewriter, loc, *wrapper, buffers);
    replaceOpWithBufferizedValues(rewriter, op, *result);
    return success();
  }
};

} // namespace

void mithril::registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MithrilDialect *) {
    CustomCallOp::attachInterface<CustomCallOpInterface>(*ctx);
    // The dialects whose ops and types a custom call's bufferization
    // creates (the wrapper's records hold LLVM pointers), as upstream's
    // external models load theirs.
    ctx->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                     memref::MemRefDialect>();
  });
}
