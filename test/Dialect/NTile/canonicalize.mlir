// RUN: neuron-opt %s -canonicalize -split-input-file | FileCheck %s

// x * 2 + 1 in place: one Scalar-engine pass, identity(x * 2 + 1).
// CHECK-LABEL: func @mul_add
// CHECK-NEXT: %[[T:.*]] = memref.alloc
// CHECK-NEXT: ntile.activation identity %arg0 to %[[T]] {bias = 1.000000e+00 : f64, scale = 2.000000e+00 : f64}
// CHECK-NEXT: return %[[T]]
func.func @mul_add(%x: memref<128x512xbf16, #ntile.mem<sbuf>>) -> memref<128x512xbf16, #ntile.mem<sbuf>> {
  %t = memref.alloc() : memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %x, 2.0 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %t, 1.0 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  return %t : memref<128x512xbf16, #ntile.mem<sbuf>>
}

// -----

// exp((x - 0.5) * 3): a chain of three steps folds into the activation's scale and bias;
// a reversed subtraction (1 - y) negates.
// CHECK-LABEL: func @chain_into_exp
// CHECK-NEXT: %[[T:.*]] = memref.alloc
// CHECK-NEXT: ntile.activation exp %arg0 to %[[T]] {bias = -1.500000e+00 : f64, scale = 3.000000e+00 : f64}
// CHECK-NEXT: ntile.tensor_scalar sub %[[T]], 1.000000e+00 to %[[T]] {reverse}
// CHECK-NEXT: return
func.func @chain_into_exp(%x: memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>> {
  %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar sub %x, 0.5 to %t : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %t, 3.0 to %t : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.activation exp %t to %t : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar sub %t, 1.0 to %t {reverse} : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  return %t : memref<128x64xf32, #ntile.mem<sbuf>>
}

// -----

// Not folded: a division (no exact reciprocal), integers, a result kept in another tile
// (it may be read later), and steps that are not adjacent.
// CHECK-LABEL: func @kept
// CHECK-COUNT-2: ntile.tensor_scalar
// CHECK: ntile.tensor_scalar mul %arg1, 2.0{{.*}} to %[[I:[^ ]*]] :
// CHECK-NEXT: ntile.tensor_scalar add %[[I]], 1.0{{.*}} to %[[I]]
// CHECK: ntile.tensor_scalar mul %arg0, 2.0{{.*}} to %[[A:[^ ]*]] :
// CHECK-NEXT: ntile.tensor_scalar add %[[A]], 1.0{{.*}} to %[[B:[^ ]*]] :
// CHECK: ntile.tensor_scalar mul %arg0, 4.0{{.*}} to %[[C:[^ ]*]] :
// CHECK: ntile.copy
// CHECK-NEXT: ntile.tensor_scalar add %[[C]], 1.0{{.*}} to %[[C]]
func.func @kept(%x: memref<128x64xf32, #ntile.mem<sbuf>>, %i: memref<128x64xi32, #ntile.mem<sbuf>>) {
  %d = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar div %x, 3.0 to %d : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %d, 1.0 to %d : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %n = memref.alloc() : memref<128x64xi32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %i, 2.0 to %n : memref<128x64xi32, #ntile.mem<sbuf>>, memref<128x64xi32, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %n, 1.0 to %n : memref<128x64xi32, #ntile.mem<sbuf>>, memref<128x64xi32, #ntile.mem<sbuf>>
  %a = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %x, 2.0 to %a : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %a, 1.0 to %b : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %c = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  %e = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %x, 4.0 to %c : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.copy %c to %e : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %c, 1.0 to %c : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  return
}
