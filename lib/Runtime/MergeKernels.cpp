//===- MergeKernels.cpp - one body for kernels that differ in constants ---===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// The schedule gives ops of the same form the same kernel code, specialized
// to each op's sizes and strides: the CNN training step's pooling gradients
// of 32 and 64 channels differ in a batch stride and a chunk's channel count,
// and the MLP training step has four pairs of identical chunk functions.
// Once translated to LLVM IR, such kernels differ only in integer constants,
// and LLVM would optimize and compile each. Here each group of them becomes
// one function that takes the differing constants as parameters, and every
// member a wrapper that calls it with its own: a tenth to a fifth less code
// to compile in the training steps and the MLP's inference. (LLVM's
// MergeFunctions merges only identical functions.)
//
// A constant becomes a parameter only where a value may stand without
// changing what the instruction means or how it compiles much: arithmetic
// (not a divisor: division by a constant is a multiplication), comparisons
// (not an innermost loop's bound), selects, phis, stored and inserted values,
// array indices of addresses and arguments of calls to functions that are
// not intrinsics; and nowhere in or around a loop that computes on vectors,
// whose constant strides and bounds shape a register tile (the MLP layers'
// products, 784 and 512 deep, stay two functions).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <map>
#include <tuple>

using namespace llvm;

namespace {
/// At most this many constants become parameters of one merged function:
/// beyond it the functions are not near-duplicates but different kernels
/// that happen to share a form.
constexpr unsigned kMostParameters = 8;

/// An operand of a function's instruction: the instruction's position in the
/// function (blocks in order) and the operand's index.
struct Site {
  unsigned instruction;
  unsigned operand;
  bool operator==(const Site &other) const {
    return instruction == other.instruction && operand == other.operand;
  }
  bool operator<(const Site &other) const {
    return std::tie(instruction, operand) < std::tie(other.instruction, other.operand);
  }
};
} // namespace

template <> struct llvm::DenseMapInfo<Site> {
  static Site getEmptyKey() { return {~0u, 0}; }
  static Site getTombstoneKey() { return {~0u - 1, 0}; }
  static unsigned getHashValue(const Site &site) {
    return static_cast<unsigned>(hash_combine(site.instruction, site.operand));
  }
  static bool isEqual(const Site &a, const Site &b) { return a == b; }
};

/// Whether operand `index` of `instruction` may be a parameter instead of a
/// constant.
static bool mayBeParameter(const Instruction &instruction, unsigned index, const LoopInfo &loops,
                           const DenseSet<const Loop *> &computing) {
  // Not in the loops of a product or a convolution (nor around them): there
  // a constant stride folds into the addressing and a constant bound into
  // the unrolling, and a register more costs the tile (with its depth a
  // parameter, an MLP layer's kernel took 5% longer on an Intel Xeon with AMX,
  // avx512f).
  if (computing.contains(loops.getLoopFor(instruction.getParent())))
    return false;
  if (const auto *binary = dyn_cast<BinaryOperator>(&instruction)) {
    switch (binary->getOpcode()) {
    case Instruction::UDiv:
    case Instruction::SDiv:
    case Instruction::URem:
    case Instruction::SRem:
      return index == 0;
    default:
      return true;
    }
  }
  if (isa<SelectInst, PHINode>(instruction))
    return true;
  // A loop's bound, but for innermost loops (a reduction's depth), whose
  // constant trip counts LLVM unrolls and schedules by.
  if (isa<ICmpInst>(instruction)) {
    const Loop *loop = loops.getLoopFor(instruction.getParent());
    return !loop || !loop->isInnermost();
  }
  if (isa<InsertValueInst, InsertElementInst>(instruction))
    return index == 1; // the value, not the position
  if (isa<StoreInst>(instruction))
    return index == 0; // the value stored
  if (const auto *gep = dyn_cast<GetElementPtrInst>(&instruction)) {
    if (index == 0)
      return false;
    // A struct's field is named by a constant.
    gep_type_iterator type = gep_type_begin(gep);
    std::advance(type, index - 1);
    return !type.isStruct();
  }
  if (const auto *call = dyn_cast<CallInst>(&instruction)) {
    const Function *callee = call->getCalledFunction();
    return callee && !callee->isIntrinsic() && index < call->arg_size();
  }
  return false;
}

/// Whether `instruction` computes on vectors: arithmetic on floats, integer
/// products (int8 without dot products), FMAs, or an x86 intrinsic (dot
/// products, AMX tiles).
static bool computes(const Instruction &instruction) {
  if (const auto *call = dyn_cast<IntrinsicInst>(&instruction)) {
    Intrinsic::ID id = call->getIntrinsicID();
    return id == Intrinsic::fma || id == Intrinsic::fmuladd ||
           call->getCalledFunction()->getName().starts_with("llvm.x86.");
  }
  Type *type = instruction.getType();
  return isa<BinaryOperator>(instruction) && type->isVectorTy() &&
         (type->isFPOrFPVectorTy() || instruction.getOpcode() == Instruction::Mul);
}

/// The loops that compute on vectors, and the loops around them.
static DenseSet<const Loop *> computingLoops(const LoopInfo &loops) {
  DenseSet<const Loop *> computing;
  for (const Loop *loop : loops.getLoopsInPreorder()) {
    bool computesHere = any_of(loop->blocks(), [&](const BasicBlock *block) {
      return loops.getLoopFor(block) == loop && any_of(*block, computes);
    });
    if (!computesHere)
      continue;
    for (const Loop *around = loop; around && computing.insert(around).second;)
      around = around->getParentLoop();
  }
  return computing;
}

/// A hash of what the comparison below requires to be equal: the type and
/// the opcodes in order.
static hash_code shapeHash(const Function &function) {
  hash_code hash = hash_combine(function.getFunctionType(), function.size());
  for (const BasicBlock &block : function)
    for (const Instruction &instruction : block)
      hash = hash_combine(hash, instruction.getOpcode(), instruction.getType());
  return hash;
}

/// Whether `other` is `base` but for integer constants at sites that may be
/// parameters; `constants` receives other's constant at each such site.
static bool sameButConstants(const Function &base, const LoopInfo &loops,
                             const DenseSet<const Loop *> &computing, const Function &other,
                             DenseMap<Site, ConstantInt *> &constants) {
  if (base.getFunctionType() != other.getFunctionType() ||
      base.getAttributes() != other.getAttributes() ||
      base.getCallingConv() != other.getCallingConv() || base.size() != other.size())
    return false;
  // Other's values to base's: arguments, blocks and instructions alike.
  DenseMap<const Value *, const Value *> counterpart;
  for (auto [a, b] : zip(base.args(), other.args()))
    counterpart[&b] = &a;
  for (auto [a, b] : zip(base, other)) {
    if (a.size() != b.size())
      return false;
    counterpart[&b] = &a;
    for (auto [x, y] : zip(a, b))
      counterpart[&y] = &x;
  }
  unsigned position = 0;
  SmallVector<std::pair<unsigned, MDNode *>> baseMetadata, otherMetadata;
  for (auto [a, b] : zip(base, other)) {
    for (auto [x, y] : zip(a, b)) {
      unsigned here = position++;
      if (!x.isSameOperationAs(&y) ||
          x.getRawSubclassOptionalData() != y.getRawSubclassOptionalData())
        return false;
      baseMetadata.clear();
      otherMetadata.clear();
      x.getAllMetadata(baseMetadata);
      y.getAllMetadata(otherMetadata);
      if (baseMetadata != otherMetadata)
        return false;
      if (const auto *phi = dyn_cast<PHINode>(&x))
        for (auto [from, otherFrom] : zip(phi->blocks(), cast<PHINode>(y).blocks()))
          if (counterpart.lookup(otherFrom) != from)
            return false;
      for (unsigned i = 0, e = x.getNumOperands(); i < e; ++i) {
        const Value *u = x.getOperand(i), *v = y.getOperand(i);
        if (auto it = counterpart.find(v); it != counterpart.end()) {
          if (it->second != u)
            return false;
          continue;
        }
        if (u == v)
          continue;
        auto *uc = dyn_cast<ConstantInt>(u);
        auto *vc = dyn_cast<ConstantInt>(v);
        if (!uc || !vc || uc->getType() != vc->getType() || !mayBeParameter(x, i, loops, computing))
          return false;
        constants[{here, i}] = const_cast<ConstantInt *>(vc);
      }
    }
  }
  return true;
}

/// `members[0]`'s body, with a parameter for each distinct column of
/// constants, called by a wrapper in place of every member's body; false
/// (nothing changed) where there would be too many parameters.
static bool mergeGroup(ArrayRef<Function *> members,
                       ArrayRef<DenseMap<Site, ConstantInt *>> constants) {
  Function &base = *members.front();
  // Every site where some member differs from the base, in order.
  SmallVector<Site> sites;
  for (const auto &differences : constants)
    for (const auto &entry : differences)
      sites.push_back(entry.first);
  llvm::sort(sites);
  sites.erase(llvm::unique(sites), sites.end());
  SmallVector<Instruction *> baseInstructions;
  for (BasicBlock &block : base)
    for (Instruction &instruction : block)
      baseInstructions.push_back(&instruction);
  // One parameter per distinct column of constants (the members' values at
  // a site): a stride that appears at thirty sites is one parameter.
  std::map<SmallVector<ConstantInt *, 4>, unsigned> parameterOf;
  SmallVector<SmallVector<ConstantInt *, 4>> columns;
  SmallVector<unsigned> siteParameter;
  for (const Site &site : sites) {
    SmallVector<ConstantInt *, 4> column;
    column.push_back(
        cast<ConstantInt>(baseInstructions[site.instruction]->getOperand(site.operand)));
    for (const auto &differences : constants.drop_front()) {
      ConstantInt *value = differences.lookup(site);
      column.push_back(value ? value : column.front());
    }
    auto [it, inserted] = parameterOf.try_emplace(column, columns.size());
    if (inserted)
      columns.push_back(column);
    siteParameter.push_back(it->second);
  }
  // (Identical functions merge too, with no parameter.)
  if (columns.size() > kMostParameters)
    return false;

  FunctionType *baseType = base.getFunctionType();
  SmallVector<Type *> parameterTypes(baseType->params());
  for (const auto &column : columns)
    parameterTypes.push_back(column.front()->getType());
  auto *type = FunctionType::get(baseType->getReturnType(), parameterTypes, false);
  Function *merged = Function::Create(type, GlobalValue::InternalLinkage,
                                      base.getName() + ".merged", base.getParent());
  ValueToValueMapTy mapping;
  for (auto [from, to] : zip(base.args(), merged->args()))
    mapping[&from] = &to;
  SmallVector<ReturnInst *> returns;
  CloneFunctionInto(merged, &base, mapping, CloneFunctionChangeType::LocalChangesOnly, returns);
  // (Cloning copied the base's linkage-dependent flags: a local function is
  // DSO-local.)
  merged->setLinkage(GlobalValue::InternalLinkage);
  // The wrappers stay small: the body is compiled once.
  merged->addFnAttr(Attribute::NoInline);
  unsigned firstParameter = baseType->getNumParams();
  for (auto [site, parameter] : zip(sites, siteParameter)) {
    auto *clone = cast<Instruction>(mapping[baseInstructions[site.instruction]]);
    clone->setOperand(site.operand, merged->getArg(firstParameter + parameter));
  }

  for (auto [index, member] : llvm::enumerate(members)) {
    GlobalValue::LinkageTypes linkage = member->getLinkage();
    member->deleteBody(); // (which makes it external)
    member->setLinkage(linkage);
    IRBuilder<> builder(BasicBlock::Create(member->getContext(), "entry", member));
    SmallVector<Value *> arguments;
    for (Argument &argument : member->args())
      arguments.push_back(&argument);
    for (const auto &column : columns)
      arguments.push_back(column[index]);
    CallInst *call = builder.CreateCall(merged, arguments);
    call->setTailCall();
    if (type->getReturnType()->isVoidTy())
      builder.CreateRetVoid();
    else
      builder.CreateRet(call);
  }
  return true;
}

unsigned mithril::runtime::detail::mergeKernelsModuloConstants(Module &module,
                                                               unsigned minInstructions) {
  // Candidates by the shape of their code; groups within a shape.
  MapVector<hash_code, SmallVector<Function *>> byShape;
  for (Function &function : module)
    if (!function.isDeclaration() && !function.isVarArg() &&
        function.getInstructionCount() >= minInstructions)
      byShape[shapeHash(function)].push_back(&function);
  unsigned wrapped = 0;
  for (auto &[hash, functions] : byShape) {
    SmallVector<Function *> left(functions);
    while (left.size() > 1) {
      SmallVector<Function *> members{left.front()}, rest;
      SmallVector<DenseMap<Site, ConstantInt *>> constants(1);
      DominatorTree dominance(*members.front());
      LoopInfo loops(dominance);
      DenseSet<const Loop *> computing = computingLoops(loops);
      for (Function *other : ArrayRef(left).drop_front()) {
        DenseMap<Site, ConstantInt *> differences;
        if (sameButConstants(*members.front(), loops, computing, *other, differences)) {
          members.push_back(other);
          constants.push_back(std::move(differences));
        } else {
          rest.push_back(other);
        }
      }
      if (members.size() > 1 && mergeGroup(members, constants))
        wrapped += members.size();
      left = std::move(rest);
    }
  }
  return wrapped;
}
