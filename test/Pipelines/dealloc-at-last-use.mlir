// RUN: mithril-opt %s -mithril-dealloc-at-last-use | FileCheck %s

// Each temporary of a chain is freed as soon as the next op has read it,
// not at the end of the function: %a and %b never live at the same time as
// %d.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: linalg.copy ins(%[[A]] {{.*}} outs(%[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc
// CHECK-NEXT: linalg.copy ins(%[[B]] {{.*}} outs(%[[C]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[C]] {{.*}} outs(%arg0
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
func.func @chain(%out: memref<4xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %c = memref.alloc() : memref<4xf32>
  linalg.copy ins(%b : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.copy ins(%c : memref<4xf32>) outs(%out : memref<4xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

// A view keeps its buffer alive: the dealloc follows the view's last use.
// A buffer nothing uses is freed at once.
// CHECK-LABEL: func.func @view
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      %[[V:.*]] = memref.subview %[[A]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[V]] {{.*}} outs(%arg0
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: return
func.func @view(%out: memref<2xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4xf32>)
  %v = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  %b = memref.alloc() : memref<2xf32>
  linalg.copy ins(%v : memref<2xf32, strided<[1]>>) outs(%out : memref<2xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %b : memref<2xf32>
  return
}

// A use inside a loop counts as the loop: the buffer is freed after it.
// CHECK-LABEL: func.func @loop
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      scf.for
// CHECK:        memref.load %[[A]]
// CHECK:      }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: arith.constant
func.func @loop(%out: memref<4xf32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xf32>
    memref.store %x, %out[%i] : memref<4xf32>
  }
  %r = arith.constant 7 : index
  memref.dealloc %a : memref<4xf32>
  return %r : index
}

// A conditional dealloc (in another block than the alloc) stays where it is.
// CHECK-LABEL: func.func @conditional
// CHECK:      scf.if
// CHECK-NEXT:   memref.dealloc
func.func @conditional(%cond: i1) {
  %a = memref.alloc() : memref<4xf32>
  %x = arith.constant 1 : index
  scf.if %cond {
    memref.dealloc %a : memref<4xf32>
  }
  return
}
