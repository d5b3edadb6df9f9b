//===- Training.h - minibatch training on a compiled step -------*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The training loop behind `mithril-run --train`, for any front end: it
// compiles the model's step (forward, backward and the optimizer's update in
// one function), binds parameters, optimizer state and minibatches, and runs
// the epochs.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_RUNTIME_TRAINING_H
#define MITHRIL_RUNTIME_TRAINING_H

#include "mithril/Runtime/Array.h"
#include "mithril/Runtime/CompiledModel.h"
#include "mithril/Runtime/NumpyIO.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <optional>
#include <random>
#include <string>

namespace mithril::runtime {

struct TrainOptions {
  /// The scalar output to minimize.
  std::string loss = "loss";
  unsigned epochs = 10;
  unsigned batchSize = 32;
  double learningRate = 0.01;
  /// Seeds the shuffles and the parameters that `given` leaves out.
  unsigned seed = 0;
  /// The file the data came from, for messages.
  std::string dataName = "the data";
};

/// What one epoch did.
struct EpochReport {
  unsigned epoch = 0, epochs = 0;
  int64_t steps = 0, samples = 0;
  double meanLoss = 0, seconds = 0;
  /// The share of samples whose highest score is their class, where a
  /// class-index `target` meets a [batch, classes] output.
  std::optional<double> accuracy;
};

/// What a training run starts with and reports.
struct TrainingSummary {
  std::string entry;
  int64_t samples = 0, stepsPerEpoch = 0;
};

/// Fills `array` with seeded random values: for parameters uniform in
/// +-1/sqrt(fan_in) (as torch initializes layers, and as the Python
/// package's randomize_params does), for data a standard normal; small
/// non-negative integers and booleans otherwise.
void randomFill(Array &array, std::mt19937_64 &rng, bool isParam);

/// Trains the model in `source` (compiled with `options` plus gradients of
/// `train.loss` and the optimizer update) on `data`, arrays with the samples
/// along axis 0, minibatch by minibatch; `given` fixes other inputs and the
/// initial parameters (the others start random). Calls `onStart` once and
/// `onEpoch` after each epoch. Returns the trained parameters.
llvm::Expected<NamedArrays> trainModel(llvm::StringRef source, CompileOptions options,
                                       NamedArrays &data, const std::map<std::string, Array> &given,
                                       const TrainOptions &train,
                                       llvm::function_ref<void(const TrainingSummary &)> onStart,
                                       llvm::function_ref<void(const EpochReport &)> onEpoch);

} // namespace mithril::runtime

#endif // MITHRIL_RUNTIME_TRAINING_H
