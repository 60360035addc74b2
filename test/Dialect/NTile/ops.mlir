// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @ntile.tiles
func.func @ntile.tiles(%x: memref<3x200xbf16, #ntile.mem<hbm>>, %w: memref<300x200xbf16, #ntile.mem<hbm>>, %out: memref<3x300xf32, #ntile.mem<hbm>>) {
  %st = memref.alloc() : memref<128x3xbf16, #ntile.mem<sbuf>>
  // CHECK: ntile.dma %{{.*}} <0, {{\[\[}}1, 128], [200, 3]]> to %{{.*}} <0, {{\[\[}}3, 128], [1, 3]]> : memref<3x200xbf16, #ntile.mem<hbm>>, memref<128x3xbf16, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[1, 128], [200, 3]]> to %st <0, [[3, 128], [1, 3]]> : memref<3x200xbf16, #ntile.mem<hbm>>, memref<128x3xbf16, #ntile.mem<sbuf>>
  %mv = memref.alloc() : memref<128x300xbf16, #ntile.mem<sbuf>>
  ntile.dma %w <0, [[1, 128], [200, 300]]> to %mv <0, [[300, 128], [1, 300]]> : memref<300x200xbf16, #ntile.mem<hbm>>, memref<128x300xbf16, #ntile.mem<sbuf>>
  %ps = memref.alloc() : memref<3x300xf32, #ntile.mem<psum>>
  // CHECK: ntile.matmul %{{.*}}, %{{.*}} to %{{.*}} : memref<128x3xbf16, #ntile.mem<sbuf>>, memref<128x300xbf16, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<psum>>
  ntile.matmul %st, %mv to %ps : memref<128x3xbf16, #ntile.mem<sbuf>>, memref<128x300xbf16, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<psum>>
  %a = memref.alloc() : memref<3x300xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<3x300xf32, #ntile.mem<sbuf>>
  // CHECK: ntile.copy
  ntile.copy %ps to %a : memref<3x300xf32, #ntile.mem<psum>>, memref<3x300xf32, #ntile.mem<sbuf>>
  // CHECK: ntile.activation relu %{{.*}} to %{{.*}} {scale = 2.000000e+00 : f64}
  ntile.activation relu %a to %b {scale = 2.0 : f64} : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
  // CHECK: ntile.tensor_tensor max
  ntile.tensor_tensor max %a, %b to %a : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
  // CHECK: ntile.tensor_scalar sub %{{.*}}, 1.000000e+00 to %{{.*}} {reverse}
  ntile.tensor_scalar sub %a, 1.0 to %b {reverse} : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<sbuf>>
  ntile.dma %b <0, [[300, 3], [1, 300]]> to %out <0, [[300, 3], [1, 300]]> : memref<3x300xf32, #ntile.mem<sbuf>>, memref<3x300xf32, #ntile.mem<hbm>>
  // CHECK: ntile.reinterpret %{{.*}} : memref<3x300xf32, #ntile.mem<hbm>> to memref<900xf32, #ntile.mem<hbm>>
  %v = ntile.reinterpret %out : memref<3x300xf32, #ntile.mem<hbm>> to memref<900xf32, #ntile.mem<hbm>>
  // CHECK: ntile.constant dense<1.000000e+00> : tensor<4xf32> : memref<4xf32, #ntile.mem<hbm>>
  %c = ntile.constant dense<1.0> : tensor<4xf32> : memref<4xf32, #ntile.mem<hbm>>
  return
}

// Loops, loop terms and views round-trip.
// CHECK-LABEL: func @loops
// CHECK: ntile.loop iv0 to 4 {
// CHECK-NEXT: ntile.loop iv1 to 2 {
// CHECK-NEXT: ntile.dma %{{.*}} <0 + 128*iv0 + 64*iv1, {{\[\[}}256, 128], [1, 64]]> to %{{.*}} <0 + 64*iv1, {{\[\[}}128, 128], [1, 64]]>
// CHECK: ntile.view %{{.*}} <64 + -64*iv1, {{\[\[}}128, 128], [1, 64]]>
func.func @loops(%x: memref<128x512xbf16, #ntile.mem<hbm>>, %p: memref<128x128xbf16, #ntile.mem<sbuf>>) {
  ntile.loop iv0 to 4 {
    ntile.loop iv1 to 2 {
      ntile.dma %x <0 + 128*iv0 + 64*iv1, [[256, 128], [1, 64]]> to %p <0 + 64*iv1, [[128, 128], [1, 64]]> : memref<128x512xbf16, #ntile.mem<hbm>>, memref<128x128xbf16, #ntile.mem<sbuf>>
      %v = ntile.view %p <64 + -64*iv1, [[128, 128], [1, 64]]> : memref<128x128xbf16, #ntile.mem<sbuf>> to memref<128x64xbf16, #ntile.mem<sbuf>>
    }
  }
  return
}
