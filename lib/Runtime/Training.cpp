//===- Training.cpp - minibatch training on a compiled step ---------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/Training.h"
#include "Driver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

void mithril::runtime::randomFill(Array &array, std::mt19937_64 &rng, bool isParam) {
  std::normal_distribution<double> normal;
  llvm::ArrayRef<int64_t> shape = array.shape();
  int64_t fanIn = 1;
  if (shape.size() > 1)
    for (int64_t d : shape.drop_front())
      fanIn *= d;
  else if (shape.size() == 1)
    fanIn = std::max<int64_t>(shape[0], 1);
  double bound = 1.0 / std::sqrt(double(std::max<int64_t>(fanIn, 1)));
  std::uniform_real_distribution<double> uniform(-bound, bound);
  auto sample = [&]() { return isParam ? uniform(rng) : normal(rng); };
  std::uniform_int_distribution<int> ints(0, 9), bits(0, 1);
  for (int64_t i = 0, n = array.size(); i < n; ++i) {
    if (isFloatDType(array.dtype()))
      array.setFromDouble(i, sample());
    else if (array.dtype() == DType::Bool)
      array.setFromDouble(i, bits(rng));
    else
      array.setFromDouble(i, ints(rng));
  }
}

/// Copies samples `rows` (along axis 0) of `src` into `dst`.
static void gatherRows(const Array &src, llvm::ArrayRef<int64_t> rows, Array &dst) {
  size_t rowBytes = src.byteSize() / std::max<int64_t>(src.shape()[0], 1);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<uint8_t *>(dst.data()) + i * rowBytes,
                static_cast<const uint8_t *>(src.data()) + rows[i] * rowBytes, rowBytes);
}

Expected<NamedArrays>
mithril::runtime::trainModel(StringRef source, CompileOptions options, NamedArrays &data,
                             const std::map<std::string, Array> &given, const TrainOptions &train,
                             llvm::function_ref<void(const TrainingSummary &)> onStart,
                             llvm::function_ref<void(const EpochReport &)> onEpoch) {
  const std::string &dataName = train.dataName;
  if (data.empty())
    return makeError(dataName + ": holds no arrays");
  int64_t samples = -1;
  for (auto &[name, array] : data) {
    if (array.shape().empty())
      return makeError(dataName + ": array '" + name + "' is a scalar; samples go along axis 0");
    if (samples >= 0 && array.shape()[0] != samples)
      return makeError(dataName + ": array '" + name + "' has " + Twine(array.shape()[0]) +
                       " samples, others have " + Twine(samples));
    samples = array.shape()[0];
  }
  int64_t batch = train.batchSize;
  if (batch == 0 || samples < batch)
    return makeError("--batch-size=" + Twine(batch) + " does not fit the " + Twine(samples) +
                     " samples in " + dataName);

  options.gradients = true;
  options.seeds = {train.loss};
  for (auto &[name, array] : data) {
    llvm::SmallVector<int64_t> shape(array.shape());
    shape[0] = batch;
    options.shapes.push_back(shapeSpec(name, shape));
  }
  for (auto &[name, array] : given)
    options.shapes.push_back(shapeSpec(name, array.shape()));
  auto model = CompiledModel::compile(source, options);
  if (!model)
    return model.takeError();

  // Bind every input: parameters (given or random), optimizer state (zero),
  // batches of data, the seed, the learning rate and the step.
  std::mt19937_64 rng(train.seed);
  std::map<std::string, Array> values;
  std::map<std::string, const Array *> dataByName;
  for (auto &[name, array] : data)
    dataByName[name] = &array;
  std::vector<std::string> missing;
  for (const TerminalInfo &t : (*model)->inputs()) {
    Expected<Array> allocated = Array::allocate(t.dtype, t.shape);
    if (!allocated)
      return makeError("input '" + t.name + "': " + toString(allocated.takeError()));
    Array array = std::move(*allocated);
    auto it = given.find(t.name);
    if (it != given.end()) {
      if (it->second.dtype() != t.dtype || it->second.shape() != llvm::ArrayRef<int64_t>(t.shape))
        return makeError("input '" + t.name + "' expects " + dtypeName(t.dtype) + " " +
                         formatShape(t.shape) + " but was given " + dtypeName(it->second.dtype()) +
                         " " + formatShape(it->second.shape()));
      array = it->second.clone();
    } else if (t.kind == InputKind::Param) {
      randomFill(array, rng, /*isParam=*/true);
    } else if (!dataByName.count(t.name) && !isAddedByGradients(t.name)) {
      missing.push_back("  " + t.name + ": " + dtypeName(t.dtype).str() + " " +
                        formatShape(t.shape));
    } else if (dataByName.count(t.name) && dataByName[t.name]->dtype() != t.dtype) {
      return makeError(dataName + ": array '" + t.name + "' is " +
                       dtypeName(dataByName[t.name]->dtype()) + " but the terminal expects " +
                       dtypeName(t.dtype));
    }
    values.emplace(t.name, std::move(array));
  }
  if (!missing.empty())
    return makeError("@" + (*model)->entry() + " needs these inputs, which " + dataName +
                     " does not hold:\n" + llvm::join(missing, "\n"));
  for (auto &[name, array] : data)
    if (!values.count(name))
      return makeError(dataName + ": array '" + name + "' is not an input of @" +
                       (*model)->entry());
  auto setScalar = [&](StringRef name, double v) {
    auto it = values.find(name.str());
    if (it == values.end())
      return;
    if (it->second.dtype() == DType::F32)
      it->second.as<float>()[0] = v;
    else
      it->second.as<double>()[0] = v;
  };
  setScalar("grad:" + train.loss, 1.0);
  setScalar("optimizer.lr", train.learningRate);

  std::vector<Array> outputs;
  int lossIndex = -1;
  for (const TerminalInfo &t : (*model)->outputs()) {
    if (t.name == train.loss)
      lossIndex = outputs.size();
    outputs.emplace_back(t.dtype, t.shape);
  }
  if (lossIndex < 0)
    return makeError("@" + (*model)->entry() + " has no output '" + train.loss + "' to minimize");
  // Accuracy, when a class-index target meets a [batch, classes] output.
  int scoreIndex = -1;
  auto target = values.find("target");
  if (target != values.end() &&
      (target->second.dtype() == DType::I64 || target->second.dtype() == DType::I32))
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].shape().size() == 2 && outputs[i].shape()[0] == batch &&
          !StringRef((*model)->outputs()[i].name).starts_with("new:"))
        scoreIndex = i;

  std::vector<int64_t> order(samples);
  for (int64_t i = 0; i < samples; ++i)
    order[i] = i;
  int64_t stepsPerEpoch = samples / batch, step = 0;
  onStart({(*model)->entry(), samples, stepsPerEpoch});
  for (unsigned epoch = 1; epoch <= train.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double lossSum = 0;
    int64_t correct = 0;
    auto start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < stepsPerEpoch; ++s) {
      llvm::ArrayRef<int64_t> rows(order.data() + s * batch, batch);
      for (auto &[name, array] : data)
        gatherRows(array, rows, values.at(name));
      setScalar("optimizer.step", ++step);
      std::vector<TensorView> in, out;
      for (const TerminalInfo &t : (*model)->inputs())
        in.push_back(values.at(t.name).view());
      for (Array &a : outputs)
        out.push_back(a.view());
      if (llvm::Error err = (*model)->run(in, out))
        return std::move(err);
      lossSum += outputs[lossIndex].getAsDouble(0);
      if (scoreIndex >= 0) {
        const Array &scores = outputs[scoreIndex];
        int64_t classes = scores.shape()[1];
        for (int64_t r = 0; r < batch; ++r) {
          int64_t best = 0;
          for (int64_t c = 1; c < classes; ++c)
            if (scores.getAsDouble(r * classes + c) > scores.getAsDouble(r * classes + best))
              best = c;
          correct += best == (int64_t)target->second.getAsDouble(r);
        }
      }
      // The updated parameters and state become the next step's inputs.
      for (size_t i = 0; i < outputs.size(); ++i) {
        StringRef name = (*model)->outputs()[i].name;
        if (name.consume_front("new:"))
          std::swap(values.at(name.str()), outputs[i]);
      }
    }
    EpochReport report;
    report.epoch = epoch;
    report.epochs = train.epochs;
    report.steps = stepsPerEpoch;
    report.samples = stepsPerEpoch * batch;
    report.meanLoss = lossSum / stepsPerEpoch;
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (scoreIndex >= 0)
      report.accuracy = double(correct) / double(stepsPerEpoch * batch);
    onEpoch(report);
  }

  NamedArrays trained;
  for (const TerminalInfo &t : (*model)->inputs())
    if (t.kind == InputKind::Param)
      trained.emplace_back(t.name, std::move(values.at(t.name)));
  return trained;
}
