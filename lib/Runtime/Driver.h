//===- Driver.h - shared pieces of the runtime's compiler driver -*- C++ -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Internal to lib/Runtime: what CompiledModel.cpp, PipelineRunner.cpp,
// Emit.cpp, DataParallel.cpp and HostServices.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_LIB_RUNTIME_DRIVER_H
#define MITHRIL_LIB_RUNTIME_DRIVER_H

#include "mithril/Dialect/Mithril/IR/MithrilOps.h"
#include "mithril/Runtime/CompiledModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <csetjmp>
#include <functional>
#include <optional>

namespace mithril::runtime::detail {

llvm::Error makeError(const llvm::Twine &message);

/// Writes a location the way compilers do: `file:line:col`, or the path of
/// the op or terminal it names.
void printLocation(llvm::raw_ostream &os, mlir::Location loc);

/// Collects diagnostics as text while in scope.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          printLocation(os, diag.getLocation());
          os << ": "
             << (diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error: "
                 : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning: "
                                                                           : "note: ")
             << diag << "\n";
          for (mlir::Diagnostic &note : diag.getNotes()) {
            printLocation(os, note.getLocation());
            os << ": note: " << note << "\n";
          }
          return mlir::success();
        }) {}
  std::string text;

private:
  mlir::ScopedDiagnosticHandler handler;
};

using Clock = std::chrono::steady_clock;
inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Success for no target CPU or one LLVM knows; an error naming it otherwise.
llvm::Error checkTargetCpu(llvm::StringRef cpu);

/// The option string of mithril-cpu-pipeline for `options`, from after
/// `startAfter` up to `stopAfter`.
std::string pipelineOptions(const CompileOptions &options, llvm::StringRef stopAfter,
                            llvm::StringRef startAfter);

/// Runs mithril-cpu-pipeline's stages after `startAfter` up to `stopAfter`;
/// on failure the error holds the diagnostics and the reproducing command.
llvm::Error runPipeline(mlir::ModuleOp module, const CompileOptions &options,
                        llvm::StringRef stopAfter, llvm::StringRef startAfter = "",
                        bool forJit = false, std::vector<PhaseTiming> *stages = nullptr);

/// Runs mithril-gpu-pipeline up to `stopAfter`; likewise.
llvm::Error runGpuPipeline(mlir::ModuleOp module, const CompileOptions &options,
                           llvm::StringRef stopAfter);

/// The root model to compile: the named one, or the only un-instantiated one.
llvm::Expected<ModelOp> findEntry(mlir::ModuleOp module, llvm::StringRef entry);

/// A terminal's name, type, shape and kind, or an error naming it.
llvm::Expected<TerminalInfo> describeTerminal(llvm::StringRef modelName, llvm::StringRef name,
                                              mlir::Type type, InputKind kind, bool isInput,
                                              bool allowDynamic = false);

/// The target machine code is compiled for: the host's, or `cpu`'s.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(unsigned optLevel,
                                                                       llvm::StringRef cpu = "");

/// LLVM's module optimization at `optLevel` for the target `tm`, tuned for
/// code the MLIR pipeline has already vectorized and unrolled (`scheduled`:
/// the CPU schedule ran; without it LLVM's own loop vectorizer does the work).
std::function<llvm::Error(llvm::Module *)> llvmOptimizer(unsigned optLevel, bool scheduled,
                                                         llvm::TargetMachine *tm);

/// Large constant arrays of `module` (weights compiled in) as arrays of
/// bytes, aligned as before: the assembly printer writes an array of floats
/// one APFloat at a time (about 30 ms for the MLP 784-512-512-10's 669,000
/// weights) and an array of bytes in one write. Needs the data layout.
void constantsAsBytes(llvm::Module &module);

/// Merges the functions of `module` (the pipeline's LLVM code, translated)
/// that differ only in integer constants, as kernels of ops of one form and
/// different sizes do: one body takes the constants as parameters, and each
/// function calls it with its own. Returns how many functions became such
/// wrappers. Functions of fewer than `minInstructions` instructions stay as
/// they are: they are cheap to compile twice, and a wrapper would be a fair
/// part of them.
unsigned mergeKernelsModuloConstants(llvm::Module &module, unsigned minInstructions = 64);

/// Drops from the model's function (the one its C interface `entryPoint`,
/// `_mlir_ciface_<model>`, calls) the arguments it never reads, and makes it
/// local: only the C interface may call it, or it stays as it is. The
/// descriptors' fields the body extracts are read from the arguments first.
void dropUnreadEntryArguments(llvm::Module &module, llvm::StringRef entryPoint);

/// How many threads compile a model's LLVM code: options.compileThreads, or
/// one per CPU of the process's affinity mask (at most 8).
unsigned compileThreadsFor(const CompileOptions &options);

/// `module` (the pipeline's LLVM code, translated) compiled to object code
/// for the host or options.targetCpu, with `_mlir_<entryPoint>(void **)`
/// added to call `entryPoint`: on up to `threads` threads, in pieces of about
/// equal code that the threads take in turn, each optimized and compiled in
/// a module of its own. `optimizeSeconds`: the IR passes' time (the longest
/// thread's).
llvm::Expected<std::vector<std::string>> compileObjects(llvm::Module &module,
                                                        const CompileOptions &options,
                                                        llvm::StringRef entryPoint,
                                                        unsigned threads, double &optimizeSeconds);

/// One object as it is, several as a Unix archive of them.
llvm::Expected<std::string> packObjects(llvm::ArrayRef<std::string> objects);

/// A JIT with the object code `code` (an object file, or an archive of
/// them: packObjects') linked in, the host's services and the process's
/// symbols resolved. `what` names the code in errors.
llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>>
linkObjects(llvm::StringRef code, llvm::StringRef what, const llvm::StringMap<void *> *asyncSymbols,
            const llvm::StringMap<void *> &customCalls);

/// Where a run resumes when its compiled code cannot get memory.
struct AllocationRecovery {
  std::jmp_buf point;
  size_t failedBytes = 0;
  /// The blocks handed out and not yet released (a few at a time: a flat
  /// list, which stays warm where a hash set's nodes did not).
  llvm::SmallVector<void *, 16> live;
};

/// Calls the compiled function; false, with `failedBytes` set, when it ran
/// out of memory and was cut short.
bool callRecoverably(void (*function)(void **), void **args, AllocationRecovery &state);

/// A block of `size` bytes from the buffer cache behind compiled code's
/// allocations (64-byte aligned; null when out of memory), and its release
/// back into the cache. A thread gets back the blocks it released before
/// any other thread's of that size.
void *cachedAllocate(size_t size);
void cachedRelease(void *block);

/// The first index out of range the code run on this thread reported since
/// the last call, if any.
std::optional<std::string> takeIndexError();

/// The MLIR async runtime's entry points (the library loaded once).
llvm::Expected<const llvm::StringMap<void *> *> asyncRuntimeSymbols();

/// A block of kernel ids for one compile's profiled kernels.
int64_t reserveProfileIds();

/// Registers the kernels mithril-profile-kernels named in `module`.
void registerProfiledKernels(mlir::ModuleOp module, llvm::StringRef model, int64_t firstId);

/// The symbols compiled code calls into the host for, and the C functions
/// of its custom calls.
llvm::orc::SymbolMap hostSymbols(llvm::orc::MangleAndInterner &interner,
                                 const llvm::StringMap<void *> *asyncSymbols,
                                 const llvm::StringMap<void *> &customCalls = {});

} // namespace mithril::runtime::detail

#endif // MITHRIL_LIB_RUNTIME_DRIVER_H
