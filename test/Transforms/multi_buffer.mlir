// RUN: neuron-opt %s -neuron-multi-buffer -split-input-file | FileCheck %s
// RUN: neuron-opt %s -neuron-multi-buffer=target=trn1 -split-input-file | FileCheck %s --check-prefix=TRN1

// Tiles allocated in a loop body rotate over copies: SBUF up to 4, PSUM up to 2,
// never more than the trip count, fewer when a body's tiles would take more than a
// quarter of SBUF (trn2: 56 KiB of 224 KiB per partition; trn1: 48 KiB of 192 KiB).
// CHECK-LABEL: func @buffers
func.func @buffers(%x: memref<1024x512xf32, #ntile.mem<hbm>>) {
  // A tile outside loops: one buffer.
  // CHECK: memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
  %resident = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.loop iv0 to 8 {
    // CHECK: memref.alloc() {ntile.buffers = 4 : i64} : memref<128x512xf32, #ntile.mem<sbuf>>
    %t = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
    // CHECK: memref.alloc() {ntile.buffers = 2 : i64} : memref<128x512xf32, #ntile.mem<psum>>
    %p = memref.alloc() : memref<128x512xf32, #ntile.mem<psum>>
    ntile.loop iv1 to 3 {
      // Two tiles of 9 KiB: three copies of both take 54 KiB, which fits trn2's budget
      // but not trn1's.
      // CHECK: memref.alloc() {ntile.buffers = 3 : i64} : memref<128x2304xf32, #ntile.mem<sbuf>>
      // TRN1: memref.alloc() {ntile.buffers = 2 : i64} : memref<128x2304xf32, #ntile.mem<sbuf>>
      %a = memref.alloc() : memref<128x2304xf32, #ntile.mem<sbuf>>
      %b = memref.alloc() : memref<128x2304xf32, #ntile.mem<sbuf>>
    }
  }
  // A loop of one iteration has nothing to overlap.
  ntile.loop iv0 to 1 {
    // CHECK: memref.alloc() : memref<128x16xf32, #ntile.mem<sbuf>>
    %c = memref.alloc() : memref<128x16xf32, #ntile.mem<sbuf>>
  }
  return
}

// -----

// A body too large to multi-buffer whole (wide rows: two 16 KiB loaded tiles and two
// 24 KiB work tiles, 80 KiB, over trn2's 56 KiB) still double-buffers the tiles it loads
// from HBM when the body plus their second copies fit twice the budget (80 + 32 <= 112
// KiB), so that the next iteration's loads overlap this one's compute. trn1's (96 KiB)
// does not fit them.
// CHECK-LABEL: func @wide_rows
// TRN1-LABEL: func @wide_rows
func.func @wide_rows(%x: memref<1024x4096xf32, #ntile.mem<hbm>>) {
  ntile.loop iv0 to 8 {
    // CHECK: memref.alloc() {ntile.buffers = 2 : i64} : memref<128x4096xf32, #ntile.mem<sbuf>>
    // CHECK: memref.alloc() {ntile.buffers = 2 : i64} : memref<128x4096xf32, #ntile.mem<sbuf>>
    // CHECK: memref.alloc() : memref<128x6144xf32, #ntile.mem<sbuf>>
    // CHECK: memref.alloc() : memref<128x6144xf32, #ntile.mem<sbuf>>
    // TRN1: memref.alloc() : memref<128x4096xf32, #ntile.mem<sbuf>>
    // TRN1: memref.alloc() : memref<128x4096xf32, #ntile.mem<sbuf>>
    %a = memref.alloc() : memref<128x4096xf32, #ntile.mem<sbuf>>
    %b = memref.alloc() : memref<128x4096xf32, #ntile.mem<sbuf>>
    %w = memref.alloc() : memref<128x6144xf32, #ntile.mem<sbuf>>
    %v = memref.alloc() : memref<128x6144xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 524288*iv0, [[4096, 128], [1, 4096]]> to %a <0, [[4096, 128], [1, 4096]]> : memref<1024x4096xf32, #ntile.mem<hbm>>, memref<128x4096xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 524288*iv0, [[4096, 128], [1, 4096]]> to %b <0, [[4096, 128], [1, 4096]]> : memref<1024x4096xf32, #ntile.mem<hbm>>, memref<128x4096xf32, #ntile.mem<sbuf>>
  }
  return
}
