//===- ModelBuilderTest.cpp - building models from C++ --------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "mithril/Builder/ModelBuilder.h"
#include "mithril/Dialect/Mithril/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mithril;

namespace {
class ModelBuilderTest : public ::testing::Test {
protected:
  ModelBuilderTest() : module(ModuleOp::create(UnknownLoc::get(&ctx))) {
    ctx.loadDialect<MithrilDialect>();
  }
  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&ctx));
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

TEST_F(ModelBuilderTest, InfersResultTypes) {
  ModelBuilder b(*module, "Linear");
  Value x = *b.addInput("input", InputKind::Data, tensor({4, 8}));
  Value w = *b.addInput("weight", InputKind::Param, tensor({16, 8}));
  Value bias = *b.addInput("bias", InputKind::Param, tensor({16}));
  auto wt = b.addOp("transpose", {w});
  ASSERT_TRUE(succeeded(wt));
  auto mm = b.addOp("matmul", {x, (*wt)[0]});
  ASSERT_TRUE(succeeded(mm));
  auto y = b.addOp("mithril.add", {(*mm)[0], bias});
  ASSERT_TRUE(succeeded(y));
  EXPECT_EQ((*y)[0].getType(), tensor({4, 16}));
  ASSERT_TRUE(succeeded(b.addOutput("output", (*y)[0])));
  auto model = b.finish();
  ASSERT_TRUE(succeeded(model));
  EXPECT_EQ(model->getNumInputs(), 3u);
  EXPECT_EQ(model->getInputKind(1), InputKind::Param);
  EXPECT_EQ(model->getOutputName(0), "output");
  EXPECT_EQ(model->getFunctionType().getResult(0), tensor({4, 16}));
}

TEST_F(ModelBuilderTest, ReportsShapeErrorsWithTerminalNames) {
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  ModelBuilder b(*module, "Bad");
  Value x = *b.addInput("x", InputKind::Data, tensor({4, 8}));
  Value y = *b.addInput("y", InputKind::Data, tensor({4, 9}));
  EXPECT_TRUE(failed(b.addOp("add", {x, y}, {}, "sum")));
  EXPECT_EQ(message, "'mithril.add' cannot broadcast terminal 'x' (4x8) with terminal 'y' (4x9)");
  EXPECT_TRUE(failed(b.addOp("no_such_op", {x})));
  EXPECT_EQ(message, "unknown mithril primitive 'no_such_op'");
  EXPECT_TRUE(failed(b.addInput("x", InputKind::Data, tensor({1}))));
}

TEST_F(ModelBuilderTest, AttributesBecomeProperties) {
  ModelBuilder b(*module, "Reduce");
  Value x = *b.addInput("x", InputKind::Data, tensor({2, 3, 4}));
  Builder attrs(&ctx);
  auto sum = b.addOp("sum", {x},
                     {attrs.getNamedAttr("axes", attrs.getDenseI64ArrayAttr({0, 2})),
                      attrs.getNamedAttr("keepdim", attrs.getBoolAttr(true))});
  ASSERT_TRUE(succeeded(sum));
  EXPECT_EQ((*sum)[0].getType(), tensor({1, 3, 1}));
}

TEST_F(ModelBuilderTest, InstancesFlattenWithPaths) {
  ModelBuilder leaf(*module, "Scale");
  Value in = *leaf.addInput("input", InputKind::Data, tensor({4}));
  Value s = *leaf.addInput("scale", InputKind::Param, tensor({4}));
  Value y = (*leaf.addOp("multiply", {in, s}))[0];
  ASSERT_TRUE(succeeded(leaf.addOutput("output", y)));
  ModelOp leafModel = *leaf.finish();

  ModelBuilder top(*module, "Top");
  Value x = *top.addInput("x", InputKind::Data, tensor({4}));
  auto a = top.addInstance("first", leafModel, {{"input", x}});
  ASSERT_TRUE(succeeded(a));
  auto c = top.addInstance("second", leafModel, {{"input", (*a)[0]}});
  ASSERT_TRUE(succeeded(c));
  ASSERT_TRUE(succeeded(top.addOutput("y", (*c)[0])));
  ASSERT_TRUE(succeeded(top.finish()));

  PassManager pm(&ctx);
  pm.addPass(createMithrilFlatten());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto flat = module->lookupSymbol<ModelOp>("Top");
  ASSERT_TRUE(flat);
  ASSERT_EQ(flat.getNumInputs(), 3u);
  EXPECT_EQ(flat.getInputName(1), "first.scale");
  EXPECT_EQ(flat.getInputName(2), "second.scale");
  EXPECT_FALSE(module->lookupSymbol<ModelOp>("Scale"));
}
} // namespace
