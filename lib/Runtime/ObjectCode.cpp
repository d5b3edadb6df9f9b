//===- ObjectCode.cpp - a model's LLVM code compiled in pieces, and linked -===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// LLVM compiles one function on one thread, and its IR passes and code
// generation are most of a model's compile time. The pipeline's
// outline-kernels option gives every large kernel a function of its own;
// here the functions are dealt into pieces of about equal code, each
// optimized and compiled to an object file on a thread of its own (as
// LLVM's LTO does with its partitions), and the JIT links the objects.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/Analysis/InstructionSimplify.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/DeadArgumentElimination.h"
#include "llvm/Transforms/Utils/Local.h"

#include <atomic>
#include <numeric>
#include <thread>

using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;
using llvm::StringRef;

unsigned mithril::runtime::detail::compileThreadsFor(const CompileOptions &options) {
  if (options.compileThreads != 0)
    return options.compileThreads;
  // The CPUs this process may run on (its affinity mask), not the host's.
  unsigned available = llvm::hardware_concurrency().compute_thread_count();
  return std::clamp(available, 1u, 8u);
}

/// `module` compiled to an object file for `tm`.
void mithril::runtime::detail::constantsAsBytes(llvm::Module &module) {
  // Smaller arrays cost little either way.
  constexpr uint64_t kMinBytes = 4096;
  const llvm::DataLayout &layout = module.getDataLayout();
  llvm::Type *byte = llvm::Type::getInt8Ty(module.getContext());
  for (llvm::GlobalVariable &variable : llvm::make_early_inc_range(module.globals())) {
    if (!variable.hasInitializer() || !variable.isConstant())
      continue;
    auto *data = llvm::dyn_cast<llvm::ConstantDataSequential>(variable.getInitializer());
    if (!data || data->getElementType() == byte ||
        data->getNumElements() * data->getElementByteSize() < kMinBytes)
      continue;
    StringRef raw = data->getRawDataValues();
    llvm::Constant *bytes = llvm::ConstantDataArray::getRaw(raw, raw.size(), byte);
    auto *replacement = new llvm::GlobalVariable(
        module, bytes->getType(), /*isConstant=*/true, variable.getLinkage(), bytes, "", &variable,
        variable.getThreadLocalMode(), variable.getAddressSpace());
    replacement->copyAttributesFrom(&variable);
    // The alignment the array of its own type would have had (loads of it
    // may rely on it).
    replacement->setAlignment(layout.getPreferredAlign(&variable));
    replacement->takeName(&variable);
    variable.replaceAllUsesWith(replacement);
    variable.eraseFromParent();
  }
}

static Expected<std::string> emitObject(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return makeError("the target machine cannot emit object code");
  codegen.run(module);
  return std::string(buffer.begin(), buffer.end());
}

/// `_mlir_<name>(void **args)`: calls `name` with the value each args[i]
/// points to, as MLIR's ExecutionEngine packs its entry points (code saved
/// before this file existed has them, and run() calls through them).
static llvm::Error addPackedEntry(llvm::Module &module, StringRef name) {
  llvm::Function *callee = module.getFunction(name);
  if (!callee || callee->isDeclaration() || !callee->getReturnType()->isVoidTy())
    return makeError("internal error: no entry point " + name + " returning nothing");
  llvm::LLVMContext &context = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr}, false);
  auto *packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                        ("_mlir_" + name).str(), module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", packed));
  llvm::SmallVector<llvm::Value *> args;
  for (auto [i, arg] : llvm::enumerate(callee->args())) {
    llvm::Value *slot = builder.CreateConstGEP1_64(ptr, packed->getArg(0), i);
    llvm::Value *address = builder.CreateLoad(ptr, slot);
    args.push_back(builder.CreateLoad(arg.getType(), address));
  }
  builder.CreateCall(callee, args);
  builder.CreateRetVoid();
  return llvm::Error::success();
}

// The C interface `entryPoint` unpacks each memref descriptor into its
// pointers, offset, sizes and strides and passes them all, of which code
// compiled for static shapes reads the aligned pointer only. A CNN training
// step's call passed 127 arguments, 121 of them on the stack, whose stores
// cost LLVM's instruction selection more than any kernel but the model's
// own function (83 M instructions, 5% of its code generation). Only the
// C interface calls the model's function (the JIT enters through the
// packed `_mlir_` + `entryPoint`), so it becomes local, which lets dead
// argument elimination rewrite its signature; pieces make it external again.
void mithril::runtime::detail::dropUnreadEntryArguments(llvm::Module &module,
                                                        StringRef entryPoint) {
  StringRef name = entryPoint;
  if (!name.consume_front("_mlir_ciface_"))
    return;
  llvm::Function *model = module.getFunction(name);
  llvm::Function *wrapper = module.getFunction(entryPoint);
  if (!model || !wrapper || model->isDeclaration() || !model->hasOneUse())
    return;
  auto *call = llvm::dyn_cast<llvm::CallInst>(model->user_back());
  if (!call || call->getFunction() != wrapper || call->getCalledFunction() != model)
    return;
  // The body rebuilds each descriptor from the arguments and extracts the
  // fields it reads: those extracts read the arguments directly first (as
  // InstCombine does later), or every argument would count as read.
  // (A struct no extract reads any more goes, with the inserts that built
  // it; they all come before the extract.)
  llvm::SimplifyQuery query(module.getDataLayout());
  for (llvm::Instruction &instruction : llvm::make_early_inc_range(llvm::instructions(*model))) {
    auto *extract = llvm::dyn_cast<llvm::ExtractValueInst>(&instruction);
    if (!extract)
      continue;
    llvm::Value *aggregate = extract->getAggregateOperand();
    if (llvm::Value *field =
            llvm::simplifyExtractValueInst(aggregate, extract->getIndices(), query)) {
      extract->replaceAllUsesWith(field);
      extract->eraseFromParent();
      llvm::RecursivelyDeleteTriviallyDeadInstructions(aggregate);
    }
  }
  model->setLinkage(llvm::GlobalValue::InternalLinkage);
  llvm::ModuleAnalysisManager analyses;
  llvm::DeadArgumentEliminationPass().run(module, analyses);
}

/// What compiling `function` costs LLVM, in instructions' worth: a part
/// per function, its instructions but the memref descriptors' plumbing
/// (insertvalue, extractvalue), which InstCombine folds away, and more for
/// each block and call. Each function of four training steps (the bench
/// CNN's and MLP's, SGD and Adam: 164 functions) compiled alone cost LLVM
/// about 8 M instructions and 0.13 M an instruction, 0.9 M a block and
/// 0.5 M a call (callgrind): instructions alone explained 88% of the
/// variation, with blocks and calls 96%. Dealt by instructions alone, the
/// four steps' pieces took 2,798 M instructions on the busier of two
/// threads; by this estimate, 2,717 M (the CNN's Adam step 878 -> 790 M).
/// (Descriptor plumbing counted in, one of the MLP training step's two
/// pieces took 1.35x as long as the other.)
static uint64_t codegenCost(llvm::Function &function) {
  constexpr uint64_t kFunctionCost = 50, kBlockCost = 8, kCallCost = 4;
  uint64_t cost = kFunctionCost;
  for (llvm::BasicBlock &block : function) {
    cost += kBlockCost;
    for (llvm::Instruction &instruction : block) {
      if (llvm::isa<llvm::InsertValueInst, llvm::ExtractValueInst>(instruction))
        continue;
      cost += llvm::isa<llvm::CallBase>(instruction) ? 1 + kCallCost : 1;
    }
  }
  return cost;
}

/// The piece each function goes to: dearest first, each to the piece with
/// the least cost so far. `load` receives each piece's estimated cost.
static llvm::StringMap<unsigned> dealFunctions(llvm::Module &module, unsigned pieces,
                                               std::vector<uint64_t> &load) {
  llvm::SmallVector<std::pair<uint64_t, llvm::Function *>> functions;
  for (llvm::Function &function : module)
    if (!function.isDeclaration())
      functions.push_back({codegenCost(function), &function});
  llvm::stable_sort(functions, [](auto &a, auto &b) { return a.first > b.first; });
  load.assign(pieces, 0);
  llvm::StringMap<unsigned> pieceOf;
  for (auto [size, function] : functions) {
    unsigned lightest = std::min_element(load.begin(), load.end()) - load.begin();
    pieceOf[function->getName()] = lightest;
    load[lightest] += size + 1;
  }
  return pieceOf;
}

Expected<std::vector<std::string>>
mithril::runtime::detail::compileObjects(llvm::Module &module, const CompileOptions &options,
                                         StringRef entryPoint, unsigned threads,
                                         double &optimizeSeconds) {
  optimizeSeconds = 0;
  // A piece costs a target machine's passes over a module of its own and a
  // read of the bitcode: a small model compiles faster whole.
  constexpr uint64_t kMinPieceInstructions = 2000;
  // Pieces per thread. The estimate predicts a function's compile time only
  // roughly (a median function's is 17% off) and the host's cores slow
  // down each on its own, so the threads take more, smaller pieces, dearest
  // first, each the next one left when it is done. (One piece a thread:
  // 2,690 M instructions on the busier thread for the four steps above.)
  constexpr unsigned kPiecesPerThread = 2;
  // Before the pieces are counted: merging leaves less code to deal.
  mergeKernelsModuloConstants(module);
  uint64_t functions = 0, instructions = 0;
  for (llvm::Function &function : module) {
    functions += !function.isDeclaration();
    instructions += function.getInstructionCount();
  }
  uint64_t mostPieces =
      std::max<uint64_t>(1, std::min(functions, instructions / kMinPieceInstructions));
  threads = static_cast<unsigned>(std::clamp<uint64_t>(threads, 1, mostPieces));
  unsigned pieces = threads == 1 ? 1
                                 : static_cast<unsigned>(std::min<uint64_t>(
                                       uint64_t(threads) * kPiecesPerThread, mostPieces));
  // One target machine per thread: they are not shared.
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (unsigned thread = 0; thread < threads; ++thread) {
    auto tm = hostTargetMachine(options.optLevel, options.targetCpu);
    if (!tm)
      return tm.takeError();
    machines.push_back(std::move(*tm));
  }
  module.setDataLayout(machines[0]->createDataLayout());
  module.setTargetTriple(machines[0]->getTargetTriple());
  constantsAsBytes(module);
  if (llvm::Error err = addPackedEntry(module, entryPoint))
    return std::move(err);
  dropUnreadEntryArguments(module, entryPoint);

  if (pieces == 1) {
    auto start = Clock::now();
    if (llvm::Error err =
            llvmOptimizer(options.optLevel, options.schedule, machines[0].get())(&module))
      return std::move(err);
    optimizeSeconds = secondsSince(start);
    auto object = emitObject(module, *machines[0]);
    if (!object)
      return object.takeError();
    return std::vector<std::string>{std::move(*object)};
  }

  // What one piece defines and another calls or reads must be visible to
  // the other: local functions and variables become external (names are
  // unique within a module). Local constants stay local, in every piece
  // that reads them.
  for (llvm::GlobalValue &value : module.global_values()) {
    if (value.isDeclaration() || !value.hasLocalLinkage())
      continue;
    auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(&value);
    if (variable && variable->isConstant())
      continue;
    if (!value.hasName())
      value.setName("__mithril_local");
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::DefaultVisibility);
  }
  std::vector<uint64_t> load;
  llvm::StringMap<unsigned> pieceOf = dealFunctions(module, pieces, load);
  // Largest first: the last pieces taken are the small ones, which even
  // out the threads' ends.
  std::vector<unsigned> order(pieces);
  std::iota(order.begin(), order.end(), 0u);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) { return load[a] > load[b]; });
  // Each piece is read back from bitcode into a context of its own (an
  // LLVMContext serves one thread), lazily: only its own functions' bodies
  // are read. Piece 0 defines the variables.
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(module, os);
  }
  std::vector<std::string> objects(pieces), errors(pieces);
  std::vector<double> optimizeTimes(threads, 0);
  std::atomic<unsigned> next{0};
  auto compilePiece = [&](unsigned piece, llvm::TargetMachine &tm, double &optimizeTime) {
    llvm::LLVMContext context;
    auto parsed = llvm::getLazyBitcodeModule(
        llvm::MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()), "model"), context);
    if (!parsed) {
      errors[piece] = llvm::toString(parsed.takeError());
      return;
    }
    llvm::Module &part = **parsed;
    for (llvm::Function &function : part)
      if (!function.isDeclaration() && pieceOf.lookup(function.getName()) != piece)
        function.deleteBody();
    if (piece != 0)
      for (llvm::GlobalVariable &variable : part.globals())
        if (!variable.isDeclaration() && !(variable.hasLocalLinkage() && variable.isConstant())) {
          variable.setInitializer(nullptr);
          variable.setLinkage(llvm::GlobalValue::ExternalLinkage);
          variable.setComdat(nullptr);
        }
    if (llvm::Error err = part.materializeAll()) {
      errors[piece] = llvm::toString(std::move(err));
      return;
    }
    auto start = Clock::now();
    if (llvm::Error err = llvmOptimizer(options.optLevel, options.schedule, &tm)(&part)) {
      errors[piece] = llvm::toString(std::move(err));
      return;
    }
    optimizeTime += secondsSince(start);
    auto object = emitObject(part, tm);
    if (!object) {
      errors[piece] = llvm::toString(object.takeError());
      return;
    }
    objects[piece] = std::move(*object);
  };
  auto work = [&](unsigned thread) {
    for (unsigned taken; (taken = next.fetch_add(1)) < pieces;)
      compilePiece(order[taken], *machines[thread], optimizeTimes[thread]);
  };
  std::vector<std::thread> workers;
  for (unsigned thread = 1; thread < threads; ++thread)
    workers.emplace_back(work, thread);
  work(0);
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return makeError("LLVM code generation failed: " + error);
  optimizeSeconds = *std::max_element(optimizeTimes.begin(), optimizeTimes.end());
  return objects;
}

Expected<std::string> mithril::runtime::detail::packObjects(llvm::ArrayRef<std::string> objects) {
  if (objects.size() == 1)
    return objects.front();
  // The members' names are views: they live here until the archive is
  // written.
  std::vector<std::string> names;
  for (size_t i = 0; i < objects.size(); ++i)
    names.push_back("piece" + std::to_string(i) + ".o");
  std::vector<llvm::NewArchiveMember> members;
  for (auto [object, name] : llvm::zip(objects, names))
    members.emplace_back(llvm::MemoryBufferRef(object, name));
  auto archive = llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab,
                                            llvm::object::Archive::K_GNU, /*Deterministic=*/true,
                                            /*Thin=*/false);
  if (!archive)
    return makeError("cannot archive the object code: " + llvm::toString(archive.takeError()));
  return (*archive)->getBuffer().str();
}

Expected<std::unique_ptr<llvm::orc::LLJIT>>
mithril::runtime::detail::linkObjects(StringRef code, StringRef what,
                                      const llvm::StringMap<void *> *asyncSymbols,
                                      const llvm::StringMap<void *> &customCalls) {
  // RuntimeDyld, as MLIR's ExecutionEngine links; with MITHRIL_PERF=1,
  // `perf record -k 1` + `perf inject --jit` name the compiled functions.
  bool perf = getenv("MITHRIL_PERF") != nullptr;
  auto jit =
      llvm::orc::LLJITBuilder()
          .setObjectLinkingLayerCreator([perf](llvm::orc::ExecutionSession &session)
                                            -> Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
            auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                session, [](const llvm::MemoryBuffer &) {
                  return std::make_unique<llvm::SectionMemoryManager>();
                });
            if (perf)
              if (auto *listener = llvm::JITEventListener::createPerfJITEventListener())
                layer->registerJITEventListener(*listener);
            return std::move(layer);
          })
          .create();
  if (!jit)
    return makeError("cannot start the JIT: " + llvm::toString(jit.takeError()));
  // memrefCopy and the C library come from the process.
  if (llvm::sys::fs::exists(MITHRIL_C_RUNNER_UTILS))
    llvm::sys::DynamicLibrary::LoadLibraryPermanently(MITHRIL_C_RUNNER_UTILS);
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError("cannot search the process's symbols: " + llvm::toString(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  llvm::orc::MangleAndInterner interner((*jit)->getExecutionSession(), (*jit)->getDataLayout());
  if (llvm::Error err = (*jit)->getMainJITDylib().define(
          llvm::orc::absoluteSymbols(hostSymbols(interner, asyncSymbols, customCalls))))
    return makeError(llvm::toString(std::move(err)));

  auto add = [&](llvm::MemoryBufferRef object) -> llvm::Error {
    if (llvm::Error err = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
            object.getBuffer(), (what + " " + object.getBufferIdentifier()).str())))
      return makeError("the object code of " + what +
                       " does not load: " + llvm::toString(std::move(err)));
    return llvm::Error::success();
  };
  llvm::MemoryBufferRef buffer(code, what);
  if (!code.starts_with("!<arch>\n")) {
    if (llvm::Error err = add(buffer))
      return std::move(err);
    return std::move(*jit);
  }
  auto archive = llvm::object::Archive::create(buffer);
  if (!archive)
    return makeError("the object code of " + what +
                     " is a damaged archive: " + llvm::toString(archive.takeError()));
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child &child : (*archive)->children(err)) {
    auto member = child.getMemoryBufferRef();
    if (!member)
      return makeError("the object code of " + what +
                       " is a damaged archive: " + llvm::toString(member.takeError()));
    if (llvm::Error addErr = add(*member))
      return std::move(addErr);
  }
  if (err)
    return makeError("the object code of " + what +
                     " is a damaged archive: " + llvm::toString(std::move(err)));
  return std::move(*jit);
}
