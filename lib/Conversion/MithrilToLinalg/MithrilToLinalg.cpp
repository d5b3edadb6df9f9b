//===- MithrilToLinalg.cpp - mithril to linalg on tensors -----------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Conversion/MithrilToLinalg/MithrilToLinalg.h"
#include "mithril/Dialect/Mithril/IR/MithrilOps.h"

#include "Utils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringSet.h"

namespace mithril {
#define GEN_PASS_DEF_CONVERTMITHRILTOLINALG
#define GEN_PASS_DEF_MITHRILUNIQUERESULTS
#include "mithril/Conversion/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;
using namespace mithril::linalg_lowering;

void mithril::yieldMultiplyAdd(OpBuilder &b, Location loc, ValueRange args) {
  // Narrower operands (bf16 or f16 into an f32 accumulator) widen first.
  Type accumulator = args[2].getType();
  auto widen = [&](Value v) -> Value {
    return v.getType() == accumulator ? v : arith::ExtFOp::create(b, loc, accumulator, v);
  };
  linalg::YieldOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, args[2],
                            arith::MulFOp::create(b, loc, widen(args[0]), widen(args[1])))
          .getResult());
}

namespace {

/// Converts a flattened model into a func.func.
static LogicalResult convertModel(ModelOp model) {
  if (!model.getBodyBlock().getOps<InstanceOp>().empty())
    return model.emitOpError("still contains instances; run mithril-flatten first");
  OpBuilder b(model);
  auto func = func::FuncOp::create(b, model.getLoc(), model.getSymName(), model.getFunctionType());
  if (auto argAttrs = model.getArgAttrsAttr())
    func.setArgAttrsAttr(argAttrs);
  if (auto resAttrs = model.getResAttrsAttr())
    func.setResAttrsAttr(resAttrs);
  if (auto vis = model.getSymVisibility())
    func.setSymVisibility(*vis);
  // Models are entry points: give them the C interface the runtime calls.
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  func.getBody().takeBody(model.getBody());
  OutputOp out = cast<OutputOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(out);
  func::ReturnOp::create(b, out.getLoc(), out.getValues());
  out.erase();
  model.erase();
  return success();
}

/// Gives every returned value its own tensor (see mithril-unique-results).
static void copyRepeatedResults(func::FuncOp func) {
  func.walk([](func::ReturnOp ret) {
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      if (seen.insert(v).second)
        continue;
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> sizes;
      for (int64_t i = 0; i < type.getRank(); ++i)
        sizes.push_back(dimOf(b, ret.getLoc(), v, i));
      Value init = emptyTensor(b, ret.getLoc(), type, sizes);
      operand.set(linalg::CopyOp::create(b, ret.getLoc(), v, init).getResult(0));
    }
  });
}

struct ConvertMithrilToLinalgPass
    : public mithril::impl::ConvertMithrilToLinalgBase<ConvertMithrilToLinalgPass> {
  using ConvertMithrilToLinalgBase::ConvertMithrilToLinalgBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (ModelOp model : llvm::make_early_inc_range(module.getOps<ModelOp>()))
      if (failed(convertModel(model)))
        return signalPassFailure();
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      lowerAllReducesIntoWindows(func, windowRanks);

    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, bufferization::BufferizationDialect,
                           func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect>();
    target.addIllegalDialect<MithrilDialect>();
    // A user's C function is called where the op bufferizes
    // (BufferizableOpInterfaceImpl.cpp).
    target.addLegalOp<CustomCallOp>();
    // Runtime memory, lowered after the buffer deallocation.
    target.addLegalOp<CollectiveWindowOp>();
    RewritePatternSet patterns(ctx);
    populateMithrilToLinalgPatterns(patterns, indexErrors, bf16Products, bf16Tiles, threads);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

/// The `tensor.empty` whose buffer `value` is computed in, and its use by
/// the first op of that destination chain (through destination-passing
/// ops, loops and slice insertions); none where the chain ends elsewhere.
static OpOperand *emptyDestinationOf(Value value) {
  for (unsigned depth = 0; depth < 64; ++depth) {
    auto result = dyn_cast<OpResult>(value);
    if (!result)
      return nullptr;
    Operation *op = result.getOwner();
    OpOperand *init = nullptr;
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
      init = dps.getTiedOpOperand(result);
    else if (auto loop = dyn_cast<LoopLikeOpInterface>(op))
      init = loop.getTiedLoopInit(result);
    if (!init)
      return nullptr;
    if (init->get().getDefiningOp<tensor::EmptyOp>())
      return init;
    value = init->get();
  }
  return nullptr;
}

/// Gives each update of a parameter or optimizer state (a result `new:X`
/// for an argument `X`) a `tensor.empty` of its own. CSE merges the empty
/// tensors of one shape, and bufferization then computes another value of
/// that shape (the parameter's gradient) in the caller's buffer for `new:X`
/// before the update overwrites it: correct, but the update can no longer
/// share its buffer with `X` (mithril-mark-in-place-updates).
static void separateUpdateDestinations(func::FuncOp func) {
  llvm::StringSet<> inputs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "mithril.name"))
      inputs.insert(name.getValue());
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      auto name = func.getResultAttrOfType<StringAttr>(operand.getOperandNumber(), "mithril.name");
      if (!name || !name.getValue().starts_with("new:") ||
          !inputs.contains(name.getValue().drop_front(4)))
        continue;
      OpOperand *init = emptyDestinationOf(operand.get());
      if (!init || init->get().hasOneUse())
        continue;
      auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
      OpBuilder b(empty);
      init->set(b.clone(*empty)->getResult(0));
    }
  });
}

struct UniqueResultsPass : public mithril::impl::MithrilUniqueResultsBase<UniqueResultsPass> {
  void runOnOperation() override {
    copyRepeatedResults(getOperation());
    separateUpdateDestinations(getOperation());
  }
};
} // namespace

void mithril::populateMithrilToLinalgPatterns(RewritePatternSet &patterns, bool indexErrors,
                                              bool bf16Products, bool bf16Tiles, unsigned threads) {
  // Each pattern has a root op of its own but ElementwisePattern and
  // ReshapeLikePattern, which match any op (and are added in this order):
  // the order of the families changes no op's patterns.
  populateIndexingPatterns(patterns, indexErrors);
  populateLossPatterns(patterns, indexErrors);
  populateElementwisePatterns(patterns);
  populateReductionPatterns(patterns);
  populateLinearPatterns(patterns);
  populateDataMovementPatterns(patterns);
  populateConvolutionPatterns(patterns, bf16Products, bf16Tiles, threads);
  populatePoolingPatterns(patterns);
  populateCollectivePatterns(patterns);
  populateRandomPatterns(patterns);
  populateManifoldPatterns(patterns);
  populateSetPatterns(patterns);
}
