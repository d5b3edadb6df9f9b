//===- BatchSharding.cpp - data parallelism: analysis and gradient sums ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// mithril-batch-sharding runs the ops' BatchShardingOpInterface rules from
// the batch-split inputs to the outputs; mithril-all-reduce-gradients sums
// the parameter gradients over the ranks.
//
//===----------------------------------------------------------------------===//

#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace mithril {
#define GEN_PASS_DEF_MITHRILBATCHSHARDING
#define GEN_PASS_DEF_MITHRILALLREDUCEGRADIENTS
#include "mithril/Dialect/Mithril/Transforms/Passes.h.inc"
} // namespace mithril

using namespace mlir;
using namespace mithril;

/// The op's rule: its interface, else its elementwise traits.
static FailureOr<BatchSharding> inferOpSharding(Operation *op, ArrayRef<BatchSharding> operands,
                                                std::string &reason) {
  if (op->getNumResults() != 1) {
    reason = "it has no data-parallel rule (it does not have one result)";
    return failure();
  }
  if (auto rule = dyn_cast<BatchShardingOpInterface>(op))
    return rule.inferBatchSharding(operands, reason);
  if (op->hasTrait<traits::Elementwise>() || op->hasTrait<traits::BroadcastingElementwise>())
    return elementwiseBatchSharding(op, operands, reason);
  reason = "it has no data-parallel rule";
  return failure();
}

FailureOr<SmallVector<BatchSharding>>
mithril::analyzeBatchSharding(ModelOp model, ArrayRef<unsigned> batchedInputs) {
  llvm::DenseMap<Value, BatchSharding> sharding;
  Block &body = model.getBodyBlock();
  for (unsigned i : batchedInputs) {
    Value arg = body.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 || !type.isDynamicDim(0))
      return model.emitError() << "data parallelism: input '" << model.getInputName(i)
                               << "' is split along its axis 0, which must be dynamic (?)";
    for (int64_t d = 1; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        return model.emitError() << "data parallelism: input '" << model.getInputName(i)
                                 << "' has a dynamic size on axis " << d
                                 << "; only the batch axis (0) may be dynamic";
    sharding[arg] = BatchSharding::sharded(0);
  }
  auto of = [&](Value v) {
    auto it = sharding.find(v);
    return it == sharding.end() ? BatchSharding::replicated() : it->second;
  };
  for (Operation &op : body.without_terminator()) {
    SmallVector<BatchSharding> operands = llvm::map_to_vector(op.getOperands(), of);
    if (llvm::all_of(operands, [](const BatchSharding &s) { return s.isReplicated(); }))
      continue;
    std::string reason;
    FailureOr<BatchSharding> result = inferOpSharding(&op, operands, reason);
    if (failed(result)) {
      std::string given;
      llvm::raw_string_ostream os(given);
      llvm::interleaveComma(operands, os, [&](const BatchSharding &s) { os << s.str(); });
      return op.emitError() << "data parallelism: '" << op.getName()
                            << "' cannot run on batch shards: " << reason << " (operands: " << given
                            << ")";
    }
    sharding[op.getResult(0)] = *result;
  }
  return llvm::map_to_vector(model.getOutputOp().getValues(), of);
}

namespace {
struct BatchShardingPass : public mithril::impl::MithrilBatchShardingBase<BatchShardingPass> {
  using MithrilBatchShardingBase::MithrilBatchShardingBase;

  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      SmallVector<unsigned> batched;
      for (const std::string &name : inputs) {
        std::optional<unsigned> index = model.lookupInput(name);
        if (!index || model.getInputKind(*index) != InputKind::Data) {
          model.emitError() << "mithril-batch-sharding: no data input '" << name << "'";
          return signalPassFailure();
        }
        batched.push_back(*index);
      }
      FailureOr<SmallVector<BatchSharding>> outputs = analyzeBatchSharding(model, batched);
      if (failed(outputs))
        return signalPassFailure();
      for (auto [i, s] : llvm::enumerate(*outputs))
        model.emitRemark() << "output '" << model.getOutputName(i) << "': " << s.str();
    }
  }
};

struct AllReduceGradientsPass
    : public mithril::impl::MithrilAllReduceGradientsBase<AllReduceGradientsPass> {
  using MithrilAllReduceGradientsBase::MithrilAllReduceGradientsBase;

  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (!entry.empty() && model.getSymName() != entry)
        continue;
      OutputOp out = model.getOutputOp();
      for (unsigned i = 0; i < model.getNumOutputs(); ++i) {
        if (!model.getOutputName(i).starts_with("grad:"))
          continue;
        Value gradient = out.getValues()[i];
        auto type = dyn_cast<RankedTensorType>(gradient.getType());
        if (!type || !isa<Float32Type, Float64Type>(type.getElementType())) {
          model.emitError() << "mithril-all-reduce-gradients: output '" << model.getOutputName(i)
                            << "' is " << gradient.getType()
                            << "; data parallelism sums float32 and float64 gradients";
          return signalPassFailure();
        }
        // Right after the value is computed (at the top for an input).
        OpBuilder b(model.getContext());
        if (Operation *def = gradient.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&model.getBodyBlock());
        auto sum = AllReduceOp::create(b, gradient.getLoc(), gradient);
        out->setOperand(i, sum.getResult());
      }
    }
  }
};
} // namespace
