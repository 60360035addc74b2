// RUN: neuron-opt %s -canonicalize -split-input-file | FileCheck %s

// x * 2 + 1 in place: one two-op tensor_scalar (one pass; neuron-balance-engines may run it
// on the Scalar engine as identity(x * 2 + 1)).
// CHECK-LABEL: func @mul_add
// CHECK-NEXT: %[[T:.*]] = memref.alloc
// CHECK-NEXT: ntile.tensor_scalar mul %arg0, 2.000000e+00 then add 1.000000e+00 to %[[T]] :
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

// A clamp (max then min) in place on bf16: one two-op tensor_scalar; an identity activation
// then an affine step: one activation.
// CHECK-LABEL: func @clamp
// CHECK-NEXT: %[[T:.*]] = memref.alloc
// CHECK-NEXT: ntile.tensor_scalar max %arg0, 0.000000e+00 then min 6.000000e+00 to %[[T]] :
// CHECK-NEXT: ntile.activation identity %[[T]] to %[[T]] {bias = 1.000000e+00 : f64, scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[T]]
func.func @clamp(%x: memref<128x512xbf16, #ntile.mem<sbuf>>) -> memref<128x512xbf16, #ntile.mem<sbuf>> {
  %t = memref.alloc() : memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_scalar max %x, 0.0 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_scalar min %t, 6.0 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.activation identity %t to %t {scale = 0.5 : f64} : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %t, 1.0 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  return %t : memref<128x512xbf16, #ntile.mem<sbuf>>
}

// -----

// A division then an add: one two-op tensor_scalar (the same ops in order; no affine fold,
// there is no exact reciprocal). Not folded: integers (two ops compute in fp32), a result
// kept in another tile (it may be read later), and steps that are not adjacent.
// CHECK-LABEL: func @kept
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.tensor_scalar div %arg0, 3.0{{.*}} then add 1.0{{.*}} to
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

// -----

// Softmax's x - max, exp, and row sum: the subtraction of the per-partition max becomes
// the activation's bias tile (times -1), and the sum reduce of the activation's fp32
// result becomes its row sums (accum); the sum tile moves before the activation.
// CHECK-LABEL: func @softmax_row_ops
// CHECK-NEXT: %[[E:.*]] = memref.alloc() : memref<128x64xf32
// CHECK-NEXT: %[[S:.*]] = memref.alloc() : memref<128x1xf32
// CHECK-NEXT: ntile.activation exp %arg0 bias %arg1 : memref<128x1xf32, #ntile.mem<sbuf>> to %[[E]] sum %[[S]] : memref<128x1xf32, #ntile.mem<sbuf>> {bias = -1.000000e+00 : f64}
// CHECK-NEXT: return %[[E]], %[[S]]
func.func @softmax_row_ops(%x: memref<128x64xbf16, #ntile.mem<sbuf>>, %m: memref<128x1xf32, #ntile.mem<sbuf>>) -> (memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>) {
  %e = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor sub %x, %m to %e : memref<128x64xbf16, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.activation exp %e to %e : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %s = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
  ntile.reduce add %e to %s : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
  return %e, %s : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
}

// -----

// No fold: a max reduce is not the Scalar engine's accumulate (add only), and a write of
// the activation's result between the two keeps the sum reduce where it is.
// CHECK-LABEL: func @no_row_sum_fold
// CHECK: ntile.activation exp %arg0 to %{{.*}} :
// CHECK: ntile.reduce max
// CHECK: ntile.tensor_scalar mul
// CHECK: ntile.reduce add
func.func @no_row_sum_fold(%x: memref<128x64xf32, #ntile.mem<sbuf>>) -> (memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>) {
  %e = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.activation exp %x to %e : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %m = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
  ntile.reduce max %e to %m : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %e, 2.0 to %e : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %s = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
  ntile.reduce add %e to %s : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
  return %m, %s : memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>
}
