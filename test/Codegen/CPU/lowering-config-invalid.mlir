// RUN: mithril-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{cache_tile must be 3 positive sizes (rows, columns, reduction)}}
func.func private @f() attributes {c = #mithril.lowering_config<kernel = matmul, cache_tile = [128, 256]>}

// -----

// expected-error @+1 {{threads must be [loop, chunk] with a chunk above 0}}
func.func private @g() attributes {c = #mithril.lowering_config<kernel = default, threads = [0, 0]>}

// -----

// expected-error @+1 {{register_tile sizes must be 0 (whole loop) or positive}}
func.func private @h() attributes {c = #mithril.lowering_config<kernel = default, register_tile = [8, -1]>}

// -----

// expected-error @+1 {{unknown kernel 'gemm'}}
func.func private @k() attributes {c = #mithril.lowering_config<kernel = gemm>}
