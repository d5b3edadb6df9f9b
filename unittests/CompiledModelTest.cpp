//===- CompiledModelTest.cpp - JIT-compiled models with dynamic shapes ----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/CompiledModel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace mithril::runtime;

namespace {
// y = relu(x @ w + b) on a batch whose size stays dynamic.
constexpr const char *kDense = R"mlir(
mithril.model @Dense(data %x: tensor<?x3xf64>, param %w: tensor<3x2xf64>,
                     param %b: tensor<2xf64>) -> (y: tensor<?x2xf64>) {
  %mm = mithril.matmul %x, %w : (tensor<?x3xf64>, tensor<3x2xf64>) -> tensor<?x2xf64>
  %a = mithril.add %mm, %b : (tensor<?x2xf64>, tensor<2xf64>) -> tensor<?x2xf64>
  %y = mithril.relu %a : (tensor<?x2xf64>) -> tensor<?x2xf64>
  mithril.output %y : tensor<?x2xf64>
}
)mlir";

std::unique_ptr<CompiledModel> compileDynamic() {
  CompileOptions options;
  options.dynamicShapes = true;
  options.threads = 1;
  auto model = CompiledModel::compile(kDense, options);
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return nullptr;
  }
  return std::move(*model);
}

TEST(CompiledModel, OneCompilationRunsEveryBatchSize) {
  auto model = compileDynamic();
  ASSERT_TRUE(model);
  ASSERT_EQ(model->inputs()[0].shape[0], mlir::ShapedType::kDynamic);
  Array w(DType::F64, {3, 2}), b(DType::F64, {2});
  for (int i = 0; i < 6; ++i)
    w.as<double>()[i] = (i % 2 ? -1.0 : 1.0) * (i + 1) * 0.5;
  b.as<double>()[0] = 0.25;
  b.as<double>()[1] = -0.5;
  for (int64_t batch : {1, 5, 2, 64}) {
    Array x(DType::F64, {batch, 3});
    for (int64_t i = 0; i < batch * 3; ++i)
      x.as<double>()[i] = std::sin(0.7 * i + batch);
    const llvm::ArrayRef<int64_t> shapes[] = {x.shape(), w.shape(), b.shape()};
    auto outShapes = model->outputShapes(shapes);
    ASSERT_TRUE(bool(outShapes)) << llvm::toString(outShapes.takeError());
    ASSERT_EQ((*outShapes)[0], (llvm::SmallVector<int64_t>{batch, 2}));
    Array y(DType::F64, (*outShapes)[0]);
    TensorView in[] = {x.view(), w.view(), b.view()}, out[] = {y.view()};
    ASSERT_FALSE(bool(model->run(in, out)));
    for (int64_t r = 0; r < batch; ++r)
      for (int64_t c = 0; c < 2; ++c) {
        double want = b.as<double>()[c];
        for (int64_t k = 0; k < 3; ++k)
          want += x.as<double>()[r * 3 + k] * w.as<double>()[k * 2 + c];
        EXPECT_DOUBLE_EQ(y.as<double>()[r * 2 + c], std::max(want, 0.0)) << batch;
      }
  }
}

TEST(CompiledModel, DynamicShapesAreCheckedAtRunTime) {
  auto model = compileDynamic();
  ASSERT_TRUE(model);
  // The static dimension still has to match.
  const int64_t xShape[] = {4, 5}, wShape[] = {3, 2}, bShape[] = {2};
  const llvm::ArrayRef<int64_t> bad[] = {xShape, wShape, bShape};
  auto shapes = model->outputShapes(bad);
  ASSERT_FALSE(bool(shapes));
  std::string message = llvm::toString(shapes.takeError());
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
  Array x(DType::F64, {4, 5}), w(DType::F64, {3, 2}), b(DType::F64, {2}), y(DType::F64, {4, 2});
  TensorView in[] = {x.view(), w.view(), b.view()}, out[] = {y.view()};
  llvm::Error err = model->run(in, out);
  ASSERT_TRUE(bool(err));
  message = llvm::toString(std::move(err));
  EXPECT_NE(message.find("input 'x'"), std::string::npos) << message;
}

TEST(CompiledModel, OutputBuffersMustFitTheInputs) {
  auto model = compileDynamic();
  ASSERT_TRUE(model);
  Array x(DType::F64, {4, 3}), w(DType::F64, {3, 2}), b(DType::F64, {2}), y(DType::F64, {3, 2});
  TensorView in[] = {x.view(), w.view(), b.view()}, out[] = {y.view()};
  llvm::Error err = model->run(in, out);
  ASSERT_TRUE(bool(err));
  std::string message = llvm::toString(std::move(err));
  EXPECT_NE(message.find("output 'y': expected float64 [4, 2]"), std::string::npos) << message;
}

TEST(CompiledModel, StaticCompilationRejectsDynamicOutputs) {
  CompileOptions options;
  auto model = CompiledModel::compile(kDense, options);
  ASSERT_FALSE(bool(model));
  std::string message = llvm::toString(model.takeError());
  EXPECT_NE(message.find("give the shapes"), std::string::npos) << message;
}
} // namespace
