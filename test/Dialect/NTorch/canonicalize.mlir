// RUN: neuron-opt %s -canonicalize -split-input-file | FileCheck %s

// A transpose feeding a matmul becomes a flag: the DMA reads the tile transposed.
// CHECK-LABEL: func @fold_transpose_into_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<3x200xf32>, %[[W:.*]]: tensor<300x200xf32>)
// CHECK-NEXT: %[[R:.*]] = ntorch.matmul %[[X]], %[[W]] {transpose_rhs}
// CHECK-NEXT: return %[[R]]
func.func @fold_transpose_into_matmul(%x: tensor<3x200xf32>, %w: tensor<300x200xf32>) -> tensor<3x300xf32> {
  %t = ntorch.permute %w [1, 0] : tensor<300x200xf32> -> tensor<200x300xf32>
  %0 = ntorch.matmul %x, %t : tensor<3x200xf32>, tensor<200x300xf32> -> tensor<3x300xf32>
  return %0 : tensor<3x300xf32>
}

// -----

// Binary ops broadcast by themselves.
// CHECK-LABEL: func @fold_broadcast_into_binary
// CHECK-NOT: ntorch.broadcast
// CHECK: ntorch.binary mul %{{.*}}, %{{.*}} : tensor<3x200xf32>, tensor<1x200xf32>
func.func @fold_broadcast_into_binary(%x: tensor<3x200xf32>, %b: tensor<1x200xf32>) -> tensor<3x200xf32> {
  %e = ntorch.broadcast %b : tensor<1x200xf32> -> tensor<3x200xf32>
  %0 = ntorch.binary mul %x, %e : tensor<3x200xf32>, tensor<3x200xf32> -> tensor<3x200xf32>
  return %0 : tensor<3x200xf32>
}

// -----

// Identity views fold away; chains of reshapes collapse.
// CHECK-LABEL: func @fold_views
// CHECK-NEXT: %[[R:.*]] = ntorch.reshape %arg0 : tensor<3x200xf32> -> tensor<200x3xf32>
// CHECK-NEXT: return %[[R]]
func.func @fold_views(%x: tensor<3x200xf32>) -> tensor<200x3xf32> {
  %0 = ntorch.permute %x [0, 1] : tensor<3x200xf32> -> tensor<3x200xf32>
  %1 = ntorch.cast %0 : tensor<3x200xf32> -> tensor<3x200xf32>
  %2 = ntorch.reshape %1 : tensor<3x200xf32> -> tensor<600xf32>
  %3 = ntorch.reshape %2 : tensor<600xf32> -> tensor<200x3xf32>
  return %3 : tensor<200x3xf32>
}

// -----

// PyTorch's CPU attention in bf16: q and k upcast to fp32 and scaled before QK^T. The scale
// moves to the fp32 result, the widening casts fold away: a bf16 matmul with an fp32 result
// (the Tensor engine's products are exact in its fp32 accumulator).
// CHECK-LABEL: func @bf16_attention_scores
// CHECK-NOT: ntorch.cast
// CHECK: %[[KT:.*]] = ntorch.reshape %{{.*}} : tensor<1x2x64x128xbf16> -> tensor<2x64x128xbf16>
// CHECK: %[[S:.*]] = ntorch.matmul %{{.*}}, %[[KT]] : tensor<2x128x64xbf16>, tensor<2x64x128xbf16> -> tensor<2x128x128xf32>
// CHECK: %[[M1:.*]] = ntorch.binary mul %[[S]], %{{.*}} : tensor<2x128x128xf32>, tensor<f32>
// CHECK: ntorch.binary mul %[[M1]], %{{.*}} : tensor<2x128x128xf32>, tensor<f32>
func.func @bf16_attention_scores(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>) -> tensor<2x128x128xf32> {
  %s = ntorch.constant dense<0.353553385> : tensor<f32>
  %qf = ntorch.cast %q : tensor<1x2x128x64xbf16> -> tensor<1x2x128x64xf32>
  %kf = ntorch.cast %k : tensor<1x2x128x64xbf16> -> tensor<1x2x128x64xf32>
  %qs = ntorch.binary mul %qf, %s : tensor<1x2x128x64xf32>, tensor<f32> -> tensor<1x2x128x64xf32>
  %kt = ntorch.permute %kf [0, 1, 3, 2] : tensor<1x2x128x64xf32> -> tensor<1x2x64x128xf32>
  %ks = ntorch.binary mul %kt, %s : tensor<1x2x64x128xf32>, tensor<f32> -> tensor<1x2x64x128xf32>
  %q3 = ntorch.reshape %qs : tensor<1x2x128x64xf32> -> tensor<2x128x64xf32>
  %k3 = ntorch.reshape %ks : tensor<1x2x64x128xf32> -> tensor<2x64x128xf32>
  %r = ntorch.matmul %q3, %k3 : tensor<2x128x64xf32>, tensor<2x64x128xf32> -> tensor<2x128x128xf32>
  return %r : tensor<2x128x128xf32>
}

// -----

// A scale on a matmul with a bf16 result stays where it is (moving it would round twice),
// and a narrowing (not widening) cast is not folded.
// CHECK-LABEL: func @bf16_result_keeps_its_scale
// CHECK: ntorch.binary mul %arg0
// CHECK: ntorch.matmul
func.func @bf16_result_keeps_its_scale(%a: tensor<4x8xbf16>, %b: tensor<8x4xbf16>) -> tensor<4x4xbf16> {
  %s = ntorch.constant dense<0.5> : tensor<f32>
  %as = ntorch.binary mul %a, %s : tensor<4x8xbf16>, tensor<f32> -> tensor<4x8xbf16>
  %r = ntorch.matmul %as, %b : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xbf16>
  return %r : tensor<4x4xbf16>
}

// -----

// A product with an empty contraction dim is zeros (eager's mm of 2x0 and 0x2).
// CHECK-LABEL: func @empty_contraction_matmul
// CHECK-NEXT: %[[Z:.*]] = ntorch.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK-NEXT: return %[[Z]]
func.func @empty_contraction_matmul(%a: tensor<2x0xf32>, %b: tensor<0x2xf32>) -> tensor<2x2xf32> {
  %r = ntorch.matmul %a, %b : tensor<2x0xf32>, tensor<0x2xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// A sum over an empty dim is zeros, in any element type; an empty result an empty constant
// (the lowering reduces no empty dim).
// CHECK-LABEL: func @empty_sum
// CHECK-DAG: %[[F:.*]] = ntorch.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[I:.*]] = ntorch.constant dense<0> : tensor<3xi32>
// CHECK-DAG: %[[K:.*]] = ntorch.reshape %[[I]] : tensor<3xi32> -> tensor<1x3xi32>
// CHECK-DAG: %[[E:.*]] = ntorch.constant dense<> : tensor<0xf32>
// CHECK: return %[[F]], %[[K]], %[[E]]
func.func @empty_sum(%x: tensor<3x0xf32>, %y: tensor<0x3xi32>, %z: tensor<0x3xf32>)
    -> (tensor<3xf32>, tensor<1x3xi32>, tensor<0xf32>) {
  %a = ntorch.reduce sum %x [1] : tensor<3x0xf32> -> tensor<3xf32>
  %b = ntorch.reduce sum %y [0] {keepdim} : tensor<0x3xi32> -> tensor<1x3xi32>
  %c = ntorch.reduce sum %z [1] : tensor<0x3xf32> -> tensor<0xf32>
  return %a, %b, %c : tensor<3xf32>, tensor<1x3xi32>, tensor<0xf32>
}

// -----

// The max of an empty dim (an error in eager) is left to the lowering, which rejects it.
// CHECK-LABEL: func @empty_max_stays
// CHECK: ntorch.reduce max
func.func @empty_max_stays(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %a = ntorch.reduce max %x [1] : tensor<3x0xf32> -> tensor<3xf32>
  return %a : tensor<3xf32>
}
