//===- EntryArgumentsTest.cpp - the model function's unread arguments -----===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/Driver.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using mithril::runtime::detail::dropUnreadEntryArguments;

namespace {
/// A model function as the LLVM dialect translates it: each memref argument
/// expanded into (allocated, aligned, offset, size, stride), rebuilt into a
/// descriptor, of which the body reads the aligned pointer (and, for `x`,
/// the size); and its C interface, which loads the fields from descriptors
/// and passes them all.
constexpr const char *kModel = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

define void @Model(ptr %xa, ptr %x, i64 %xo, i64 %xn, i64 %xs, ptr %ya, ptr %y, i64 %yo, i64 %yn, i64 %ys) {
  %d0 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %xa, 0
  %d1 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d0, ptr %x, 1
  %d2 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d1, i64 %xo, 2
  %d3 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d2, i64 %xn, 3, 0
  %d4 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d3, i64 %xs, 4, 0
  %e0 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %ya, 0
  %e1 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %e0, ptr %y, 1
  %e2 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %e1, i64 %yo, 2
  %e3 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %e2, i64 %yn, 3, 0
  %e4 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %e3, i64 %ys, 4, 0
  %from = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d4, 1
  %n = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d4, 3, 0
  %to = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %e4, 1
  %last = getelementptr float, ptr %from, i64 %n
  %v = load float, ptr %last
  store float %v, ptr %to
  ret void
}

define void @_mlir_ciface_Model(ptr %xd, ptr %yd) {
  %xa = load ptr, ptr %xd
  %xp = getelementptr i8, ptr %xd, i64 8
  %x = load ptr, ptr %xp
  %xop = getelementptr i8, ptr %xd, i64 16
  %xo = load i64, ptr %xop
  %xnp = getelementptr i8, ptr %xd, i64 24
  %xn = load i64, ptr %xnp
  %xsp = getelementptr i8, ptr %xd, i64 32
  %xs = load i64, ptr %xsp
  %ya = load ptr, ptr %yd
  %yp = getelementptr i8, ptr %yd, i64 8
  %y = load ptr, ptr %yp
  call void @Model(ptr %xa, ptr %x, i64 %xo, i64 %xn, i64 %xs, ptr %ya, ptr %y, i64 0, i64 1, i64 1)
  ret void
}
)";

struct Parsed {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  explicit Parsed(const std::string &text) {
    llvm::SMDiagnostic error;
    module = llvm::parseAssemblyString(text, error, context);
    EXPECT_TRUE(module) << error.getMessage().str();
  }
  bool verifies() const { return !llvm::verifyModule(*module, &llvm::errs()); }
  llvm::CallInst *callIn(llvm::StringRef name) const {
    for (llvm::Instruction &instruction : module->getFunction(name)->front())
      if (auto *call = llvm::dyn_cast<llvm::CallInst>(&instruction))
        return call;
    return nullptr;
  }
};

TEST(EntryArguments, OnlyTheReadOnesStay) {
  Parsed parsed(kModel);
  dropUnreadEntryArguments(*parsed.module, "_mlir_ciface_Model");
  ASSERT_TRUE(parsed.verifies());
  llvm::Function *model = parsed.module->getFunction("Model");
  ASSERT_TRUE(model);
  // x's aligned pointer and size, y's aligned pointer, in their order.
  ASSERT_EQ(model->arg_size(), 3u);
  EXPECT_TRUE(model->getArg(0)->getType()->isPointerTy());
  EXPECT_TRUE(model->getArg(1)->getType()->isIntegerTy(64));
  EXPECT_TRUE(model->getArg(2)->getType()->isPointerTy());
  llvm::CallInst *call = parsed.callIn("_mlir_ciface_Model");
  ASSERT_TRUE(call);
  ASSERT_EQ(call->arg_size(), 3u);
  EXPECT_EQ(call->getArgOperand(0)->getName(), "x");
  EXPECT_EQ(call->getArgOperand(1)->getName(), "xn");
  EXPECT_EQ(call->getArgOperand(2)->getName(), "y");
  // The load reads x's last element: the size feeds the address.
  auto *load = llvm::cast<llvm::LoadInst>(&*std::next(model->front().begin()));
  auto *address = llvm::cast<llvm::GetElementPtrInst>(load->getPointerOperand());
  EXPECT_EQ(address->getPointerOperand(), model->getArg(0));
  EXPECT_EQ(address->getOperand(1), model->getArg(1));
}

TEST(EntryArguments, AnotherCallerKeepsTheSignature) {
  std::string text = std::string(kModel) + R"(
define void @Other(ptr %p) {
  call void @Model(ptr %p, ptr %p, i64 0, i64 1, i64 1, ptr %p, ptr %p, i64 0, i64 1, i64 1)
  ret void
}
)";
  Parsed parsed(text);
  dropUnreadEntryArguments(*parsed.module, "_mlir_ciface_Model");
  ASSERT_TRUE(parsed.verifies());
  llvm::Function *model = parsed.module->getFunction("Model");
  EXPECT_EQ(model->arg_size(), 10u);
  EXPECT_FALSE(model->hasLocalLinkage());
}

TEST(EntryArguments, NoCInterfaceNoChange) {
  Parsed parsed(kModel);
  dropUnreadEntryArguments(*parsed.module, "Model");
  EXPECT_EQ(parsed.module->getFunction("Model")->arg_size(), 10u);
}
} // namespace
