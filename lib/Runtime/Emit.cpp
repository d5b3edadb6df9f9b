//===- Emit.cpp - IR, LLVM IR, assembly, objects and C headers of a model --===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "mithril/InitAllPasses.h"
#include "mithril/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;
using namespace mithril::runtime::detail;
using llvm::Expected;

/// Code with AMX tile instructions needs the process's permission for the
/// tile state first (Linux: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)), or
/// its first tile instruction raises SIGILL. The JIT asks before it runs
/// such code (hostAllowsAmxTiles); code emitted ahead of time asks for
/// itself, from a constructor that runs when the program or shared library
/// holding it is loaded.
static void requestAmxTilesAtLoad(llvm::Module &module) {
  bool usesTiles = llvm::any_of(module.functions(), [](llvm::Function &function) {
    llvm::StringRef name = function.getName();
    return function.isIntrinsic() &&
           (name.starts_with("llvm.x86.tile") || name.starts_with("llvm.x86.tdp") ||
            name.starts_with("llvm.x86.ldtilecfg"));
  });
  const llvm::Triple &triple = module.getTargetTriple();
  if (!usesTiles || !triple.isOSLinux() || triple.getArch() != llvm::Triple::x86_64)
    return;
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::FunctionCallee syscall =
      module.getOrInsertFunction("syscall", llvm::FunctionType::get(i64, {i64}, /*isVarArg=*/true));
  auto *request = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), /*isVarArg=*/false),
      llvm::GlobalValue::InternalLinkage, "mithril.request_amx_tiles", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", request));
  // SYS_arch_prctl (158), ARCH_REQ_XCOMP_PERM (0x1023), XFEATURE_XTILEDATA
  // (18). A refusal is left to show as the SIGILL it would be anyway.
  b.CreateCall(syscall, {llvm::ConstantInt::get(i64, 158), llvm::ConstantInt::get(i64, 0x1023),
                         llvm::ConstantInt::get(i64, 18)});
  b.CreateRetVoid();
  llvm::appendToGlobalCtors(module, request, /*Priority=*/65535);
}

/// The host code of a module lowered to the LLVM dialect, optimized for
/// the host CPU (or options.targetCpu) and printed as LLVM IR ("llvm"),
/// assembly ("asm") or an object file ("obj").
static Expected<std::string> emitHostCode(ModuleOp module, const CompileOptions &options,
                                          StringRef format) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return makeError("translation of the host code to LLVM IR failed");
  auto tm = hostTargetMachine(options.optLevel, options.targetCpu);
  if (!tm)
    return tm.takeError();
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), tm->get());
  constantsAsBytes(*llvmModule);
  // As the JIT compiles it.
  mergeKernelsModuloConstants(*llvmModule);
  if (llvm::Error err =
          llvmOptimizer(options.optLevel, options.schedule, tm->get())(llvmModule.get()))
    return std::move(err);
  requestAmxTilesAtLoad(*llvmModule);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "llvm") {
    llvmModule->print(os, nullptr);
    return out;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream bos(buffer);
  llvm::legacy::PassManager codegen;
  if ((*tm)->addPassesToEmitFile(codegen, bos, nullptr,
                                 format == "asm" ? llvm::CodeGenFileType::AssemblyFile
                                                 : llvm::CodeGenFileType::ObjectFile))
    return makeError("the host target cannot emit " + format);
  codegen.run(*llvmModule);
  return std::string(buffer.begin(), buffer.end());
}

/// Lowers with mithril-gpu-pipeline and prints the kernels (PTX) or the IR.
static Expected<std::string> emitGpu(ModuleOp module, const CompileOptions &options,
                                     StringRef format, StringRef stopAfter) {
  MLIRContext *ctx = module.getContext();
  DiagnosticCollector diags(*ctx);
  if (format != "ptx" && format != "mlir" && format != "llvm" && format != "asm" && format != "obj")
    return makeError("--target=cuda emits ptx, mlir, llvm, asm or obj, not " + format);
  // The whole GPU pipeline ends at "binary", the CPU one at "llvm".
  StringRef gpuStop = (format == "ptx" || stopAfter == "llvm") ? "binary" : stopAfter;
  if (llvm::Error err = runGpuPipeline(module, options, gpuStop))
    return std::move(err);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "mlir") {
    module.print(os);
    return out;
  }
  if (format == "llvm" || format == "asm" || format == "obj") {
    // The host code: kernel launches become calls into the CUDA runtime
    // library (mgpuModuleLoad, mgpuLaunchKernel, ...), the kernels an
    // embedded PTX module that the global constructors load.
    Expected<std::string> host = emitHostCode(module, options, format);
    if (!host)
      return makeError(diags.text + llvm::toString(host.takeError()));
    return host;
  }
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      os << "// kernel module @" << binary.getSymName() << " for " << options.gpuChip << "\n"
         << object.getObject().getValue() << "\n";
    }
  });
  if (out.empty())
    return makeError("@" + options.entry + " produced no GPU kernels");
  return out;
}

/// A C identifier made from a terminal name (`layer1.weight` -> layer1_weight).
static std::string cIdentifier(StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "t_" + id;
  return id;
}

static StringRef cType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::Bool:
    return "bool";
  // IEEE half and bfloat16 bit patterns.
  case DType::F16:
    return "uint16_t";
  case DType::BF16:
    return "uint16_t";
  case DType::I8:
    return "int8_t";
  case DType::I16:
    return "int16_t";
  }
  return "void";
}

/// A C header declaring the entry point of --emit=obj: one memref descriptor
/// struct per terminal, inputs then outputs, outputs written in place.
static Expected<std::string> emitHeader(ModuleOp module, const CompileOptions &options) {
  if (llvm::Error err = runPipeline(module, options, "autodiff"))
    return std::move(err);
  auto root = cast<ModelOp>(SymbolTable::lookupSymbolIn(module, options.entry));
  std::string entry = cIdentifier(options.entry);
  std::string guard = "MITHRIL_MODEL_" + llvm::StringRef(entry).upper() + "_H";
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "// Generated by mithril-run --emit=h for @" << options.entry << ".\n";
  if (options.target == "cuda")
    os << "// Link with the object from --emit=obj --target=cuda, -lmithril_cuda_runtime\n"
       << "// and -lmlir_c_runner_utils. Every buffer is GPU memory (cuMemAlloc or any\n"
       << "// allocator of the current CUDA context); the call returns once the kernels\n"
       << "// are done.\n";
  else
    os << "// Link with the object from --emit=obj and -lmlir_c_runner_utils; an object\n"
       << "// compiled for more than one thread (--num-threads, default: all of the\n"
       << "// compiling host's) also needs -lmlir_async_runtime.\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stdbool.h>\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  std::vector<std::pair<std::string, std::string>> params;
  auto describe = [&](StringRef name, Type type, bool isOutput) -> llvm::Error {
    auto info = describeTerminal(options.entry, name, type, InputKind::Data, !isOutput);
    if (!info)
      return info.takeError();
    std::string id = cIdentifier(name);
    std::string structName = entry + "_" + id + "_t";
    size_t rank = info->shape.size();
    os << "/// " << (isOutput ? "output" : "input") << " '" << name
       << "': " << dtypeName(info->dtype) << " " << runtime::formatShape(info->shape) << "\n"
       << "typedef struct {\n  " << cType(info->dtype) << " *allocated;\n  " << cType(info->dtype)
       << " *aligned;\n  int64_t offset;\n";
    if (rank)
      os << "  int64_t sizes[" << rank << "];\n  int64_t strides[" << rank << "];\n";
    os << "} " << structName << ";\n\n";
    params.emplace_back(structName, (isOutput ? "out_" : "in_") + id);
    return llvm::Error::success();
  };
  for (unsigned i = 0, e = root.getNumInputs(); i < e; ++i)
    if (llvm::Error err = describe(root.getInputName(i), root.getFunctionType().getInput(i), false))
      return std::move(err);
  for (unsigned i = 0, e = root.getNumOutputs(); i < e; ++i)
    if (llvm::Error err =
            describe(root.getOutputName(i), root.getFunctionType().getResult(i), true))
      return std::move(err);
  os << "/// Runs @" << options.entry << ". Sizes and strides are row-major; outputs are\n"
     << "/// written into the caller's buffers.\n"
     << "void _mlir_ciface_" << options.entry << "(";
  for (size_t i = 0; i < params.size(); ++i)
    os << (i ? ", " : "") << params[i].first << " *" << params[i].second;
  os << ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif // " << guard << "\n";
  return out;
}

Expected<std::string> mithril::runtime::runPasses(StringRef source, StringRef pipeline,
                                                  StringRef sourceName) {
  // The registry parsePassPipeline reads: upstream's generic transforms
  // (canonicalize, cse, ...) and every mithril pass and pipeline.
  static std::once_flag registered;
  std::call_once(registered, [] {
    mlir::registerTransformsPasses();
    mithril::registerAllPasses();
  });
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, sourceName);
  if (!module)
    return module.takeError();
  DiagnosticCollector diags(*ctx);
  PassManager pm(ctx.get());
  std::string parseErrors;
  llvm::raw_string_ostream errors(parseErrors);
  // The manager is anchored on the module already: an explicit
  // `builtin.module(...)` around the pipeline (mithril-opt's --pass-pipeline
  // form) would nest it under modules inside this one, and it would run on
  // nothing.
  StringRef passes = pipeline.trim();
  if (passes.consume_front("builtin.module(") && passes.consume_back(")"))
    pipeline = passes;
  if (failed(parsePassPipeline(pipeline, pm, errors)))
    return makeError("pass pipeline '" + pipeline + "': " + parseErrors);
  if (failed(pm.run(**module)))
    return makeError(diags.text + "reproduce with: mithril-opt --pass-pipeline='builtin.module(" +
                     pipeline + ")' " + sourceName);
  std::string out;
  llvm::raw_string_ostream os(out);
  (*module)->print(os);
  return out;
}

/// `options` with the entry model of `module` they name (or the only root).
static Expected<CompileOptions> withEntry(ModuleOp module, const CompileOptions &options) {
  auto entry = findEntry(module, options.entry);
  if (!entry)
    return entry.takeError();
  CompileOptions opts = options;
  opts.entry = entry->getSymName().str();
  return opts;
}

Expected<std::vector<TerminalInfo>> mithril::runtime::logicalInputs(StringRef source,
                                                                    const CompileOptions &options) {
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  auto opts = withEntry(**module, options);
  if (!opts)
    return opts.takeError();
  if (llvm::Error err = runPipeline(**module, *opts, "autodiff"))
    return std::move(err);
  auto root = cast<ModelOp>(SymbolTable::lookupSymbolIn(**module, opts->entry));
  std::vector<TerminalInfo> inputs;
  for (unsigned i = 0, e = root.getNumInputs(); i < e; ++i) {
    auto info = describeTerminal(opts->entry, root.getInputName(i),
                                 root.getFunctionType().getInput(i), root.getInputKind(i), true,
                                 /*allowDynamic=*/true);
    if (!info)
      return info.takeError();
    inputs.push_back(*info);
  }
  return inputs;
}

Expected<std::string> mithril::runtime::emit(StringRef source, const CompileOptions &options,
                                             StringRef format, StringRef stopAfter) {
  if (options.target != "cpu" && options.target != "cuda")
    return makeError("unknown target '" + options.target + "' (expected cpu or cuda)");
  if (format != "mlir" && format != "llvm" && format != "asm" && format != "obj" && format != "h" &&
      !(format == "ptx" && options.target == "cuda"))
    return makeError("unknown --emit format '" + format +
                     "' (expected mlir, llvm, asm, obj, h, or ptx with --target=cuda)");
  auto ctx = createContext();
  auto module = parseSource(*ctx, source, options.sourceName);
  if (!module)
    return module.takeError();
  auto entryOptions = withEntry(**module, options);
  if (!entryOptions)
    return entryOptions.takeError();
  CompileOptions opts = *entryOptions;
  if (llvm::Error err = checkTargetCpu(opts.targetCpu))
    return std::move(err);
  if (format == "h")
    return emitHeader(**module, opts);
  if (options.target == "cuda")
    return emitGpu(**module, opts, format, stopAfter);
  if (format != "mlir" && stopAfter != "llvm")
    return makeError("--mlir-stage applies to --emit=mlir only");
  if (llvm::Error err = runPipeline(**module, opts, stopAfter))
    return std::move(err);
  std::string out;
  llvm::raw_string_ostream os(out);
  if (format == "mlir") {
    (*module)->print(os);
    return out;
  }
  return emitHostCode(**module, options, format);
}
