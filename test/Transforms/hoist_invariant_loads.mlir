// RUN: neuron-opt %s -neuron-hoist-invariant-loads -split-input-file | FileCheck %s

// A bias row broadcast over row blocks loads once, before the loops; the row blocks
// (iv0) and the tile written in the body stay inside.
// CHECK-LABEL: func @hoist
// CHECK: %[[BIAS:.*]] = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
// CHECK-NEXT: ntile.dma %arg1 <0, {{\[\[}}0, 128], [1, 64]]> to %[[BIAS]]
// CHECK-NEXT: ntile.loop iv0 to 8 {
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg0 <0 + 8192*iv0
// CHECK: ntile.tensor_tensor add %{{.*}}, %[[BIAS]]
func.func @hoist(%x: memref<1024x64xf32, #ntile.mem<hbm>>, %b: memref<64xf32, #ntile.mem<hbm>>, %y: memref<1024x64xf32, #ntile.mem<hbm>>) {
  ntile.loop iv0 to 8 {
    %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 8192*iv0, [[64, 128], [1, 64]]> to %t <0, [[64, 128], [1, 64]]> : memref<1024x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    %bias = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %b <0, [[0, 128], [1, 64]]> to %bias <0, [[64, 128], [1, 64]]> : memref<64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.tensor_tensor add %t, %bias to %t : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %t <0, [[64, 128], [1, 64]]> to %y <0 + 8192*iv0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<1024x64xf32, #ntile.mem<hbm>>
  }
  return
}

// -----

// Not hoisted: the load depends on the loop (inner iv1), the loop writes the source
// buffer, or the tile is written again in the body.
// CHECK-LABEL: func @stay
// CHECK: ntile.loop iv0 to 4 {
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: ntile.dma %arg0 <0, {{\[\[}}0, 128], [1, 64]]>
func.func @stay(%b: memref<64xf32, #ntile.mem<hbm>>, %y: memref<64xf32, #ntile.mem<hbm>>) {
  ntile.loop iv0 to 4 {
    %bias = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %b <0, [[0, 128], [1, 64]]> to %bias <0, [[64, 128], [1, 64]]> : memref<64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.tensor_scalar mul %bias, 2.0 to %bias : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %bias <0, [[64, 1], [1, 64]]> to %b <0, [[64, 1], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<64xf32, #ntile.mem<hbm>>
  }
  return
}
