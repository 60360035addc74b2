// RUN: neuron-opt %s -neuron-lower | FileCheck %s
// RUN: neuron-opt %s -neuron-lower=target=trn1 | FileCheck %s --check-prefix=TRN1

// Linear -> ReLU with batch 3 and 200 features: the whole pipeline. The bias add and
// ReLU run as the matmul's epilogue, reading the result straight from PSUM.
// CHECK-LABEL: func @mlp()
// CHECK: nisa.buffer 0 input 0 : tensor<3x200xf32>
// CHECK: nisa.buffer 3 output 0 : tensor<3x300xf32>
// The 150 KiB weight tile, W^T, loads as four dma_transposes of 32 partitions on four
// queues. trn1 has no dma_transpose: there the operands' rows load contiguously and the
// Tensor engine transposes them (nc_transpose into PSUM, copied into the matmul's tiles);
// a 128 x 128 block of 512-byte rows loads in 4 parts (its descriptors' queue time: runs
// under 1 KiB at 42% of full rate).
// CHECK: nisa.dma_transpose on 6 <sbuf[0] + 64, {{\[\[}}1, 32], [1, 300]], f32>, <hbm[1] + 0, {{\[\[}}200, 300], [1, 32]], f32>
// CHECK-NEXT: nisa.dma_transpose on 7 <sbuf[32] + 64, {{\[\[}}1, 32], [1, 300]], f32>, <hbm[1] + 32,
// CHECK: nisa.nc_matmul on 0 <psum[0] + 0, {{\[\[}}1, 3], [1, 300]], f32>, <sbuf[0] + 0, {{\[\[}}1, 128], [1, 3]], f32>, {{.*}} wait [4, 1, 6, 1, 7, 1, 8, 1, 9, 1]
// CHECK: nisa.nc_matmul on 0 {{.*}} {accumulate}
// CHECK-NOT: nisa.tensor_copy
// CHECK: nisa.tensor_tensor add on 1 {{.*}}, <psum[0] + 0, {{\[\[}}1, 3], [1, 300]], f32> wait [0, 2, {{[0-9]+}}, 1]
// CHECK-NEXT: nisa.activation relu on 2
// CHECK: nisa.dma_copy on {{[0-9]+}} <hbm[3] + 0, {{\[\[}}300, 3], [1, 300]], f32>, {{.*}} wait [2, 1]
// CHECK-NEXT: return
// TRN1-LABEL: func @mlp()
// TRN1: nisa.dma_copy on {{[0-9]+}} <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 3], [1, 200]], f32>, <hbm[0] + 0, {{\[\[}}200, 3], [1, 200]], f32>
// TRN1-NEXT: nisa.nc_transpose on 0 <psum[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 3]], f32>, <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 3], [1, 128]], f32>
// TRN1: nisa.dma_copy on {{[0-9]+}} <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 32], [1, 128]], f32>, <hbm[1] + 0, {{\[\[}}200, 32], [1, 128]], f32>
// TRN1: nisa.nc_transpose on 0 <psum[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 128]], f32>
// TRN1-NOT: dma_transpose
// TRN1: nisa.nc_matmul on 0
func.func @mlp(%x: tensor<3x200xf32>, %w1: tensor<300x200xf32>, %b1: tensor<300xf32>) -> tensor<3x300xf32> {
  %t = ntorch.permute %w1 [1, 0] : tensor<300x200xf32> -> tensor<200x300xf32>
  %mm = ntorch.matmul %x, %t : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x300xf32>
  %a = ntorch.binary add %b1, %mm : tensor<300xf32>, tensor<3x300xf32> -> tensor<3x300xf32>
  %r = ntorch.unary relu %a : tensor<3x300xf32> -> tensor<3x300xf32>
  return %r : tensor<3x300xf32>
}
