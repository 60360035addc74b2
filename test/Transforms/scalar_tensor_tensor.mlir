// RUN: neuron-opt %s -neuron-scalar-tensor-tensor -split-input-file | FileCheck %s
// RUN: neuron-opt %s -neuron-scalar-tensor-tensor=target=trn1 -split-input-file | FileCheck %s --check-prefix=TRN1

// fp32 x * 0.5 + r, in place: tensor_scalar (N) + tensor_tensor (2N) -> one
// scalar_tensor_tensor (2N).
// CHECK-LABEL: func @residual_f32
// CHECK-NEXT: ntile.scalar_tensor_tensor mul add %arg0, 5.000000e-01, %arg1 to %arg2 :
// CHECK-NEXT: return
func.func @residual_f32(%x: memref<128x512xf32, #ntile.mem<sbuf>>, %r: memref<128x512xf32, #ntile.mem<sbuf>>, %t: memref<128x512xf32, #ntile.mem<sbuf>>) {
  ntile.tensor_scalar mul %x, 0.5 to %t : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor add %t, %r to %t : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  return
}

// -----

// bf16 on trn2: tensor_scalar in its 4x performance mode (N/4) and tensor_tensor at 2x (N/2)
// cost less than scalar_tensor_tensor (2N for mul then add): kept. On trn1 (no performance
// modes, bf16 tensor_tensor add N) the fused 2N saves one instruction's SBUF access
// overhead over N + N: fused.
// CHECK-LABEL: func @residual_bf16
// CHECK-NEXT: ntile.tensor_scalar mul
// CHECK-NEXT: ntile.tensor_tensor add
// TRN1-LABEL: func @residual_bf16
// TRN1-NEXT: ntile.scalar_tensor_tensor mul add
func.func @residual_bf16(%x: memref<128x512xbf16, #ntile.mem<sbuf>>, %r: memref<128x512xbf16, #ntile.mem<sbuf>>, %t: memref<128x512xbf16, #ntile.mem<sbuf>>) {
  ntile.tensor_scalar mul %x, 0.5 to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  ntile.tensor_tensor add %t, %r to %t : memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>, memref<128x512xbf16, #ntile.mem<sbuf>>
  return
}

// -----

// Softmax backward's g*y - y*s with s per partition: the row step becomes the scalar tile,
// the other tile is on the left of the subtraction (reverse1); the intermediate, read by
// nothing else, goes.
// CHECK-LABEL: func @softmax_backward
// CHECK-NEXT: %[[T:.*]] = memref.alloc
// CHECK-NEXT: ntile.scalar_tensor_tensor mul sub %arg0, 0.000000e+00 tile %arg2 : memref<128x1xf32, #ntile.mem<sbuf>>, %arg1 to %arg3 {reverse1}
// CHECK-NEXT: return
func.func @softmax_backward(%y: memref<128x256xf32, #ntile.mem<sbuf>>, %gy: memref<128x256xf32, #ntile.mem<sbuf>>, %s: memref<128x1xf32, #ntile.mem<sbuf>>, %out: memref<128x256xf32, #ntile.mem<sbuf>>) {
  %t = memref.alloc() : memref<128x256xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor mul %y, %s to %t : memref<128x256xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x256xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor sub %gy, %t to %out : memref<128x256xf32, #ntile.mem<sbuf>>, memref<128x256xf32, #ntile.mem<sbuf>>, memref<128x256xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Kept: the intermediate is read again later (written to another tile, so it survives),
// and a write of the step's source between the step and its consumer.
// CHECK-LABEL: func @kept
// CHECK-NOT: scalar_tensor_tensor
func.func @kept(%x: memref<128x512xf32, #ntile.mem<sbuf>>, %r: memref<128x512xf32, #ntile.mem<sbuf>>, %o: memref<128x512xf32, #ntile.mem<sbuf>>) {
  %t = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %x, 0.5 to %t : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor add %t, %r to %o : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor mul %t, %o to %o : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  %u = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %x, 0.5 to %u : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar add %x, 1.0 to %x : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor add %u, %r to %u : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x512xf32, #ntile.mem<sbuf>>
  return
}
