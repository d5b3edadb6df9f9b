// bf16 vectors of lengths no power of two (a 5 x 5 block's copy in a bf16
// model: vector<25xbf16>) load and store as i16 vectors: LLVM 22's x86
// instruction selection aborts on them ("Do not know how to soft promote
// this operator's operand!"). Powers of two stay bf16.
// RUN: mithril-opt %s --mithril-legalize-bf16-memory | FileCheck %s

// CHECK-LABEL: llvm.func @copy(
// CHECK: %[[BITS:.+]] = llvm.load %{{.+}} {alignment = 4 : i64} : !llvm.ptr -> vector<25xi16>
// CHECK: %[[VALUE:.+]] = llvm.bitcast %[[BITS]] : vector<25xi16> to vector<25xbf16>
// CHECK: %[[WIDE:.+]] = llvm.fpext %[[VALUE]] : vector<25xbf16> to vector<25xf32>
// CHECK: %[[STORED:.+]] = llvm.bitcast %[[VALUE]] : vector<25xbf16> to vector<25xi16>
// CHECK: llvm.store %[[STORED]], %{{.+}} {alignment = 64 : i64} : vector<25xi16>, !llvm.ptr
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> vector<32xbf16>
// CHECK: llvm.store %{{.+}}, %{{.+}} : vector<32xbf16>, !llvm.ptr
llvm.func @copy(%p: !llvm.ptr, %q: !llvm.ptr, %r: !llvm.ptr) -> vector<25xf32> {
  %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> vector<25xbf16>
  %w = llvm.fpext %v : vector<25xbf16> to vector<25xf32>
  llvm.store %v, %q {alignment = 64 : i64} : vector<25xbf16>, !llvm.ptr
  %x = llvm.load %r : !llvm.ptr -> vector<32xbf16>
  llvm.store %x, %q : vector<32xbf16>, !llvm.ptr
  llvm.return %w : vector<25xf32>
}

// CHECK-LABEL: llvm.func @masked(
// CHECK: %[[PASS:.+]] = llvm.bitcast %{{.+}} : vector<5xbf16> to vector<5xi16>
// CHECK: %[[BITS:.+]] = llvm.intr.masked.load %{{.+}}, %{{.+}}, %[[PASS]] {alignment = 2 : i32} : (!llvm.ptr, vector<5xi1>, vector<5xi16>) -> vector<5xi16>
// CHECK: %[[VALUE:.+]] = llvm.bitcast %[[BITS]] : vector<5xi16> to vector<5xbf16>
// CHECK: %[[STORED:.+]] = llvm.bitcast %[[VALUE]] : vector<5xbf16> to vector<5xi16>
// CHECK: llvm.intr.masked.store %[[STORED]], %{{.+}}, %{{.+}} {alignment = 2 : i32} : vector<5xi16>, vector<5xi1> into !llvm.ptr
llvm.func @masked(%p: !llvm.ptr, %q: !llvm.ptr, %m: vector<5xi1>, %pass: vector<5xbf16>) {
  %v = llvm.intr.masked.load %p, %m, %pass {alignment = 2 : i32} : (!llvm.ptr, vector<5xi1>, vector<5xbf16>) -> vector<5xbf16>
  llvm.intr.masked.store %v, %q, %m {alignment = 2 : i32} : vector<5xbf16>, vector<5xi1> into !llvm.ptr
  llvm.return
}
