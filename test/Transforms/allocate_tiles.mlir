// RUN: neuron-opt %s -neuron-allocate-tiles | FileCheck %s

// Tiles get byte offsets in every partition (64-byte aligned SBUF, whole PSUM banks),
// next-fit after the previous one. A tile used inside a loop stays live until the loop
// ends; a tile of a loop body holds its `ntile.buffers` copies (2 x 512 bytes) until its
// loop ends, so the next tile of the body does not share them; after the loop the ring
// goes on past them.
// CHECK-LABEL: func @liveness
// CHECK: memref.alloc() {ntile.address = 0 : i64} : memref<128x64xf32, #ntile.mem<sbuf>>
// CHECK: ntile.loop iv0 to 4 {
// CHECK-NEXT: memref.alloc() {ntile.address = 256 : i64, ntile.buffers = 2 : i64} : memref<128x128xf32, #ntile.mem<sbuf>>
// CHECK: memref.alloc() {ntile.address = 1280 : i64} : memref<128x16xf32, #ntile.mem<sbuf>>
// CHECK: memref.alloc() {ntile.address = 0 : i64} : memref<128x512xf32, #ntile.mem<psum>>
// CHECK: }
// CHECK: memref.alloc() {ntile.address = 1344 : i64} : memref<128x8xf32, #ntile.mem<sbuf>>
func.func @liveness(%x: memref<512x128xf32, #ntile.mem<hbm>>) {
  %w = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.loop iv0 to 4 {
    %t = memref.alloc() {ntile.buffers = 2 : i64} : memref<128x128xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 16384*iv0, [[128, 128], [1, 128]]> to %t <0, [[128, 128], [1, 128]]> : memref<512x128xf32, #ntile.mem<hbm>>, memref<128x128xf32, #ntile.mem<sbuf>>
    %u = memref.alloc() : memref<128x16xf32, #ntile.mem<sbuf>>
    ntile.copy %u to %u : memref<128x16xf32, #ntile.mem<sbuf>>, memref<128x16xf32, #ntile.mem<sbuf>>
    %p = memref.alloc() : memref<128x512xf32, #ntile.mem<psum>>
    ntile.copy %w to %w : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  }
  %after = memref.alloc() : memref<128x8xf32, #ntile.mem<sbuf>>
  ntile.copy %after to %after : memref<128x8xf32, #ntile.mem<sbuf>>, memref<128x8xf32, #ntile.mem<sbuf>>
  return
}
