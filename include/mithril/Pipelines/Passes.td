//===- Passes.td - code generation passes of the pipelines --*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_PIPELINES_PASSES_TD
#define MITHRIL_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def MithrilStridedCopies : Pass<"mithril-strided-copies", "mlir::ModuleOp"> {
  let summary = "Copy strided static buffers in loops instead of the runtime's memrefCopy";
  let description = [{
    Bufferization copies a padded input into its padded buffer, or a strided
    view into an output buffer, with `memref.copy`. Between buffers that are
    not both contiguous that becomes a call of the C runner utilities'
    `memrefCopy`, which walks the elements one index computation at a time
    (half the time of a small convolution). This pass turns every such copy
    with static shapes into loops over the dimensions before the longest
    trailing run that both buffers store contiguously, each run moved by
    vector transfers of 256 bytes (and one shorter for its tail): a
    concatenation of rows of 32 bytes, or a padded copy of 28-float rows,
    moves whole rows rather than elements. Runs shorter than 16 bytes (a
    transpose's single elements) become a `linalg.copy`, scalar loops.
    Contiguous copies stay `memref.copy` (a `memcpy`). With `vector-runs`
    off (the GPU pipeline, whose copies become parallel loops mapped to
    threads) every strided copy is a `linalg.copy`. With `threads` above 1,
    a copy of at least 64 KiB whose outermost dimension they divide runs as
    an `scf.forall` of that many chunks of it (one chunk of images per
    thread, as the ops around it split). Run it after bufferization.
  }];
  let options = [
    Option<"vectorRuns", "vector-runs", "bool", /*default=*/"true",
           "Move contiguous runs by vector transfers (else linalg.copy)">,
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "Split large copies into this many chunks of their outermost dimension">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect", "mlir::arith::ArithDialect"];
}

def MithrilScfToControlFlow : Pass<"mithril-scf-to-cf"> {
  let summary = "Lower scf to control flow, loops that run at least once tested at the bottom";
  let description = [{
    Upstream's `convert-scf-to-cf`, except that an `scf.for` whose constant
    bounds run its body at least once (every loop of a statically shaped
    model) becomes a loop tested at its bottom: the entry branches into the
    body, whose last block steps the induction variable and branches back or
    out. Upstream tests at the top, which LLVM's LoopRotate turns into this
    form loop by loop (the bench CNN training step's LLVM IR passes: 141 ->
    123 ms).
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect", "mlir::arith::ArithDialect"];
}

def MithrilExpandStridedMetadata : Pass<"mithril-expand-strided-metadata"> {
  let summary = "Expand memref views into explicit offsets, sizes and strides";
  let description = [{
    Upstream's `expand-strided-metadata` (subviews, reshapes and reinterpret
    casts become `memref.reinterpret_cast`s of their base buffer, with their
    offsets and strides as `affine.apply`s of `extract_strided_metadata`'s
    results), applied to the function's memref ops and to the ops their
    expansion creates, instead of greedily over every op of the function:
    12.7 -> 5.6 ms on the bench CNN's training step, the same LLVM IR.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def MithrilFlatGlobals : Pass<"mithril-flat-globals", "mlir::ModuleOp"> {
  let summary = "Store multi-dimensional constant buffers as flat arrays";
  let description = [{
    A `memref.global` of rank two or more (a weight compiled into the model,
    packed into panels) lowers to a nested LLVM array: one LLVM constant per
    innermost row, 106,000 of them for an int8 weight packed as
    `512x13x16x4xi8`, which LLVM translates, uniques and emits one by one
    (most of an int8 MLP's compile). This pass gives each such global of a
    static, identity-layout type the flat type of its elements
    (`memref<425984xi8>`, one byte array in LLVM) and reads it through a
    `memref.expand_shape` back to the original type. Run it after
    bufferization, before the lowering to LLVM.
  }];
}

def MithrilFuseElementwise : Pass<"mithril-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse elementwise linalg ops and fold reshapes into them, keeping reshapes well-formed";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` with one restriction: a reshape
    is folded into a linalg op by expanding the op's loops only where every
    group of the expanded shape has at most one dynamic size. Expanding a
    `tensor<3x?xf32>` operand into `tensor<3x?x?xf32>` (a `Reshape(-1)` of a
    dynamic input feeding a Linear) needs sizes no static analysis can split,
    and the memref lowering of such an `expand_shape` crashed. Those reshapes
    stay as they are: a collapse of a contiguous tensor is free. A generic
    that reads a permuted view of a tensor (a transpose, or
    `expand_shape(transpose(collapse_shape(x)))` whose groups move whole)
    back in the order of its own result reads the tensor itself: the
    transposes cancel (a first convolution pooled channels-last, transposed
    to planes and read back channels-last by a bf16 tile convolution). A
    value rounded to a narrower float and widened whose maximum or minimum
    is rounded to the same type again is not rounded first (rounding is
    monotone and idempotent: mixed precision's rounding before a ReLU whose
    result the next layer rounds).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::affine::AffineDialect"];
}

def MithrilPadInPlace : Pass<"mithril-pad-in-place", "mlir::ModuleOp"> {
  let summary = "Compute padded tensors inside their padding";
  let description = [{
    A `tensor.pad` by a constant of a value computed from an empty tensor
    (a loop's carried tensor, or a linalg op's init), which nothing else
    reads: the padded tensor is filled with the padding value first and the
    value is computed in its interior (its init the interior's slice, its
    result inserted back), so that bufferization writes it in place instead
    of copying it into the padded buffer. (The bench CNN's training step
    copied 5 such tensors a call, 3.4 MB, into buffers of their padded
    shape for its convolutions.) The padding is written as the runs of
    memory between the rows of the interior (a row's right padding and the
    next row's left padding are one run), with a vector store each or a
    fill of the run's slice when long: no element is written twice.
    Without `vector-runs` (the GPU pipeline, whose fills map to threads),
    one fill a slab a side. Run it on tensors, before one-shot
    bufferization.
  }];
  let options = [
    Option<"vectorRuns", "vector-runs", "bool", /*default=*/"true",
           "Write the padding as runs of memory by vector stores (else a linalg.fill a slab)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
                           "mlir::vector::VectorDialect"];
}

def MithrilCollectivesInWindow : Pass<"mithril-collectives-in-window", "mlir::ModuleOp"> {
  let summary = "Compute the operands of all-reduces in their shared-memory window";
  let description = [{
    convert-mithril-to-linalg places each static all_reduce's operand in the
    function's window of its group (`bufferization.materialize_in_destination`
    into a view of `mithril.collective_window`). Where the operand is
    computed from an empty tensor (a linalg op's init, a loop's carried
    tensor, through ops that write in place), that empty tensor becomes the
    window's view, so that bufferization computes the operand where the
    other ranks read it and the materialization copies nothing. (Copying
    the MLP training step's gradients into the window took 0.22 ms of its
    5.2 ms on two ranks of a Zen 4.) Upstream's empty-tensor elimination,
    restricted to those materializations, then once more to the
    insert_slices into them (a product split at its register tiles'
    remainder computes each part into a slice of the place); the rest of
    the module is left as it was. Run it on tensors, right before one-shot
    bufferization.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::tensor::TensorDialect"];
}

def MithrilLowerCollectiveWindows : Pass<"mithril-lower-collective-windows", "mlir::ModuleOp"> {
  let summary = "Ask the runtime for the windows of all-reduce operands";
  let description = [{
    Each `mithril.collective_window` becomes a call of the runtime's
    `mithrilCollectiveWindow(group, bytes)` (through its C interface), which
    returns this rank's segment of the group's window, grown to `bytes`
    where it is smaller; one with a `rank`, of
    `mithrilCollectiveWindowSegment(group, bytes, rank)`, that rank's
    segment of a window the group's ranks share (after the first call made
    it). Run it after the buffer deallocation: the
    deallocation takes a call's result for a buffer the caller owns, and the
    window belongs to the runtime.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def MithrilStackInPlace : Pass<"mithril-stack-in-place", "mlir::ModuleOp"> {
  let summary = "Write buffers that are copied whole into a new stack in their place in it";
  let description = [{
    After bufferization, a stack (a fresh `memref.alloc`) whose slices are
    each filled by one `memref.copy` of a buffer allocated in the same block
    and not used after the copy (Winograd's 16 transformed points, computed
    by one loop into 16 buffers and then stacked into the batch of
    products): the stack and those buffers become views of one allocation,
    each buffer the bytes of its slice, and the copies go. Only where each
    slice is contiguous and 64-byte aligned, the buffers have the identity
    layout, and nothing uses the stack before its last copy but those slices.
    (The bench CNN's training step copied 3.3 MB a call this way, its
    forward pass 1.7 MB: 5% of their time on a Zen 4.) Run it after one-shot
    bufferization, before the deallocation pipeline.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def MithrilDeallocAtLastUse : Pass<"mithril-dealloc-at-last-use", "mlir::ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Upstream's buffer deallocation places every `memref.dealloc` at the end
    of the block that allocated the buffer: in a model's function, at its
    end, so that every temporary lives for the whole run and the peak memory
    is the sum of all of them. This pass moves each unconditional dealloc of
    a buffer allocated in the same block to just after the last op of that
    block that uses the buffer or any value derived from it (views, casts,
    reshapes; an op with regions counts as a whole). Buffers whose lifetimes
    do not overlap then take turns in the same memory: the runtime's buffer
    cache hands a freed block to the next allocation of its size. Run it
    after the deallocation pipeline, while the code is still structured
    (parallel loops wait for their tasks where they stand).
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def MithrilMarkInPlaceUpdates : Pass<"mithril-mark-in-place-updates", "mlir::ModuleOp"> {
  let summary = "Name the outputs that may share their buffer with the input they update";
  let description = [{
    A training step takes each parameter (and optimizer state) `X` as an
    input and writes its next value to the output `new:X`. Written to a
    separate buffer, the update reads the old value, the gradient and the
    output's previous contents (a write allocates its cache line): a quarter
    more memory traffic than writing over the old value, which is what frameworks
    do (torch's optimizers, JAX's donated buffers).

    This pass proves, on the bufferized function, where writing `new:X` over
    `X` gives the same results, and lists those outputs in the function's
    `mithril.in_place_outputs` attribute (names); the runtime reports them
    (`TerminalInfo::inPlaceOf`) and callers may then pass one buffer for
    both. It holds when, in the function's block, every op that touches
    `X` (or a view of it) comes before the first op that touches `new:X`,
    or is that op itself and that op is a loop nest whose only accesses to
    the two are reads of `X` followed by writes of `new:X` in one block, at
    the same indices, each index a distinct induction variable of an
    enclosing loop (every enclosing loop's) or a constant, and each loop's
    step at least the access's extent in its dimension: every element is
    read before it is written, by the one iteration that writes it. An op
    that takes either buffer another way (a call, a copy, a linalg op, its
    address) counts as touching all of it.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def MithrilProfileKernels : Pass<"mithril-profile-kernels", "mlir::ModuleOp"> {
  let summary = "Time each kernel of the bufferized model through host timers";
  let description = [{
    Wraps every kernel at the top level of each function (a loop nest, a
    linalg op, a copy) in calls to `mithrilProfileEnter(id)` and
    `mithrilProfileExit(id)`, which the host provides (mithril's JIT
    accumulates calls and time per kernel; `ml.profile()` and
    `mithril-run --profile` report them). Ids count from `first-id`; the
    module's `mithril.profile_kernels` attribute names kernel `first-id + i`
    by what it computes and the logical terminals in its location. Run it
    after bufferization, before loops are lowered; only when profiling.
  }];
  let options = [
    Option<"firstId", "first-id", "int64_t", /*default=*/"0", "The first kernel's id">
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

def MithrilOutlineKernels : Pass<"mithril-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Move each large kernel into a function of its own, for parallel code generation";
  let description = [{
    Moves every kernel at the top level of each public function (a loop nest
    or another op with regions and no results, or a run of code between
    them: small ops vectorized whole and loop nests too small for a function
    of their own, going on past allocations, which stay before the call, up
    to a free, a call or an op with unknown effects) that holds at least
    `min-ops` of code into a private function of its own, marked `noinline`,
    and calls it where the kernel was. A function whose buffers all have
    static shapes, strides and offsets takes them as bare pointers
    (`llvm.bareptr`). The values the kernel uses from outside become the
    function's arguments (buffers and scalars as they are; a vector through
    a stack buffer of its shape, which the caller writes and the function
    reads back; a kernel that would take any other value stays), except
    constants, views and index arithmetic, which the function computes
    again (so that its shapes, offsets and loop bounds stay constant for
    LLVM). A kernel whose function would be the same, op for op up to
    locations, as an earlier one's (the same layer of a transformer's every
    block) calls that function instead: generated and compiled once. A
    buffer argument is `llvm.noalias` where every call passes it memory
    apart from the function's other buffers and the globals it uses, unless
    neither is written there (an allocation is apart from every other
    buffer; two arguments of the entry may be one array): LLVM saw the
    allocations themselves while the kernel was inline. With `shared-only`,
    only kernels that share a function stay outlined.

    The JIT compiles a model's LLVM code in as many pieces as it has threads
    for (one per CPU the process may run on): a model is one function per
    entry otherwise, which LLVM compiles on one thread. Run it after
    bufferization, before loops are lowered.
  }];
  let options = [
    Option<"minOps", "min-ops", "int64_t", /*default=*/"24",
           "The least code a kernel must hold to be moved: its ops through nested regions, "
           "each counted once per row of its largest vector (a vector<8x32xf32> is 8 LLVM vectors)">,
    Option<"sharedOnly", "shared-only", "bool", /*default=*/"false",
           "Move only the kernels whose function another kernel calls too (a transformer's "
           "blocks): where LLVM compiles on one thread, a function of its own gains nothing else">
  ];
  // (ub: the poison padding of the reads of vectors passed in memory.)
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect", "mlir::ub::UBDialect",
                           "mlir::vector::VectorDialect"];
}

def MithrilDispatchChunks : Pass<"mithril-dispatch-chunks", "mlir::ModuleOp"> {
  let summary = "Run the chunks of split ops on the host's task pool through one call";
  let description = [{
    The schedule splits a large op into the chunks of a one-dimensional
    `scf.forall` with no results (after bufferization). This pass outlines
    each such loop's body into a private function of the context and the
    chunk index, `(!llvm.ptr, index) -> ()`, and replaces the loop with a
    call of `mithrilParallelFor(chunk function, context, number of chunks)`,
    which the host provides (mithril's JIT: its task pool runs the chunks
    on its workers and the caller, and returns once all are done). The
    values the body uses from outside travel in one struct on the caller's
    stack, memrefs of static layout as their aligned pointers, others as
    their LLVM descriptors; constants, and views and index arithmetic of
    what travels, are made again in the chunk function, so that its loop
    bounds stay constant and 16 views of one buffer travel as one pointer.

    Unlike the MLIR async runtime (`async-parallel-for` and the coroutine
    lowering, which `threads` without `task-pool` uses), the code has no
    coroutines, tokens or groups: an MLP training step on two threads
    compiles in 0.8 s instead of 1.0 s, and the JIT no longer loads
    `libmlir_async_runtime`. Run it after bufferization, before
    loops are lowered; nested loops are outlined innermost first.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def MithrilConvertBodiesToLLVM : Pass<"mithril-convert-bodies-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower the functions' bodies to the LLVM dialect, function by function on the context's threads";
  let description = [{
    The memref, arith, control flow, index and ub ops inside each `func.func`
    become LLVM dialect ops, one function a task on the context's threads;
    `finalize-memref-to-llvm` and `convert-to-llvm`, module passes on one
    thread, then have only the functions' signatures, calls and returns and
    the module's globals left. The allocation functions the memref lowering
    calls are declared first, so that no task adds to the module; a module
    with ops whose lowering declares other functions (`memref.copy` of
    strided buffers, `memref.realloc`) is lowered one function after the
    other. Options as `finalize-memref-to-llvm`'s.
  }];
  let options = [
    Option<"useAlignedAlloc", "use-aligned-alloc", "bool", "false",
           "Allocate buffers through aligned_alloc">,
    Option<"useGenericFunctions", "use-generic-functions", "bool", "false",
           "Allocate and free through _mlir_memref_to_llvm_alloc/_free, which the host provides">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def MithrilNoAliasAllocations : Pass<"mithril-noalias-allocations", "mlir::ModuleOp"> {
  let summary = "Mark the allocation functions as returning memory nothing else points to";
  let description = [{
    The memref lowering declares the functions buffers come from (`malloc`,
    `aligned_alloc`, or the host's `_mlir_memref_to_llvm_alloc` and
    `_mlir_memref_to_llvm_aligned_alloc`, mithril's JIT buffer cache) with
    no attributes, and the JIT's LLVM pipeline infers none for the host's:
    LLVM then assumes a store into a temporary may change any input, and
    reloads the input inside the loop (a matrix-vector product's
    broadcasts of the vector, once a column tile). This pass, on the LLVM
    dialect, gives each such declaration's pointer result `llvm.noalias`:
    every block they return is fresh, unreachable through any other
    pointer. Run it after the lowering to LLVM, with aligned allocations
    (whose aligned pointer is the one returned, not an integer rounded and
    cast back, which hides where it came from).
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def MithrilHoistLoopBuffers : Pass<"mithril-hoist-loop-buffers", "mlir::ModuleOp"> {
  let summary = "Allocate each iteration's temporary buffers once, before their scf.for";
  let description = [{
    After bufferization, a `memref.alloc` of static shape in the body of an
    `scf.for` (a row block's maximum and values, a cache block's packed
    panel) is allocated and freed at every iteration: through the host's
    buffer cache, a lock taken by every thread of a split op, each time (a
    1024 x 128 softmax on two threads, in blocks of 8 rows, ran at half the
    speed of one thread). Each iteration writes such a buffer before it reads
    it, so one buffer serves them all: the allocation moves before the loop,
    and before the loops around it, up to the body of an `scf.forall` (whose
    chunks each keep their own) or the function. Only buffers that no
    iteration yields, returns, stores or passes to a call, through views of
    them too. Run it after one-shot bufferization, before the deallocation
    pipeline.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def MithrilReshapedResults : Pass<"mithril-reshaped-results", "mlir::ModuleOp"> {
  let summary = "Return reshaped buffers as allocations of the result's shape";
  let description = [{
    After bufferization, a function that returns a reshape of a buffer it
    allocated (`memref.expand_shape` or `memref.collapse_shape` of a
    `memref.alloc`: a product of a batch by a matrix, computed on its
    stacked rows and expanded back) returns a view, not an allocation, and
    `buffer-results-to-out-params` copies it whole into the caller's
    buffer. Here the allocation takes the result's shape and its users see
    the inverse reshape of it (both views of one contiguous buffer), so the
    function returns the allocation itself, which the caller's buffer
    replaces: no copy. Static shapes of identity layout only. Run it after
    one-shot bufferization, before `buffer-results-to-out-params` and the
    deallocation pipeline.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

#endif // MITHRIL_PIPELINES_PASSES_TD
