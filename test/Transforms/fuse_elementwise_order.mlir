// RUN: neuron-opt %s -neuron-fuse-elementwise | FileCheck %s

// hypot's ops form interleaved groups: outlining one moves the ops that use its results
// after it, so a later group goes after the definitions of its inputs (here the first
// fusion), not after its own last op, which would leave an input undefined at its use.
// CHECK-LABEL: func @main
// CHECK: %[[A:.*]]:2 = ntorch.fusion %{{.*}} :
// CHECK: %[[B:.*]]:2 = ntorch.fusion %{{.*}}, %[[A]]#0 :
// CHECK: %[[C:.*]] = ntorch.fusion %[[A]]#1, %[[B]]#1, %[[B]]#0 :
func.func @main(%arg0: tensor<2x324xf32>, %arg1: tensor<2x324xf32>) -> tensor<2x324xf32> {
  %0 = ntorch.constant dense<0x7F800000> : tensor<f32>
  %1 = ntorch.constant dense<0.000000e+00> : tensor<f32>
  %2 = ntorch.constant dense<1.000000e+00> : tensor<f32>
  %3 = ntorch.reshape %arg0 : tensor<2x324xf32> -> tensor<108x6xf32>
  %4 = ntorch.unary abs %3 : tensor<108x6xf32> -> tensor<108x6xf32>
  %5 = ntorch.reshape %arg1 : tensor<2x324xf32> -> tensor<108x6xf32>
  %6 = ntorch.unary abs %5 : tensor<108x6xf32> -> tensor<108x6xf32>
  %7 = ntorch.binary max %4, %6 : tensor<108x6xf32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %8 = ntorch.binary min %4, %6 : tensor<108x6xf32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %9 = ntorch.binary div %8, %7 : tensor<108x6xf32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %10 = ntorch.binary mul %9, %9 : tensor<108x6xf32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %11 = ntorch.binary add %10, %2 : tensor<108x6xf32>, tensor<f32> -> tensor<108x6xf32>
  %12 = ntorch.unary sqrt %11 : tensor<108x6xf32> -> tensor<108x6xf32>
  %13 = ntorch.binary mul %7, %12 : tensor<108x6xf32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %14 = ntorch.binary eq %7, %1 : tensor<108x6xf32>, tensor<f32> -> tensor<108x6xi1>
  %15 = ntorch.select %14, %1, %13 : tensor<108x6xi1>, tensor<f32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %16 = ntorch.binary eq %6, %0 : tensor<108x6xf32>, tensor<f32> -> tensor<108x6xi1>
  %17 = ntorch.binary eq %4, %0 : tensor<108x6xf32>, tensor<f32> -> tensor<108x6xi1>
  %18 = ntorch.binary or %17, %16 : tensor<108x6xi1>, tensor<108x6xi1> -> tensor<108x6xi1>
  %19 = ntorch.select %18, %0, %15 : tensor<108x6xi1>, tensor<f32>, tensor<108x6xf32> -> tensor<108x6xf32>
  %20 = ntorch.reshape %19 : tensor<108x6xf32> -> tensor<2x324xf32>
  return %20 : tensor<2x324xf32>
}
