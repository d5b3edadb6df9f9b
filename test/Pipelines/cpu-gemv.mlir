// A Linear layer on a few rows (here one) reads its weight [out, in] in its
// own layout: no transpose is materialized; the reduction is split into 49
// steps of 16 lanes of partial sums held in registers (8 output columns x 16
// lanes, starting from zero), and each tile sums its lanes in registers once
// the steps are done: the partial sums never go to memory. The 8 accumulators
// are summed together, pairs of registers combining half their lanes at each
// level, into one register of the 8 sums in order.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=fusion" | FileCheck %s
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=512 stop-after=loops" | FileCheck %s --check-prefix=LOOPS

mithril.model @Linear1(data %x: tensor<1x784xf32>, param %w: tensor<512x784xf32>) -> (y: tensor<1x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<1x784xf32>, tensor<784x512xf32>) -> tensor<1x512xf32>
  mithril.output %y : tensor<1x512xf32>
}

// Rows that do not divide the register tile split into whole tiles and the
// rest (64 + 1 of 65), each part from a zero fill of its own, so every tile
// keeps a static shape and is vectorized.
mithril.model @Rows65(data %x: tensor<65x64xf32>, param %w: tensor<64x64xf32>) -> (y: tensor<65x64xf32>) {
  %y = mithril.matmul %x, %w : (tensor<65x64xf32>, tensor<64x64xf32>) -> tensor<65x64xf32>
  mithril.output %y : tensor<65x64xf32>
}

// CHECK-LABEL: func.func @Linear1(
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[W:.+]] = tensor.expand_shape %arg1 {{.*}} into tensor<512x49x16xf32>
// CHECK-DAG: %[[X:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<1x49x16xf32>
// CHECK: scf.for %[[N:.+]] = %c0 to %c512 step %c8
// CHECK: scf.for %[[K:.+]] = %c0 to %c49 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x8x16xf32>)
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %c0]{{.*}} : tensor<512x49x16xf32>, vector<8x1x16xf32>
// CHECK: %[[WROW:.+]] = vector.extract %{{.+}}[0, 0] : vector<16xf32> from vector<8x1x16xf32>
// CHECK: vector.fma %{{.+}}, %[[WROW]], %{{.+}} : vector<16xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: %[[ACC0:.+]] = vector.extract %[[SUMS:.+]][0, 0] : vector<16xf32> from vector<1x8x16xf32>
// CHECK: %[[ACC4:.+]] = vector.extract %[[SUMS]][0, 4] : vector<16xf32> from vector<1x8x16xf32>
// CHECK: %[[HIGH:.+]] = vector.shuffle %[[ACC0]], %[[ACC4]] [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
// CHECK: %[[LOW:.+]] = vector.shuffle %[[ACC0]], %[[ACC4]] [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK: arith.addf %[[LOW]], %[[HIGH]] : vector<16xf32>
// CHECK: %[[EIGHT:.+]] = arith.addf {{.*}} : vector<8xf32>
// CHECK: %[[TOTAL:.+]] = arith.addf %[[EIGHT]], {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write %[[TOTAL]], {{.*}} : vector<8xf32>, tensor<1x512xf32>

// CHECK-LABEL: func.func @Rows65(
// CHECK-NOT: to %c65
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c8
// CHECK: scf.for {{.*}} -> (vector<8x32xf32>)
// CHECK: tensor.extract_slice %{{.+}}[64, 0] [1, 64] [1, 1]
// CHECK: scf.for {{.*}} -> (vector<32xf32>)

// A weight of fewer than 16 columns (a classifier's 10 outputs) takes the
// matrix-vector kernel for any number of rows: tiles of 2 rows x 5 columns x
// 16 lanes over both operands' own rows (10 loads per 7 FMAs, where 4 x 2,
// the largest power of 2 of columns, took 6 per 8), no transpose and no
// packed panel.
mithril.model @Narrow10(data %x: tensor<256x512xf32>, param %w: tensor<10x512xf32>) -> (y: tensor<256x10xf32>) {
  %wt = mithril.transpose %w : (tensor<10x512xf32>) -> tensor<512x10xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x512xf32>, tensor<512x10xf32>) -> tensor<256x10xf32>
  mithril.output %y : tensor<256x10xf32>
}

// CHECK-LABEL: func.func @Narrow10(
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[X:.+]] = tensor.expand_shape %arg0 {{.*}} into tensor<256x32x16xf32>
// CHECK-DAG: %[[W:.+]] = tensor.expand_shape %arg1 {{.*}} into tensor<10x32x16xf32>
// CHECK: scf.for %[[N:.+]] = %c0 to %c10 step %c5
// CHECK: scf.for %[[M:.+]] = %c0 to %c256 step %c2
// CHECK: scf.for %[[K:.+]] = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x5x16xf32>)
// CHECK: vector.transfer_read %[[X]][%[[M]], %[[K]], %c0]{{.*}} : tensor<256x32x16xf32>, vector<2x1x16xf32>
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %c0]{{.*}} : tensor<10x32x16xf32>, vector<5x1x16xf32>

// The same with the weight compiled in: its transpose folds into a constant
// [512, 10], which becomes a constant [10, 512] read by the same kernel (it
// took the packed kernels' path, A's columns gathered element by element).
mithril.model @Narrow10Constant(data %x: tensor<256x64xf32>) -> (y: tensor<256x10xf32>) {
  %w = mithril.constant dense<0.5> : tensor<10x64xf32>
  %wt = mithril.transpose %w : (tensor<10x64xf32>) -> tensor<64x10xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x64xf32>, tensor<64x10xf32>) -> tensor<256x10xf32>
  mithril.output %y : tensor<256x10xf32>
}

// CHECK-LABEL: func.func @Narrow10Constant(
// CHECK-NOT: linalg.transpose
// CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<256x4x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c10 step %c5
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c2
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x5x16xf32>)

// A product by a few columns that are not a weight's transpose (`x @ b`, b
// [512, 7]) takes the same kernel on a copy of b's rows, [7, 512] (the
// packed kernels read x down its columns, 8 rows a step, for each of the 7
// columns: 0.029 against 0.020 ms here on one Zen 4 core); all 7 columns in
// a tile of 2 rows (where one column a tile read each row of x 7 times).
// One column is already a row: a view, no copy. A reduction that the lanes
// do not divide (100) takes them over its first 96 steps, then a product of
// the 4 left adds into the result (it read x down its columns throughout).
mithril.model @NarrowOperand7(data %x: tensor<256x512xf32>, data %b: tensor<512x7xf32>) -> (y: tensor<256x7xf32>) {
  %y = mithril.matmul %x, %b : (tensor<256x512xf32>, tensor<512x7xf32>) -> tensor<256x7xf32>
  mithril.output %y : tensor<256x7xf32>
}

mithril.model @OneColumn(data %x: tensor<256x512xf32>, data %b: tensor<512x1xf32>) -> (y: tensor<256x1xf32>) {
  %y = mithril.matmul %x, %b : (tensor<256x512xf32>, tensor<512x1xf32>) -> tensor<256x1xf32>
  mithril.output %y : tensor<256x1xf32>
}

mithril.model @NarrowOddDepth(data %x: tensor<256x100xf32>, data %b: tensor<100x7xf32>) -> (y: tensor<256x7xf32>) {
  %y = mithril.matmul %x, %b : (tensor<256x100xf32>, tensor<100x7xf32>) -> tensor<256x7xf32>
  mithril.output %y : tensor<256x7xf32>
}

// A Linear layer of 100 inputs at one row: the lanes over its first 96
// inputs, then a product of the 4 left (the packed kernels' one row took 2.7
// times as long, 1000 inputs by 1000 outputs 3.4 times; from 9 rows of a
// weight of 16 or more outputs, the packed kernels take it all).
mithril.model @Linear1Depth100(data %x: tensor<1x100xf32>, param %w: tensor<512x100xf32>) -> (y: tensor<1x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x100xf32>) -> tensor<100x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<1x100xf32>, tensor<100x512xf32>) -> tensor<1x512xf32>
  mithril.output %y : tensor<1x512xf32>
}

mithril.model @Linear16Depth100(data %x: tensor<16x100xf32>, param %w: tensor<512x100xf32>) -> (y: tensor<16x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x100xf32>) -> tensor<100x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<16x100xf32>, tensor<100x512xf32>) -> tensor<16x512xf32>
  mithril.output %y : tensor<16x512xf32>
}

// One row takes the lanes from one step of them (24 = 16 + 8): packing the
// transposed weight cost it more (0.0058 against 0.0037 ms for 1000 outputs);
// more rows keep the packed kernels under two steps.
mithril.model @Linear1Depth24(data %x: tensor<1x24xf32>, param %w: tensor<1000x24xf32>) -> (y: tensor<1x1000xf32>) {
  %wt = mithril.transpose %w : (tensor<1000x24xf32>) -> tensor<24x1000xf32>
  %y = mithril.matmul %x, %wt : (tensor<1x24xf32>, tensor<24x1000xf32>) -> tensor<1x1000xf32>
  mithril.output %y : tensor<1x1000xf32>
}

// CHECK-LABEL: func.func @NarrowOperand7(
// CHECK: %[[ROWS:.+]] = scf.for {{.*}} -> (tensor<7x512xf32>)
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<512x7xf32>, vector<16x7xf32>
// CHECK: %[[B:.+]] = tensor.expand_shape %[[ROWS]] {{.*}} into tensor<7x32x16xf32>
// CHECK: scf.for %[[M:.+]] = %c0 to %c256 step %c2
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x7x16xf32>)
// CHECK: vector.transfer_read %[[B]][%c0, %{{.+}}, %c0]{{.*}} : tensor<7x32x16xf32>, vector<7x1x16xf32>
// CHECK-LABEL: func.func @OneColumn(
// CHECK-NOT: linalg.transpose
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %arg1 {{.*}} into tensor<512xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{.*}} into tensor<1x32x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x1x16xf32>)
// CHECK-LABEL: func.func @NarrowOddDepth(
// CHECK: %[[X:.+]] = tensor.extract_slice %arg0[0, 0] [256, 96] [1, 1]
// CHECK: tensor.expand_shape %[[X]] {{.*}} into tensor<256x6x16xf32>
// CHECK: %[[LANES:.+]] = scf.for %{{.+}} = %c0 to %c256 step %c2
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x7x16xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c256 step %c128 iter_args(%{{.+}} = %[[LANES]]) -> (tensor<256x7xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<8x7xf32>)
// CHECK-LABEL: func.func @Linear1Depth100(
// CHECK-DAG: %[[X:.+]] = tensor.extract_slice %arg0[0, 0] [1, 96] [1, 1]
// CHECK-DAG: %[[W:.+]] = tensor.extract_slice %arg1[0, 0] [512, 96] [1, 1]
// CHECK-DAG: tensor.expand_shape %[[X]] {{.*}} into tensor<1x6x16xf32>
// CHECK-DAG: tensor.expand_shape %[[W]] {{.*}} into tensor<512x6x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x8x16xf32>)
// CHECK: vector.transfer_read %arg0[%c0, %c96]{{.*}} : tensor<1x100xf32>, vector<1x4xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1
// CHECK-LABEL: func.func @Linear16Depth100(
// CHECK-NOT: tensor<16x6x16xf32>
// CHECK: return
// CHECK-LABEL: func.func @Linear1Depth24(
// CHECK: tensor.extract_slice %arg1[0, 0] [1000, 16] [1, 1]

// A weight compiled in, read by one row: its folded transpose [32, 16] becomes
// the rows [16, 32] again, byte for byte (w[0][0..4] = 0, 1, 2, 3, 4 lead the
// constant), read by the matrix-vector kernel, which also splits across
// threads (a one-row tile of the packed kernels, on one thread, took 5x as
// long at batch 1 for the MLP 784-512-512-10 on two threads).
mithril.model @Batch1Constant(data %x: tensor<1x32xf32>) -> (y: tensor<1x16xf32>) {
  %w = mithril.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0], [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0], [64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0], [96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0], [128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0, 138.0, 139.0, 140.0, 141.0, 142.0, 143.0, 144.0, 145.0, 146.0, 147.0, 148.0, 149.0, 150.0, 151.0, 152.0, 153.0, 154.0, 155.0, 156.0, 157.0, 158.0, 159.0], [160.0, 161.0, 162.0, 163.0, 164.0, 165.0, 166.0, 167.0, 168.0, 169.0, 170.0, 171.0, 172.0, 173.0, 174.0, 175.0, 176.0, 177.0, 178.0, 179.0, 180.0, 181.0, 182.0, 183.0, 184.0, 185.0, 186.0, 187.0, 188.0, 189.0, 190.0, 191.0], [192.0, 193.0, 194.0, 195.0, 196.0, 197.0, 198.0, 199.0, 200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0, 218.0, 219.0, 220.0, 221.0, 222.0, 223.0], [224.0, 225.0, 226.0, 227.0, 228.0, 229.0, 230.0, 231.0, 232.0, 233.0, 234.0, 235.0, 236.0, 237.0, 238.0, 239.0, 240.0, 241.0, 242.0, 243.0, 244.0, 245.0, 246.0, 247.0, 248.0, 249.0, 250.0, 251.0, 252.0, 253.0, 254.0, 255.0], [256.0, 257.0, 258.0, 259.0, 260.0, 261.0, 262.0, 263.0, 264.0, 265.0, 266.0, 267.0, 268.0, 269.0, 270.0, 271.0, 272.0, 273.0, 274.0, 275.0, 276.0, 277.0, 278.0, 279.0, 280.0, 281.0, 282.0, 283.0, 284.0, 285.0, 286.0, 287.0], [288.0, 289.0, 290.0, 291.0, 292.0, 293.0, 294.0, 295.0, 296.0, 297.0, 298.0, 299.0, 300.0, 301.0, 302.0, 303.0, 304.0, 305.0, 306.0, 307.0, 308.0, 309.0, 310.0, 311.0, 312.0, 313.0, 314.0, 315.0, 316.0, 317.0, 318.0, 319.0], [320.0, 321.0, 322.0, 323.0, 324.0, 325.0, 326.0, 327.0, 328.0, 329.0, 330.0, 331.0, 332.0, 333.0, 334.0, 335.0, 336.0, 337.0, 338.0, 339.0, 340.0, 341.0, 342.0, 343.0, 344.0, 345.0, 346.0, 347.0, 348.0, 349.0, 350.0, 351.0], [352.0, 353.0, 354.0, 355.0, 356.0, 357.0, 358.0, 359.0, 360.0, 361.0, 362.0, 363.0, 364.0, 365.0, 366.0, 367.0, 368.0, 369.0, 370.0, 371.0, 372.0, 373.0, 374.0, 375.0, 376.0, 377.0, 378.0, 379.0, 380.0, 381.0, 382.0, 383.0], [384.0, 385.0, 386.0, 387.0, 388.0, 389.0, 390.0, 391.0, 392.0, 393.0, 394.0, 395.0, 396.0, 397.0, 398.0, 399.0, 400.0, 401.0, 402.0, 403.0, 404.0, 405.0, 406.0, 407.0, 408.0, 409.0, 410.0, 411.0, 412.0, 413.0, 414.0, 415.0], [416.0, 417.0, 418.0, 419.0, 420.0, 421.0, 422.0, 423.0, 424.0, 425.0, 426.0, 427.0, 428.0, 429.0, 430.0, 431.0, 432.0, 433.0, 434.0, 435.0, 436.0, 437.0, 438.0, 439.0, 440.0, 441.0, 442.0, 443.0, 444.0, 445.0, 446.0, 447.0], [448.0, 449.0, 450.0, 451.0, 452.0, 453.0, 454.0, 455.0, 456.0, 457.0, 458.0, 459.0, 460.0, 461.0, 462.0, 463.0, 464.0, 465.0, 466.0, 467.0, 468.0, 469.0, 470.0, 471.0, 472.0, 473.0, 474.0, 475.0, 476.0, 477.0, 478.0, 479.0], [480.0, 481.0, 482.0, 483.0, 484.0, 485.0, 486.0, 487.0, 488.0, 489.0, 490.0, 491.0, 492.0, 493.0, 494.0, 495.0, 496.0, 497.0, 498.0, 499.0, 500.0, 501.0, 502.0, 503.0, 504.0, 505.0, 506.0, 507.0, 508.0, 509.0, 510.0, 511.0]]> : tensor<16x32xf32>
  %wt = mithril.transpose %w : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %y = mithril.matmul %x, %wt : (tensor<1x32xf32>, tensor<32x16xf32>) -> tensor<1x16xf32>
  mithril.output %y : tensor<1x16xf32>
}

// CHECK-LABEL: func.func @Batch1Constant(
// CHECK-NOT: linalg.transpose
// CHECK: %[[W:.+]] = arith.constant dense<"0x000000000000803F000000400000404000008040{{.*}}"> : tensor<16x2x16xf32>
// CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<1x2x16xf32>
// CHECK: scf.for %[[N:.+]] = %c0 to %c16 step %c8
// CHECK: scf.for %[[K:.+]] = %c0 to %c2 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x8x16xf32>)
// CHECK: vector.transfer_read %[[W]][%[[N]], %[[K]], %c0]{{.*}} : tensor<16x2x16xf32>, vector<8x1x16xf32>

// The transfers are unrolled to 1-D: no stack buffers inside the loops.
// LOOPS-NOT: memref.alloca

// Lanes are one register of the element type: 8 of f64 with AVX-512 (16 took
// two registers each, all 32 for the 4 x 4 tile), 8 of f32 with AVX2, where a
// tile holds 8 accumulators of the 16 ymm registers, 1 x 8 for one row and
// 2 x 4 for 2 or 4, so that 6 loads feed 8 FMAs (2 x 2 of 16 lanes took 8),
// and 12 from 5 rows: 3 x 4, the rows past the tiles of 3 in tiles of 2,
// inside each group of 4 weight rows (16 = 12 + 4). Each tile's FMAs go
// column by column, a weight row read just before the 3 FMAs that share it,
// and its 12 sums are summed in 3 shuffle trees of 4.
// RUN: mithril-opt %s --mithril-cpu-pipeline="vector-bits=256 stop-after=fusion" | FileCheck %s --check-prefix=YMM
mithril.model @Linear4F64(data %x: tensor<4x784xf64>, param %w: tensor<512x784xf64>) -> (y: tensor<4x512xf64>) {
  %wt = mithril.transpose %w : (tensor<512x784xf64>) -> tensor<784x512xf64>
  %y = mithril.matmul %x, %wt : (tensor<4x784xf64>, tensor<784x512xf64>) -> tensor<4x512xf64>
  mithril.output %y : tensor<4x512xf64>
}

mithril.model @Linear16(data %x: tensor<16x784xf32>, param %w: tensor<512x784xf32>) -> (y: tensor<16x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %y = mithril.matmul %x, %wt : (tensor<16x784xf32>, tensor<784x512xf32>) -> tensor<16x512xf32>
  mithril.output %y : tensor<16x512xf32>
}

mithril.model @Linear16Relu(data %x: tensor<16x784xf32>, param %w: tensor<512x784xf32>, param %b: tensor<512xf32>) -> (y: tensor<16x512xf32>) {
  %wt = mithril.transpose %w : (tensor<512x784xf32>) -> tensor<784x512xf32>
  %mm = mithril.matmul %x, %wt : (tensor<16x784xf32>, tensor<784x512xf32>) -> tensor<16x512xf32>
  %a = mithril.add %mm, %b : (tensor<16x512xf32>, tensor<512xf32>) -> tensor<16x512xf32>
  %y = mithril.relu %a : (tensor<16x512xf32>) -> tensor<16x512xf32>
  mithril.output %y : tensor<16x512xf32>
}

// Each weight-row group's tiles read all rows of A over the reduction: on a
// core with 512-bit datapaths (Skylake-SP), where those and the group's
// weight rows outgrow the L1 (7/8 of its 32 KiB), the reduction is taken in
// parts, each adding its lane sums to the last one's result. 4 x 784
// float64: two parts of 49 steps. Zen 4 (the host these tests name) runs
// its 512-bit FMAs in two halves and reads A from L2 at the rate they take
// it: one part of 98 steps.
// RUN: mithril-opt %s --mithril-cpu-pipeline="target-cpu=skylake-avx512 stop-after=fusion" | FileCheck %s --check-prefix=PARTS
// PARTS-LABEL: func.func @Linear4F64(
// PARTS: tensor.extract_slice %arg0[0, 0] [4, 392] [1, 1]
// PARTS: scf.for %{{.+}} = %c0 to %c49 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x8xf64>)
// PARTS: tensor.extract_slice %arg0[0, 392] [4, 392] [1, 1]
// PARTS: scf.for %{{.+}} = %c0 to %c49 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x8xf64>)
// CHECK-LABEL: func.func @Linear4F64(
// CHECK-NOT: tensor.extract_slice %arg0
// CHECK: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x8xf64>)
// CHECK-NOT: vector<4x4x8xf64>)
// CHECK: return

// YMM-LABEL: func.func @Linear1(
// YMM: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x8x8xf32>)
// YMM-LABEL: func.func @NarrowOperand7(
// YMM: scf.for %{{.+}} = %c0 to %c64 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<1x7x8xf32>)
// YMM-LABEL: func.func @Linear4F64(
// YMM: scf.for %{{.+}} = %c0 to %c196 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x4x4xf64>)
// YMM-NOT: vector<2x4x4xf64>)
// YMM-LABEL: func.func @Linear16(
// (16 x 784 in 8 lanes: one part of 98 steps, 256-bit FMAs reading A from
// L2 at half the rate of 512-bit ones; Skylake-SP's AVX-512 code took three
// parts.)
// YMM-NOT: tensor.extract_slice %arg0
// YMM: scf.for %{{.+}} = %c0 to %c512 step %c4
// YMM: scf.for %{{.+}} = %c0 to %c12 step %c3 iter_args(%{{.+}} = %{{.+}}) -> (tensor<12x4xf32>)
// YMM: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<3x4x8xf32>)
// YMM: %[[W0:.+]] = vector.extract %{{.+}}[0, 0] : vector<8xf32> from vector<4x1x8xf32>
// YMM-COUNT-3: vector.fma %{{.+}}, %[[W0]], %{{.+}} : vector<8xf32>
// YMM: %[[W1:.+]] = vector.extract %{{.+}}[1, 0] : vector<8xf32> from vector<4x1x8xf32>
// YMM-COUNT-3: vector.fma %{{.+}}, %[[W1]], %{{.+}} : vector<8xf32>
// YMM-NOT: vector.multi_reduction
// YMM: vector.transfer_write %{{.+}} : vector<3x4xf32>, tensor<12x4xf32>
// YMM: scf.for %{{.+}} = %c0 to %c4 step %c2 iter_args(%{{.+}} = %{{.+}}) -> (tensor<4x4xf32>)
// YMM: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x4x8xf32>)
// YMM-NOT: vector.multi_reduction
// YMM: vector.transfer_write %{{.+}} : vector<2x4xf32>, tensor<4x4xf32>
// A bias and activation after the product are the root of its tiles: each
// tile adds the bias to its sums and takes the relu in registers, and writes
// the layer's result once. No fill of the product, and no pass of the bias
// and relu over it after.
// YMM-LABEL: func.func @Linear16Relu(
// YMM-NOT: linalg.fill
// YMM: scf.for %{{.+}} = %c0 to %c12 step %c3 iter_args(%{{.+}} = %{{.+}}) -> (tensor<12x4xf32>)
// YMM: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<3x4x8xf32>)
// YMM: %[[B3:.+]] = vector.broadcast %{{.+}} : vector<4xf32> to vector<3x4xf32>
// YMM: %[[S3:.+]] = arith.addf %{{.+}}, %[[B3]] : vector<3x4xf32>
// YMM: %[[R3:.+]] = arith.maximumf %[[S3]], %{{.+}} : vector<3x4xf32>
// YMM: vector.transfer_write %[[R3]], %{{.+}} : vector<3x4xf32>, tensor<12x4xf32>
// YMM: scf.for %{{.+}} = %c0 to %c98 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<2x4x8xf32>)
// YMM: %[[R2:.+]] = arith.maximumf %{{.+}} : vector<2x4xf32>
// YMM: vector.transfer_write %[[R2]], %{{.+}} : vector<2x4xf32>, tensor<4x4xf32>
// YMM-NOT: arith.maximumf
// YMM-NOT: linalg.fill
// YMM: return

// Columns past whole vectors of lanes that are fewer than a vector's lanes
// (17 = 16 + 1) are split off the product as a matrix-vector product of
// their own: A read by rows in lanes, as a product by so few columns is, not
// gathered down its column for a masked vector of B. A rest of a transposed
// weight's columns reads the weight's rows as stored.
mithril.model @NarrowRest17(data %x: tensor<256x512xf32>, param %b: tensor<512x17xf32>) -> (y: tensor<256x17xf32>) {
  %y = mithril.matmul %x, %b : (tensor<256x512xf32>, tensor<512x17xf32>) -> tensor<256x17xf32>
  mithril.output %y : tensor<256x17xf32>
}

mithril.model @LinearRest20(data %x: tensor<256x512xf32>, param %w: tensor<20x512xf32>) -> (y: tensor<256x20xf32>) {
  %wt = mithril.transpose %w : (tensor<20x512xf32>) -> tensor<512x20xf32>
  %y = mithril.matmul %x, %wt : (tensor<256x512xf32>, tensor<512x20xf32>) -> tensor<256x20xf32>
  mithril.output %y : tensor<256x20xf32>
}

// CHECK-LABEL: func.func @NarrowRest17(
// CHECK: scf.for {{.*}} -> (vector<8x16xf32>)
// CHECK: %[[COLUMN:.+]] = tensor.extract_slice %arg1[0, 16] [512, 1] [1, 1]
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[COLUMN]] {{.*}} into tensor<512xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{.*}} into tensor<1x32x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x1x16xf32>)
// CHECK-LABEL: func.func @LinearRest20(
// CHECK: scf.for {{.*}} -> (vector<8x16xf32>)
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %arg1[16, 0] [4, 512] [1, 1]
// CHECK: tensor.expand_shape %[[ROWS]] {{.*}} into tensor<4x32x16xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (vector<4x4x16xf32>)
