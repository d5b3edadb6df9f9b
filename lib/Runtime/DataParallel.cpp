//===- DataParallel.cpp - the batch analysis behind device_mesh -----------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"
#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Runtime/Distributed.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;

/// Gives `model` (shape-inferred for one batch size) dynamic sizes where
/// `other` (the same source, for another batch size) differs from it: the
/// sizes that follow the batch. The two graphs must match op for op.
static llvm::Error markBatchSizes(ModelOp model, ModelOp other) {
  auto merge = [](Type a, Type b) -> Type {
    auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getRank() != tb.getRank())
      return a;
    SmallVector<int64_t> shape(ta.getShape());
    for (auto [i, size] : llvm::enumerate(tb.getShape()))
      if (shape[i] != size)
        shape[i] = ShapedType::kDynamic;
    return ta.clone(shape);
  };
  if (model.getNumInputs() != other.getNumInputs())
    return makeError("data parallelism: the model's inputs differ between batch sizes");
  for (unsigned i = 0; i < model.getNumInputs(); ++i)
    model.setInputType(i, merge(model.getArgumentTypes()[i], other.getArgumentTypes()[i]));
  Block &a = model.getBodyBlock(), &b = other.getBodyBlock();
  auto opsA = a.without_terminator(), opsB = b.without_terminator();
  if (std::distance(opsA.begin(), opsA.end()) != std::distance(opsB.begin(), opsB.end()))
    return makeError("data parallelism: the model's graph differs between batch sizes, so "
                     "its batch axis cannot be traced");
  for (auto [opA, opB] : llvm::zip(opsA, opsB)) {
    if (opA.getName() != opB.getName() || opA.getNumResults() != opB.getNumResults())
      return makeError("data parallelism: the model's graph differs between batch sizes ('" +
                       opA.getName().getStringRef().str() + "' against '" +
                       opB.getName().getStringRef().str() +
                       "'), so its batch axis cannot be traced");
    for (auto [ra, rb] : llvm::zip(opA.getResults(), opB.getResults()))
      ra.setType(merge(ra.getType(), rb.getType()));
  }
  return llvm::Error::success();
}

Expected<DataParallelPlan>
mithril::runtime::analyzeDataParallel(StringRef source, const CompileOptions &options,
                                      ArrayRef<std::string> batchedInputs, StringRef doubledSource,
                                      ArrayRef<std::string> doubledShapes) {
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  CompileOptions front = options;
  front.dynamicShapes = doubledSource.empty();
  front.gradients = false;
  if (llvm::Error err = runPipeline(**module, front, "shapes"))
    return std::move(err);
  auto model = findEntry(**module, options.entry);
  if (!model)
    return model.takeError();
  OwningOpRef<ModuleOp> doubled;
  if (!doubledSource.empty()) {
    // Static sizes, twice: the sizes that change with the batch are its.
    auto parsed = parseSource(*ctx, doubledSource, options.sourceName);
    if (!parsed)
      return parsed.takeError();
    doubled = std::move(*parsed);
    CompileOptions frontDoubled = front;
    frontDoubled.shapes.assign(doubledShapes.begin(), doubledShapes.end());
    if (llvm::Error err = runPipeline(*doubled, frontDoubled, "shapes"))
      return std::move(err);
    auto other = findEntry(*doubled, options.entry);
    if (!other)
      return other.takeError();
    if (llvm::Error err = markBatchSizes(*model, *other))
      return std::move(err);
  }
  SmallVector<unsigned> batched;
  for (const std::string &name : batchedInputs) {
    std::optional<unsigned> index = model->lookupInput(name);
    if (!index)
      return makeError("data parallelism: the model has no input '" + name + "'");
    batched.push_back(*index);
  }
  std::vector<std::string> batchedNames(batchedInputs.begin(), batchedInputs.end());
  if (batchedInputs.empty()) {
    // Every data input whose axis 0 is left dynamic.
    for (unsigned i = 0; i < model->getNumInputs(); ++i) {
      auto type = dyn_cast<RankedTensorType>(model->getArgumentTypes()[i]);
      if (model->getInputKind(i) == InputKind::Data && type && type.getRank() > 0 &&
          type.isDynamicDim(0)) {
        batched.push_back(i);
        batchedNames.push_back(model->getInputName(i).str());
      }
    }
    if (batched.empty())
      return makeError("data parallelism: no data input has a dynamic batch axis (axis 0) to "
                       "split across ranks");
  }
  DiagnosticCollector diags(*ctx);
  FailureOr<SmallVector<BatchSharding>> outputs = analyzeBatchSharding(*model, batched);
  if (failed(outputs)) {
    std::string reproduce = pipelineOptions(front, "shapes", "");
    return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                     "mithril-cpu-pipeline{" + reproduce + "},mithril-batch-sharding{inputs=" +
                     llvm::join(batchedNames, ",") + "})' " + options.sourceName);
  }
  DataParallelPlan plan;
  plan.batchedInputs = std::move(batchedNames);
  for (auto [i, sharding] : llvm::enumerate(*outputs))
    plan.outputs.push_back({model->getOutputName(i).str(), sharding});
  return plan;
}
