// RUN: neuron-opt %s -neuron-overlap-collectives -split-input-file | FileCheck %s

// The scaling of the reduced gradient waits for the all-reduce: the independent matmul goes
// ahead of it; the collective stays first.
// CHECK-LABEL: func @independent_matmul
// CHECK: %[[R:.*]] = ntorch.collective all_reduce
// CHECK-NEXT: ntorch.constant
// CHECK-NEXT: %[[Y:.*]] = ntorch.matmul %arg1, %arg2
// CHECK-NEXT: ntorch.binary mul %[[R]]
// CHECK-NEXT: return
func.func @independent_matmul(%g: tensor<1024xf32>, %x: tensor<64x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<1024xf32>, tensor<64x64xf32>) {
  %r = ntorch.collective all_reduce add group "0" of 2 %g : tensor<1024xf32> -> tensor<1024xf32>
  %c = ntorch.constant dense<0.5> : tensor<f32>
  %s = ntorch.binary mul %r, %c : tensor<1024xf32>, tensor<f32> -> tensor<1024xf32>
  %y = ntorch.matmul %x, %w : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %s, %y : tensor<1024xf32>, tensor<64x64xf32>
}

// -----

// A chain on the result keeps its order after the independent op; a second collective that
// comes after a waiting op stays after it (every rank runs the collectives in one order),
// and so does what uses it.
// CHECK-LABEL: func @order_kept
// CHECK: %[[A:.*]] = ntorch.collective all_reduce add group "0" of 2 %arg0
// CHECK-NEXT: %[[E:.*]] = ntorch.unary exp %arg1
// CHECK-NEXT: %[[N:.*]] = ntorch.unary neg %[[A]]
// CHECK-NEXT: %[[B:.*]] = ntorch.collective all_reduce add group "0" of 2 %arg1
// CHECK-NEXT: ntorch.unary abs %[[N]]
// CHECK-NEXT: ntorch.unary exp %[[B]]
func.func @order_kept(%a: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %ra = ntorch.collective all_reduce add group "0" of 2 %a : tensor<8xf32> -> tensor<8xf32>
  %n = ntorch.unary neg %ra : tensor<8xf32> -> tensor<8xf32>
  %rb = ntorch.collective all_reduce add group "0" of 2 %b : tensor<8xf32> -> tensor<8xf32>
  %m = ntorch.unary abs %n : tensor<8xf32> -> tensor<8xf32>
  %e = ntorch.unary exp %b : tensor<8xf32> -> tensor<8xf32>
  %eb = ntorch.unary exp %rb : tensor<8xf32> -> tensor<8xf32>
  return %m, %e, %eb : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// No collective: nothing moves.
// CHECK-LABEL: func @no_collective
// CHECK: ntorch.unary neg
// CHECK-NEXT: ntorch.unary exp
func.func @no_collective(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %n = ntorch.unary neg %a : tensor<8xf32> -> tensor<8xf32>
  %e = ntorch.unary exp %a : tensor<8xf32> -> tensor<8xf32>
  return %n, %e : tensor<8xf32>, tensor<8xf32>
}
