//===- MithrilLoweringConfig.td - per-op code generation choices -*- tablegen -*-===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
//===----------------------------------------------------------------------===//

#ifndef MITHRIL_DIALECT_MITHRIL_IR_MITHRILLOWERINGCONFIG_TD
#define MITHRIL_DIALECT_MITHRIL_IR_MITHRILLOWERINGCONFIG_TD

include "mithril/Dialect/Mithril/IR/MithrilDialect.td"
include "mlir/IR/AttrTypeBase.td"

// The register kernel a linalg op is scheduled as on the CPU: the form of the
// op (which loops it has, in which order) that its register tile assumes.
def Mithril_CpuKernel : I32EnumAttr<"CpuKernel", "register kernel of a linalg op on the CPU", [
    // Any other op: the last two loops tiled to a few vector registers.
    I32EnumAttrCase<"Default", 0, "default">,
    // linalg.matmul / batch_matmul: rows x two vectors of columns, one
    // reduction step at a time.
    I32EnumAttrCase<"Matmul", 1, "matmul">,
    // A matmul block on a packed right operand: loops (m, panel, column,
    // k) or, with dot products, (m, panel, column, k / group, group).
    I32EnumAttrCase<"PackedMatmul", 2, "packed_matmul">,
    // The partial sums of a matrix-vector product on the weight's layout.
    I32EnumAttrCase<"MatrixVector", 3, "matrix_vector">,
    // The sum of a matrix-vector product's lanes of partial sums.
    I32EnumAttrCase<"LaneSum", 4, "lane_sum">,
    // A 2-D convolution over flat rows of the padded width: (n, f, p, c,
    // kh, kw).
    I32EnumAttrCase<"ConvFlat", 5, "conv_flat">,
    // Its weight gradient: (f, c, kh, kw, lane, n, block).
    I32EnumAttrCase<"ConvFlatWeightGrad", 6, "conv_flat_weight_grad">,
    // A convolution as output channels x output columns: (n, g, f,
    // spatial..., c, window...).
    I32EnumAttrCase<"ConvSpatial", 7, "conv_spatial">,
    // Pooling over non-overlapping windows (the window's loops whole).
    I32EnumAttrCase<"PoolWindow", 8, "pool_window">,
    // A 16 x 16 block of a transpose, transposed in registers.
    I32EnumAttrCase<"Transpose", 9, "transpose">,
    // A reduction over small static windows after its parallel loops: a row
    // of outputs with their whole windows per tile.
    I32EnumAttrCase<"WindowReduction", 10, "window_reduction">,
    // A packed bf16 or i8 matmul tile on AMX tiles: loops (m, n, k / group,
    // group), each whole; mithril-x86-tile-matmuls writes it after
    // bufferization.
    I32EnumAttrCase<"TileMatmul", 11, "tile_matmul">,
    // A 2-D convolution of few input channels written channels-last: loops
    // (n, oh, ow, f, c, kh, kw); a row of output columns x vectors of output
    // channels accumulate in registers, each step an input value broadcast
    // against a vector of weights.
    I32EnumAttrCase<"ConvChannelsLast", 12, "conv_channels_last">,
    // A bf16 (or i8) 2-D convolution on AMX tiles, its windows read in
    // place: loops (n, oh, ow, f, kh, kw, c / group, group), tiles of rows
    // x 16 output columns x channels with the reduction whole;
    // mithril-x86-tile-matmuls writes each after bufferization.
    I32EnumAttrCase<"TileConv", 13, "tile_conv">
  ]> {
  let cppNamespace = "::mithril";
  let genSpecializedAttr = 0;
}

def Mithril_LoweringConfigAttr : AttrDef<Mithril_Dialect, "LoweringConfig"> {
  let mnemonic = "lowering_config";
  let summary = "How the CPU schedule tiles and lowers one linalg op";
  let description = [{
    Attached to a linalg op as `mithril.lowering_config` by the lowering
    (the kernel of the forms it builds, such as convolutions over flat rows)
    and by `mithril-cpu-strategy` (everything else), and consumed by
    `mithril-cpu-schedule`. Tiling copies it onto the tiles.

    - `kernel`: the register kernel (`CpuKernel`).
    - `register_tile`: the size of each loop in one register tile (0: the
      loop stays whole), chosen for the target's vector registers; empty
      until a strategy chose it. The schedule fits the sizes to the loops it
      meets (a tile no longer than its loop, dividing it).
    - `cache_tile`: for matmuls, the (rows, columns, reduction) block kept in
      the L2 cache, chosen from the target's cache size.
    - `threads`: `[loop, chunk]`, the loop split across threads and the
      chunk of each.
    - `window`: the loops a pooling window spans (`pool_window`).
    - `whole`: the op is already one register tile.

    ```mlir
    %0 = linalg.matmul {mithril.lowering_config = #mithril.lowering_config<
        kernel = matmul, register_tile = [8, 32, 1], cache_tile = [128, 256, 256]>} ...
    ```
  }];
  let parameters = (ins
    EnumParameter<Mithril_CpuKernel>:$kernel,
    OptionalArrayRefParameter<"int64_t">:$registerTile,
    OptionalArrayRefParameter<"int64_t">:$cacheTile,
    OptionalArrayRefParameter<"int64_t">:$threads,
    OptionalArrayRefParameter<"int64_t">:$window,
    DefaultValuedParameter<"bool", "false">:$whole
  );
  // `<kernel = K, register_tile = [..], cache_tile = [..], threads = [..],
  // window = [..], whole = true>`, the fields after the kernel in any order.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "CpuKernel":$kernel), [{
      return $_get($_ctxt, kernel, ArrayRef<int64_t>(), ArrayRef<int64_t>(),
                   ArrayRef<int64_t>(), ArrayRef<int64_t>(), false);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The discardable attribute of a linalg op that holds its config.
    static constexpr ::llvm::StringLiteral opAttrName = "mithril.lowering_config";
    /// This config with another field.
    LoweringConfigAttr withRegisterTile(::llvm::ArrayRef<int64_t> sizes) const;
    LoweringConfigAttr withCacheTile(::llvm::ArrayRef<int64_t> sizes) const;
    LoweringConfigAttr withThreads(int64_t loop, int64_t chunk) const;
    LoweringConfigAttr withWindow(::llvm::ArrayRef<int64_t> loops) const;
    LoweringConfigAttr asWhole() const;
  }];
}

#endif // MITHRIL_DIALECT_MITHRIL_IR_MITHRILLOWERINGCONFIG_TD
