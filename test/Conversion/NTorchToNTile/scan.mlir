// RUN: neuron-opt %s -convert-ntorch-to-ntile -split-input-file | FileCheck %s

// bf16 cumsum of [256, 5000]: two row blocks of 128, each in chunks of 2047 columns (an fp32
// tile of 2048 per partition) and the rest (906). The fp32 tile of ones carries the scan so far
// in column 0 (+0 at first, as eager's loop starts); each chunk's bf16 tile starts with -0, so the scan's first
// element, carry * 1 + -0, is the carry, and the scan goes on from there; the last column
// becomes the next carry; the result is rounded to bf16 once.
// CHECK-LABEL: func.func @cumsum
// CHECK-DAG: %[[NZ:.*]] = ntile.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-DAG: %[[ONE:.*]] = ntile.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK-DAG: %[[LEAD:.*]] = ntile.constant dense<-0.000000e+00> : tensor<1xbf16>
// CHECK: ntile.loop iv0 to 2 {
// CHECK: %[[C:.*]] = memref.alloc() : memref<128x2048xf32
// CHECK-NEXT: ntile.dma %[[ONE]] <0, {{\[\[}}0, 128], [0, 2048]]> to %[[C]]
// CHECK-NEXT: %[[C0:.*]] = ntile.view %[[C]] <0, {{\[\[}}2048, 128], [1, 1]]>
// CHECK-NEXT: ntile.dma %[[NZ]] {{.*}} to %[[C0]]
// CHECK: ntile.loop iv1 to 2 {
// CHECK: %[[X:.*]] = memref.alloc() : memref<128x2048xbf16
// CHECK: ntile.dma %[[LEAD]]
// CHECK: %[[XV:.*]] = ntile.view %[[X]] <1, {{\[\[}}2048, 128], [1, 2047]]>
// CHECK-NEXT: ntile.dma %arg0 <0 + 2047*iv1 + 640000*iv0, {{\[\[}}5000, 128], [1, 2047]]> to %[[XV]]
// CHECK: %[[Y:.*]] = memref.alloc() : memref<128x2048xf32
// CHECK-NEXT: ntile.tensor_tensor_scan mul add %[[C]], %[[X]], 1.000000e+00 to %[[Y]]
// CHECK: %[[LAST:.*]] = ntile.view %[[Y]] <2047, {{\[\[}}2048, 128], [1, 1]]>
// CHECK-NEXT: ntile.copy %[[LAST]] to
// CHECK: ntile.copy {{.*}} : memref<128x2047xf32, #ntile.mem<sbuf>>, memref<128x2047xbf16
// CHECK: ntile.tensor_tensor_scan mul add {{.*}} : memref<128x907xf32, #ntile.mem<sbuf>>, memref<128x907xbf16
func.func @cumsum(%x: tensor<256x5000xbf16>) -> tensor<256x5000xbf16> {
  %y = ntorch.scan add %x : tensor<256x5000xbf16> -> tensor<256x5000xbf16>
  return %y : tensor<256x5000xbf16>
}

// -----

// fp32 cumprod: y[i] = x[i] * y[i - 1] * c[i]; the input tile starts with 1 (1 * 1 * carry).
// CHECK-LABEL: func.func @cumprod
// CHECK: ntile.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x1001xf32
// CHECK: %[[X:.*]] = memref.alloc() : memref<4x1001xf32
// CHECK: %[[Y:.*]] = memref.alloc() : memref<4x1001xf32
// CHECK-NEXT: ntile.tensor_tensor_scan mul mul %[[X]], %[[C]], 1.000000e+00 to %[[Y]]
func.func @cumprod(%x: tensor<4x1000xf32>) -> tensor<4x1000xf32> {
  %y = ntorch.scan mul %x : tensor<4x1000xf32> -> tensor<4x1000xf32>
  return %y : tensor<4x1000xf32>
}
