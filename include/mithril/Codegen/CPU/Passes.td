//===- Passes.td - CPU code generation passes ---------------*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_CODEGEN_CPU_PASSES_TD
#define MITHRIL_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def MithrilCpuStrategy : Pass<"mithril-cpu-strategy", "mlir::ModuleOp"> {
  let summary = "Choose each linalg op's lowering config for the target CPU";
  let description = [{
    Attaches `mithril.lowering_config` to every linalg op on tensors: its
    register kernel (kept where the lowering chose it, as for convolutions
    over flat rows), its register tile sized for the target's vector
    registers (AVX-512: 8 x 32 f32 matmul tiles of 32 registers; AVX2: 6 x
    16 of 16), the cache block of matmuls sized for its L2 (128 x 256 x 256,
    or 128 x 128 x 256 below 512 KiB), and with `threads` above 1 the loop
    split across threads. `mithril-cpu-schedule` carries the configs out; a
    config written by hand in the IR is kept, so that it can be tried with
    mithril-opt. The options are the schedule's.
  }];
  let options = [
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "Split large ops into this many parallel chunks">,
    Option<"minParallelWork", "min-parallel-work", "int64_t", /*default=*/"1 << 19",
           "The loop iterations an op needs before it is split across threads">,
    ListOption<"cacheTile", "cache-tile", "int64_t",
               "Cache block of large matmuls: rows, columns, reduction (default: 128,256,256 "
               "for an L2 of 512 KiB or more, else 128,128,256)">,
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "The vector registers to size register tiles for: 512, 256, 128, or 0: the "
           "target's">,
    Option<"targetCpu", "target-cpu", "std::string", /*default=*/"",
           "The x86-64 CPU to choose for (LLVM's name); empty: the host">
  ];
  let dependentDialects = ["::mithril::MithrilDialect"];
}

def MithrilCpuSchedule : Pass<"mithril-cpu-schedule", "mlir::ModuleOp"> {
  let summary = "Tile and vectorize linalg on tensors for the host CPU";
  let description = [{
    Tiles every linalg op for the host's vector registers (`vector-bits`):
    matmuls to a register block of two registers per row, 8 rows by 32
    columns by 1 with AVX-512 (sixteen 512-bit accumulators in f32; 8 x 16 in
    f64), 6 x 16 with AVX2 (twelve of its sixteen 256-bit registers),
    other ops to 8 x 32 tiles of their last two loops; then applies a
    transform-dialect script that vectorizes the tiles and hoists the matmul
    accumulators out of the reduction loop while still on tensors. Run it
    after fusion and before bufferization.

    Shapes get their own schedules: a matmul of at most 16 rows on a
    transposed weight becomes a matrix-vector product on the weight's layout
    whose tiles sum a register's lanes of partial sums in registers (with
    AVX2, 3 rows a tile, the rows past them in tiles of 2); convolutions and
    the weight gradients the linalg lowering marks get two-level tiles whose
    reduction loops carry only the accumulator; pooling windows and
    transposes get row and 16 x 16 register tiles; a matmul whose columns are
    no multiple of 32 is split into whole tiles and the rest.

    Matmuls larger than a cache block (`cache-tile`, rows x columns x
    reduction, 128 x 256 x 256 by default) are first tiled into such blocks,
    columns outermost and rows innermost, and each block of the right operand
    is packed into 32-column panels that the register tiles read
    contiguously (straight from a transposed weight's own layout). Into a
    zero fill, a float product deeper than its reduction block computes its
    first block as a product of its own whose register tiles start from
    zeros. With AVX2, products of one block pack too (not a transposed
    weight), and float32 products whose result and packed block outgrow the
    L2 take their row tiles outermost (`mithril.row_tiles_outer`).

    With `threads` above 1, an op with enough work to pay for a thread
    handoff (`min-parallel-work` loop iterations; an eighth of that for a
    matrix-vector product and a sixteenth for an elementwise op, which both
    stream memory) is first split into `threads` chunks along one parallel
    loop by an `scf.forall`, with the elementwise ops that consume it and the
    fill that initializes it (the pipeline runs the chunks as tasks of the
    MLIR async runtime, which mithril's runtime starts on its own task pool).
  }];
  let options = [
    Option<"threads", "threads", "unsigned", /*default=*/"1",
           "Split large ops into this many parallel chunks">,
    Option<"minParallelWork", "min-parallel-work", "int64_t", /*default=*/"1 << 19",
           "The loop iterations an op needs before it is split across threads">,
    Option<"fuseRows", "fuse-rows", "bool", /*default=*/"true",
           "Fuse row reductions into the row blocks of the element-wise ops that read them "
           "(softmax, layer norm: Scheduler::fuseRowReductions)">,
    ListOption<"cacheTile", "cache-tile", "int64_t",
               "Cache block of large matmuls: rows, columns, reduction (default 128,256,256)">,
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "The vector registers to size register tiles for: 512 (AVX-512: 32 registers, "
           "8 x 32 f32 matmul tiles), 256 (AVX2: 16 registers, 6 x 16), 128, or 0: the "
           "host's">,
    Option<"targetCpu", "target-cpu", "std::string", /*default=*/"",
           "The x86-64 CPU to pick kernels for (its vector registers unless vector-bits is "
           "given, and its dot products: vdpbf16ps for bf16 matmuls with AVX512-BF16, "
           "vpdpbusd for int8 ones with AVX512-VNNI); "
           "empty: the host">
  ];
  let dependentDialects = [
    "::mithril::MithrilDialect",
    "mlir::vector::VectorDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect",
    "mlir::x86vector::X86VectorDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::ub::UBDialect"
  ];
}

def MithrilShuffleBarriers : Pass<"mithril-shuffle-barriers"> {
  let summary = "Cut deep chains of vector shuffles before LLVM's x86 code generation";
  let description = [{
    A 16 x 16 transpose (the schedule's `shuffle_16x16` lowering) is 64
    `vector.shuffle`s in four rounds, each reading the round before. LLVM's
    x86 instruction selection tries to merge every shuffle with the shuffles
    under it, recursively, at a cost that grows with the depth of the chain
    and finds nothing to merge here: 5 ms of code generation a transpose (a
    quarter of an MLP training step's instruction selection) for the 64
    instructions it started from. This pass puts an empty inline-asm copy
    (`llvm.inline_asm "" "=v,0"`: no instruction, the value stays in its
    register) after each shuffle that reads two shuffles and is read by
    another, so that no chain LLVM sees is deeper than two rounds; the
    instructions are the same. Only vectors that fill one register of the
    target (128 bits up to `vector-bits`) get one, as the constraint needs.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"0",
           "The widest vector registers of the target in bits; 0: the host's">
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::vector::VectorDialect"];
}

def MithrilLowerMultiReductions : Pass<"mithril-lower-multi-reductions"> {
  let summary = "Lower vector.multi_reduction to 1-D reductions and elementwise ops";
  let description = [{
    Upstream's `lower-vector-multi-reduction` (the inner-parallel strategy:
    reductions over outer dimensions become elementwise ops across the
    rows, inner ones `vector.reduction`s), applied to the multi-reductions
    and to the ops their lowering creates only. Upstream's pass runs its
    patterns greedily over every op of the function, which in a model's
    vector code (tens of thousands of ops, a few reductions) took 8 ms of
    the bench CNN training step's compile for nothing.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect"];
}

def MithrilUnrollTransfers : Pass<"mithril-unroll-transfers"> {
  let summary = "Unroll n-d vector transfers into 1-d ones";
  let description = [{
    Upstream's `convert-vector-to-scf{full-unroll}` (permutation maps lowered
    first, then every transfer of more than one dimension unrolled into 1-d
    transfers, with no stack buffer), applied to the transfers and to the ops
    their lowering creates only, instead of greedily over every op of the
    function. A 1-d read of elements that are not contiguous (along a
    dimension other than the buffer's innermost, or along an innermost one
    whose stride is not 1; in bounds, unmasked or under a constant mask, 9 to
    64 elements) is one `memref.load` an element and a
    `vector.from_elements`, where upstream's loop inserting each element at a
    dynamic position would compile through a stack slot.
  }];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect"];
}

def MithrilRelaxFloatMinMax : Pass<"mithril-relax-float-min-max"> {
  let summary = "Float minimum and maximum without ordering -0 below +0 (nsz)";
  let description = [{
    `arith.minimumf` and `arith.maximumf` order -0 below +0 as IEEE 754's
    minimum and maximum do, which x86 has no instruction for: LLVM lowered a
    maximum of two vectors to six instructions (sign masks and blends around
    `vmaxps`), three with `nsz`. The ops the models' min and max reductions,
    max pooling and elementwise minimum and maximum lower to don't promise
    the sign of a zero result (numpy's `np.maximum(-0.0, 0.0)` is `-0.0`), so
    this pass sets `nsz` on every float `arith.minimumf`, `arith.maximumf`
    and `vector.reduction` of those kinds. NaN still propagates. Run it after
    the multi-reductions are lowered (the vector dialect's multi-reduction
    carries no fastmath flags), before the lowering to LLVM.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::vector::VectorDialect"];
}

def MithrilExpandBF16 : Pass<"mithril-expand-bf16"> {
  let summary = "Lower bfloat16 conversions to integer arithmetic";
  let description = [{
    `arith.extf` from and `arith.truncf` to bfloat16 become integer shifts and
    round-to-nearest-even arithmetic on the bits (upstream's bf16 expansion
    patterns). Without it LLVM calls `__truncsfbf2` on CPUs without
    AVX512-BF16, which the JIT cannot resolve on hosts whose libgcc predates
    it, and which serializes the conversion one element at a time. Run it
    before the lowering to LLVM.

    With `native-truncation` (targets with AVX512-BF16), truncations stay:
    LLVM lowers them to `vcvtneps2bf16`, one instruction for 16 elements
    instead of seven. It rounds to nearest even as the expansion does, but
    flushes subnormal inputs and results to zero.
  }];
  let options = [
    Option<"nativeTruncation", "native-truncation", "bool", /*default=*/"false",
           "Keep truncations to bf16 for LLVM's vcvtneps2bf16 (AVX512-BF16 targets)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::vector::VectorDialect"];
}

def MithrilLegalizeBF16Memory : Pass<"mithril-legalize-bf16-memory", "mlir::ModuleOp"> {
  let summary = "Load and store bf16 vectors of odd lengths as 16-bit integers";
  let description = [{
    LLVM 22's x86 instruction selection aborts on a load or store of a
    bfloat16 vector whose length is no power of two ("Do not know how to
    soft promote this operator's operand!"), as a bf16 model's copy of a 5 x
    5 block produced (`vector<25xbf16>`). This pass, on the LLVM dialect,
    moves such vectors as `i16` vectors of the same bits: `llvm.load`,
    `llvm.store` and their masked intrinsics, with a bitcast between the
    memory access and the bf16 value. Run it after the lowering to LLVM.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def MithrilX86DotProducts : Pass<"mithril-x86-dot-products"> {
  let summary = "The i8 contractions of the CPU schedule's register tiles as vpdpbusd";
  let description = [{
    `mithril-cpu-schedule` writes each 16 columns of an int8 register tile
    (AVX512-VNNI targets) as a `vector.contract` of one row's quad of
    unsigned bytes (`arith.extui` of a `vector<4xi8>`) with 16 columns' quads
    of signed bytes (`arith.extsi` of a `vector<16x4xi8>`) into a
    `vector<16xi32>`: what one `vpdpbusd` computes. This pass, run after
    bufferization (which an intrinsic call would stop), rewrites exactly
    those contractions into `llvm.x86.avx512.vpdpbusd.512`; any other
    contraction is left to the vector lowering.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::vector::VectorDialect"];
}

def MithrilX86TileMatmuls : Pass<"mithril-x86-tile-matmuls", "mlir::ModuleOp"> {
  let summary = "The CPU schedule's AMX matmul tiles as tile loads, tdpbf16ps / tdpbusd and stores";
  let description = [{
    On targets with AMX, `mithril-cpu-schedule` leaves each register tile of a
    packed bf16 (or i8) matmul block as a `linalg.generic` of kernel
    `tile_matmul` over (m, n, k / g, g): A `[m][k / g][g]`, B packed
    `[k / g][n][g]` (pairs of bf16, or quads of i8 whose A side is offset to
    unsigned), accumulating C `[m][n]` in f32 (i32). After bufferization, this
    pass writes each such generic as AMX tiles: blocks of up to 2 x 2
    accumulator tiles of 16 x 16 loaded from C once, a loop over the
    reduction in steps of 64 bytes per row (`amx.tile_load` of A's rows and
    B's packed groups, `amx.tile_mulf`, or `amx.tile_muli` with an unsigned
    A), and the tiles stored back; the accumulators stay in tile registers
    across the loop. Only generics of whole tiles are written (rows and
    columns multiples of 16, the reduction of 64-byte steps), so that every
    tile has one shape, as LLVM's tile register allocation wants; any other
    stays for the loop lowering, which computes the same numbers element by
    element. LLVM's X86 backend then configures the tiles (`ldtilecfg`); the
    process must have asked Linux for the tile state (`hostAllowsAmxTiles`).

    A tile convolution (kernel `tile_conv`: loops (n, oh, ow, f, kh, kw, c /
    g, g), the input `[n][h][w][c / g][g]` read at (oh + kh, ow + kw), the
    weight packed `[kh][kw][c / g][f][g]`) is written the same way, one or
    two output rows of 16 columns by 16 or 32 output channels: for each
    kernel position and 64-byte step of channels, each output row's A tile
    is 16 rows of the input from column kw, one row of channels apart, so
    the windows are read where they lie.
  }];
  let dependentDialects = ["mlir::amx::AMXDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def MithrilPrefetchAccumulators : Pass<"mithril-prefetch-accumulators"> {
  let summary = "Prefetch the next register tile's accumulators of a product larger than the L2";
  let description = [{
    The schedule's register tiles of a matmul load their accumulators from
    the result before the loop over the reduction and store them after it.
    Once the result is larger than the L2 cache, those loads come from L3 or
    memory, and the loop waits for them: 8% of the time of sgemm 2048 on one
    core of an Intel Xeon with AMX (2 MiB L2), on the loads of the 8 x 32
    tiles. This pass finds each such tile (a `scf.for` carrying a vector read
    by `vector.transfer_read` from a buffer before the loop and written back
    to the same place by `vector.transfer_write` after it) directly inside a
    loop over tiles, and before the read prefetches, for writing, every
    64-byte line of the tile that the enclosing loop's next iteration reads
    (the last iteration prefetches its own). The views and indices of the
    next tile are those of this one with the enclosing loop's induction
    variable advanced by its step. Only tiles of buffers of static shape at
    least `min-bytes` large (0: the target's L2 size), with unit innermost
    stride and constant loop bounds whose trip divides evenly, get
    prefetches. Run it after bufferization, before the loops are lowered.
  }];
  let options = [
    Option<"targetCpu", "target-cpu", "std::string", /*default=*/"",
           "The x86-64 CPU whose L2 size sets the threshold; empty: the host">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"0",
           "Prefetch for results of at least this many bytes; 0: the target's L2 size">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def MithrilPrefetchPanels : Pass<"mithril-prefetch-panels"> {
  let summary = "Prefetch into L1 the panel rows a register tile's reduction reads a few steps ahead";
  let description = [{
    A register tile's reduction loop (a `scf.for` carrying a vector, inside
    another loop) reads, each step, a row of a packed panel: a one-dimensional
    `vector.transfer_read` of whole 64-byte lines along the buffer's
    unit-stride innermost dimension, at an index the loop's induction variable
    sets in an outer dimension (B's `[panel][k][64]` of a 6 x 64 tile: four
    lines a step). The panel is read from L2 once per row tile, and the L1
    prefetchers follow those streams late: each step waits on its lines. This
    pass prefetches, for reading into L1, the lines of the row `distance`
    steps ahead before each such read (the last steps' prefetches fall past
    the panel: a prefetch never faults, and a clamp cost four instructions
    a step). On
    one core of an Intel Xeon with AMX (2 MiB L2), paired calls, outputs
    bit-identical: sgemm 1024 / 2048 +3.9% / +3.5% (distance 8), their AVX2
    code (6 x 16 tiles, one line a step) +7.6% / +6.8%, the MLP
    784-512-512-10 at batch 256 +3.2%, its training step at batch 64 +3%,
    the bench CNN within noise. Reads whose innermost index is the induction
    variable (a matrix-vector product's lanes) are left alone. Run it after
    bufferization, before the loops are lowered.
  }];
  let options = [
    Option<"distance", "distance", "int64_t", /*default=*/"8",
           "How many steps of the reduction ahead to prefetch">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def MithrilPrefetchNextRows : Pass<"mithril-prefetch-next-rows"> {
  let summary = "Prefetch the next weight rows of a matrix-vector product's group and of a register tile's broadcast rows";
  let description = [{
    A matrix-vector product (a Linear layer at a small batch) is tiled as a
    loop over groups of S weight rows, around a loop over groups of the
    batch's rows, around the reduction (`scf.for` carrying vectors), which
    reads each step a `vector<S x 1 x L>` slice of the weight as `[rows,
    chunks, lanes]`. The first row group of the batch reads a weight group
    from L3 or memory and the others from L1, so the memory idles most of
    the time while the next group waits: the MLP 784-512-512-10's weights
    (2.6 MB) are larger than an L2. This pass prefetches into L1, spread over
    the steps of all the batch's row groups (at most two a step), the lines
    of the next weight group, which the last group prefetches past the
    weight's end (a prefetch never faults). One core of an Intel Xeon with
    AMX, the MLP at batch 16, paired calls, outputs bit-identical: 0.218 ->
    0.180 ms (`mithril-run`, alternated launches: 0.212 -> 0.176). A step
    of half a line (AVX2's 8 float lanes) prefetches its chunk's line of
    the next group's row, one row for each row group, where there are as
    many row groups as rows in a group and that group and the next fit
    80% of a 32 KiB L1 (a Zen 3 core, the MLP at batch 16: 2.5% faster;
    batch 8's two row groups, which would take two a step, ran 5% slower
    with them, a float32 weight 1024 deep 5% and float64 784 deep 4%).

    Likewise a register tile that broadcasts each step the elements of R
    rows of a row-major [M, K] matrix read in place (a `vector<R>` read
    down a column at [r, k], the reduction's K steps from 0: the weight of
    a product swapped to C^T = W * A^T, or an A not packed) starts R new
    row streams each tile, from L3 where the matrix is larger than the L2;
    each step prefetches one line of the next tile's rows [r + R, r + 2R),
    all of them over the tile's steps, for a matrix of 64 KiB or more (a
    smaller one stays in L1 or L2), through the matrix flattened and
    clamped to its last element: a tile of 8 rows or more a line of every
    row at a time, last line first (row k mod P, P the power of 2 from R,
    line K / line - 1 - min(k / P, K / line - 1): rows a multiple of 4 KiB
    apart share L1 sets column by column, and first line first a float64
    tile prefetched into the set it was reading, dgemm 512 14% slower on a
    Zen 4), a smaller one (AVX2's 6 x 16, whose 12 FMAs a
    step leave no room for that index arithmetic) in memory order, line k
    of the rows' R * K contiguous elements. The GPT forward at batch 1 with
    its weights passed (four layers of 128 tokens, swapped products of 768
    and 1024 weight rows), one Zen 4 core: 10.0-10.1 -> 9.2-9.4 ms.

    Where the tile's reduction is one block of the rows ([r, r + R) x
    [c, c + T), T < K) and runs once for each iteration of a loop around it
    that keeps the rows (AVX2's float32 row tiles outermost, each sweeping
    every panel of a packed block), the next tile's block of R * T / L lines
    is prefetched before the reduction, a few lines each iteration of that
    loop (at most 8), spread over its iterations: R rows of T / L lines are
    streams too short for the hardware prefetchers. One Zen 4 core, AVX2
    code: sgemm 1024 +3.3%. Run it after bufferization, before the loops are
    lowered.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def MithrilLowerScalarTransfers : Pass<"mithril-lower-scalar-transfers"> {
  let summary = "Lower vector transfers of one element to memref loads and stores";
  let description = [{
    A transfer of a 0-d (or one-element) vector from a buffer whose innermost
    stride is not 1 (a strided view, as the phases of a strided convolution
    on a small input are) is left alone by `convert-vector-to-scf`, which
    unrolls ranks above 0, and by the LLVM lowering, which wants a unit
    innermost stride: it reached LLVM unconverted. This pass rewrites every
    in-bounds transfer of one element into a `memref.load` and a broadcast
    (or an extract and a `memref.store`), and an element extracted from an
    in-bounds read into a load of that element where it is extracted, unless
    an op between the read and the extract may write or free memory
    (upstream's scalar transfer patterns move the read regardless). Run it
    after bufferization, before the lowering to LLVM.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::vector::VectorDialect"];
}

def MithrilSplitMaskedWrites : Pass<"mithril-split-masked-writes"> {
  let summary = "Write a constant prefix of a vector as plain stores of its pieces, not a masked store";
  let description = [{
    A loop of 7 elements vectorized as 8 lanes writes them through a mask.
    With AVX-512 the mask is a k register; without it, LLVM writes a masked
    store (`vmaskmovps`), which AMD cores run slowly (the bench CNN's
    Winograd input transform in its training step, 16 of them per tile
    row: 0.31 ms in AVX2 code on a Zen 4 core against 0.12 in AVX-512
    code). This pass rewrites each in-bounds 1-D write to a buffer of unit
    innermost stride whose mask is a `vector.constant_mask` of a prefix into
    unmasked writes of the prefix's power-of-2 pieces (7 lanes: 4, 2 and 1).
    The CPU pipeline runs it for targets without 512-bit registers, after
    the transfers are unrolled to 1-D.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::vector::VectorDialect"];
}

def MithrilApproximateMath : Pass<"mithril-approximate-math"> {
  let summary = "float32 math functions as vector polynomials instead of libm calls";
  let description = [{
    LLVM has no vector form of `exp`, `log` or `tanh` without a vector math
    library: a `math.exp` of a vector became one scalar `expf` call per
    element (512 calls in a sigmoid's register tile). This pass rewrites the
    float32 functions listed in `functions` into upstream's polynomial
    approximations (range reduction and a minimax polynomial, as Eigen's),
    which stay vector code; float64 keeps libm. The `log` that `log1p`'s
    expansion computes of 1 + x, which is never subnormal, is approximated
    with it; the model's own `log` ops only when `functions` names `log`, and
    then as log(x * 2^24) - 24 ln 2 where x is subnormal: upstream's
    polynomial reads the exponent field, which a subnormal lacks (log(1e-38)
    came out off by 2). Over 2^20 inputs from 1e-45 to 1e38: at most 1.03
    ulps from float64, libm's 0.82; [256, 1024] in 0.13 ms, libm's 0.9 ms.
    Run it after bufferization, before the lowering to LLVM.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The math ops to approximate (exp, expm1, log, log1p, log2, tanh, erf, ...)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // MITHRIL_CODEGEN_CPU_PASSES_TD
