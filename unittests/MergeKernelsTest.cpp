//===- MergeKernelsTest.cpp - kernels that differ only in constants -------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "../lib/Runtime/Driver.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

using mithril::runtime::detail::mergeKernelsModuloConstants;

namespace {
struct Parsed {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  explicit Parsed(const char *text) {
    llvm::SMDiagnostic error;
    module = llvm::parseAssemblyString(text, error, context);
    EXPECT_TRUE(module) << error.getMessage().str();
  }
  bool verifies() const { return !llvm::verifyModule(*module, &llvm::errs()); }
  /// Merges functions of any size; the module must still verify.
  unsigned merge() {
    unsigned wrapped = mergeKernelsModuloConstants(*module, 1);
    EXPECT_TRUE(verifies());
    return wrapped;
  }
  /// The call a wrapper makes, or null where `name` is not one.
  llvm::CallInst *wrapperCall(llvm::StringRef name) const {
    llvm::Function *function = module->getFunction(name);
    if (!function || function->size() != 1 || function->front().size() != 2)
      return nullptr;
    auto *call = llvm::dyn_cast<llvm::CallInst>(&function->front().front());
    if (!call || !call->getCalledFunction() ||
        !call->getCalledFunction()->getName().ends_with(".merged"))
      return nullptr;
    return call;
  }
};

int64_t constantArgument(llvm::CallInst *call, unsigned index) {
  auto *constant = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(index));
  return constant ? constant->getSExtValue() : -1;
}

/// A loop of `bound` steps over rows `stride` floats apart: copying a vector
/// of each row to `d`, or (`computes`) summing their squares in a register,
/// as a register tile's reduction does.
std::string loopKernel(const char *name, int64_t stride, int64_t bound, bool computes) {
  std::string accumulator =
      computes ? "\n  %acc = phi <16 x float> [ zeroinitializer, %entry ], [ %sum, %loop ]" : "";
  std::string body = computes ? R"(
  %product = fmul <16 x float> %v, %v
  %sum = fadd <16 x float> %acc, %product)"
                              : R"(
  %to = getelementptr <16 x float>, ptr %d, i64 %i
  store <16 x float> %v, ptr %to)";
  return std::string("define void @") + name + R"((ptr %d, ptr %s) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ])" +
         accumulator + R"(
  %from = mul i64 %i, )" +
         std::to_string(stride) + R"(
  %at = getelementptr float, ptr %s, i64 %from
  %v = load <16 x float>, ptr %at)" +
         body + R"(
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, )" +
         std::to_string(bound) + R"(
  br i1 %done, label %exit, label %loop
exit:)" + (computes ? "\n  store <16 x float> %sum, ptr %d" : "") +
         R"(
  ret void
}
)";
}
} // namespace

// A batch stride (8192 or 16384, at two sites: one parameter) and a chunk
// size (16 or 32) differ: one body, two parameters, and each function calls
// it with its own constants.
TEST(MergeKernelsTest, ConstantsBecomeParameters) {
  auto pool = [](const char *name, int chunk, int stride) {
    std::string c = std::to_string(chunk), s = std::to_string(stride);
    return std::string("define void @") + name + R"((ptr %p, i64 %chunk) {
  %start = mul i64 %chunk, )" +
           c + R"(
  %offset = mul i64 %start, )" +
           s + R"(
  %a = getelementptr float, ptr %p, i64 %offset
  store float 1.0, ptr %a
  %again = mul i64 %chunk, )" +
           s + R"(
  %b = getelementptr float, ptr %p, i64 %again
  store float 2.0, ptr %b
  ret void
}
)";
  };
  std::string text = pool("pool32", 16, 8192) + pool("pool64", 32, 16384);
  Parsed ir(text.c_str());
  ASSERT_TRUE(ir.module);
  EXPECT_EQ(ir.merge(), 2u);
  llvm::CallInst *first = ir.wrapperCall("pool32"), *second = ir.wrapperCall("pool64");
  ASSERT_TRUE(first && second);
  llvm::Function *merged = first->getCalledFunction();
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged, second->getCalledFunction());
  EXPECT_TRUE(merged->hasLocalLinkage());
  EXPECT_TRUE(merged->hasFnAttribute(llvm::Attribute::NoInline));
  ASSERT_EQ(merged->arg_size(), 4u);
  EXPECT_EQ(constantArgument(first, 2), 16);
  EXPECT_EQ(constantArgument(first, 3), 8192);
  EXPECT_EQ(constantArgument(second, 2), 32);
  EXPECT_EQ(constantArgument(second, 3), 16384);
  // The wrappers pass their own arguments through.
  EXPECT_EQ(first->getArgOperand(0), ir.module->getFunction("pool32")->getArg(0));
  EXPECT_EQ(first->getArgOperand(1), ir.module->getFunction("pool32")->getArg(1));
  // The body reads the parameters where the constants were.
  unsigned uses = merged->getArg(3)->getNumUses();
  EXPECT_EQ(uses, 2u);
}

TEST(MergeKernelsTest, IdenticalFunctionsShareOneBody) {
  Parsed ir(R"(
define i64 @f(i64 %x) {
  %y = mul i64 %x, 3
  %z = add i64 %y, 1
  ret i64 %z
}
define i64 @g(i64 %x) {
  %y = mul i64 %x, 3
  %z = add i64 %y, 1
  ret i64 %z
}
)");
  ASSERT_TRUE(ir.module);
  EXPECT_EQ(ir.merge(), 2u);
  llvm::CallInst *f = ir.wrapperCall("f"), *g = ir.wrapperCall("g");
  ASSERT_TRUE(f && g);
  EXPECT_EQ(f->getCalledFunction(), g->getCalledFunction());
  EXPECT_EQ(f->getCalledFunction()->arg_size(), 1u);
  // The wrapper returns the body's result.
  auto *ret = llvm::dyn_cast<llvm::ReturnInst>(f->getNextNode());
  ASSERT_TRUE(ret);
  EXPECT_EQ(ret->getReturnValue(), f);
}

// Where a constant compiles differently from a value, the functions stay
// apart: a divisor (a multiplication by its inverse), an intrinsic's
// immediate, a struct field's index, and the stride of a loop that computes
// on vectors of floats (a register tile's rows, a depth apart).
TEST(MergeKernelsTest, ConstantsThatShapeCodeStay) {
  std::string text = loopKernel("tile784", 784, 16, /*computes=*/true) +
                     loopKernel("tile512", 512, 16, /*computes=*/true) + R"(
define i64 @div7(i64 %x) {
  %y = udiv i64 %x, 7
  ret i64 %y
}
define i64 @div9(i64 %x) {
  %y = udiv i64 %x, 9
  ret i64 %y
}
define void @copy4(ptr %d, ptr %s) {
  call void @llvm.memcpy.p0.p0.i64(ptr %d, ptr %s, i64 4, i1 false)
  ret void
}
define void @copy8(ptr %d, ptr %s) {
  call void @llvm.memcpy.p0.p0.i64(ptr %d, ptr %s, i64 8, i1 true)
  ret void
}
define ptr @field0(ptr %p) {
  %q = getelementptr {i64, i64}, ptr %p, i64 0, i32 0
  ret ptr %q
}
define ptr @field1(ptr %p) {
  %q = getelementptr {i64, i64}, ptr %p, i64 0, i32 1
  ret ptr %q
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
)";
  Parsed ir(text.c_str());
  ASSERT_TRUE(ir.module);
  EXPECT_EQ(ir.merge(), 0u);
  for (const char *name : {"div7", "copy4", "field0", "tile784"})
    EXPECT_FALSE(ir.wrapperCall(name)) << name;
}

// A copy loop (no arithmetic on floats) may take its stride as a parameter,
// but not its bound (LLVM unrolls short innermost loops by it); functions of
// another form, or below the size, stay.
TEST(MergeKernelsTest, LoopsThatOnlyMoveData) {
  std::string text = loopKernel("copy16", 256, 16, /*computes=*/false) +
                     loopKernel("copy16wide", 272, 16, /*computes=*/false) +
                     loopKernel("copy32", 256, 32, /*computes=*/false);
  text += R"(
define void @other(ptr %d, ptr %s) {
  %v = load <16 x float>, ptr %s
  store <16 x float> %v, ptr %d
  ret void
}
)";
  {
    Parsed ir(text.c_str());
    ASSERT_TRUE(ir.module);
    // Ten instructions each: below a minimum of 64 nothing changes.
    EXPECT_EQ(mergeKernelsModuloConstants(*ir.module), 0u);
  }
  Parsed ir(text.c_str());
  ASSERT_TRUE(ir.module);
  EXPECT_EQ(ir.merge(), 2u);
  llvm::CallInst *first = ir.wrapperCall("copy16"), *second = ir.wrapperCall("copy16wide");
  ASSERT_TRUE(first && second);
  ASSERT_EQ(first->arg_size(), 3u);
  EXPECT_EQ(constantArgument(first, 2), 256);
  EXPECT_EQ(constantArgument(second, 2), 272);
  EXPECT_FALSE(ir.wrapperCall("copy32"));
  EXPECT_FALSE(ir.wrapperCall("other"));
}
