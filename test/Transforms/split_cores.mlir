// RUN: neuron-opt %s -neuron-split-cores=target=trn2-lnc2 -split-input-file | FileCheck %s
// RUN: neuron-opt %s -neuron-split-cores=target=trn2 -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: neuron-opt %s -neuron-split-cores=target=trn2-lnc2 -neuron-hoist-invariant-loads -neuron-multi-buffer=target=trn2-lnc2 -neuron-allocate-tiles=target=trn2-lnc2 -convert-ntile-to-nisa=target=trn2-lnc2 -neuron-assign-dma-queues -neuron-insert-semaphores -split-input-file | FileCheck %s --check-prefix=NISA

// Row tiles of an elementwise op: 7 iterations, 4 on core 0 and 3 on core 1, whose
// offsets start at row tile 4 (4 * 8192). A load of the same bias in every iteration
// is hoisted out of each half, onto that half's core.
// CHECK-LABEL: func @rows
// CHECK: ntile.loop iv0 to 4 {
// CHECK: ntile.dma %arg0 <0 + 8192*iv0,
// CHECK: ntile.dma %{{.*}} to %arg2 <0 + 8192*iv0,
// CHECK: }{{$}}
// CHECK-NEXT: ntile.loop iv0 to 3 {
// CHECK: ntile.dma %arg0 <32768 + 8192*iv0,
// CHECK: ntile.dma %{{.*}} to %arg2 <32768 + 8192*iv0,
// CHECK: } {ntile.core = 1 : i64}
// ONE-LABEL: func @rows
// ONE: ntile.loop iv0 to 7 {
// ONE-NOT: ntile.core
// Core 1's tiles live in its own SBUF (the same addresses as core 0's), its instructions
// on its own queues (21 + local queue), and its store waits for its own engines. The
// hoisted bias load (128 rows of 256 B) loads in parts over core 1's queues.
// NISA-LABEL: func @rows
// NISA: nisa.loop iv0 to 4 {
// NISA: nisa.tensor_tensor add on 1 <sbuf[0] + [[A:[0-9]+]] + {{.*}}, f32>,
// NISA: nisa.dma_copy on {{2[5-9]|3[0-9]|40}} <sbuf[0] + 0, {{.*}}, f32, core 1>, <hbm[1] + 0,
// NISA: nisa.loop iv0 to 3 {
// NISA-NEXT: nisa.dma_copy on 25 <sbuf[0] + [[A]] + {{.*}}, f32, core 1>, <hbm[0] + 32768 + 8192*iv0,
// NISA: nisa.tensor_tensor add on 22 <sbuf[0] + [[A]] + {{.*}}, f32, core 1>, {{.*}}, core 1>, <sbuf[0] + 0, {{.*}}, f32, core 1> wait [25, 1,
// NISA: nisa.dma_copy on {{3[3-9]}} <hbm[2] + 32768 + 8192*iv0, {{.*}}, f32>, <sbuf[0] + [[A]] + {{.*}}, f32, core 1> wait [22, 1, 25, 1]
func.func @rows(%x: memref<896x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %b: memref<64xf32, #ntile.mem<hbm>> {ntile.input = 1 : i32}, %y: memref<896x64xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  ntile.loop iv0 to 7 {
    %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 8192*iv0, [[64, 128], [1, 64]]> to %t <0, [[64, 128], [1, 64]]> : memref<896x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    %bias = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %b <0, [[0, 128], [1, 64]]> to %bias <0, [[64, 128], [1, 64]]> : memref<64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.tensor_tensor add %t, %bias to %t : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %t <0, [[64, 128], [1, 64]]> to %y <0 + 8192*iv0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<896x64xf32, #ntile.mem<hbm>>
  }
  return
}

// -----

// Column blocks of a matmul's output: block iv0 writes columns 512*iv0 of every row
// block (iv1); different blocks never write the same element, so the nest splits.
// CHECK-LABEL: func @columns
// CHECK: ntile.loop iv0 to 1 {
// CHECK: to %arg1 <0 + 131072*iv1 + 512*iv0,
// CHECK: ntile.loop iv0 to 1 {
// CHECK: to %arg1 <512 + 131072*iv1 + 512*iv0,
// CHECK: } {ntile.core = 1 : i64}
func.func @columns(%x: memref<256x1024xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<256x1024xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  ntile.loop iv0 to 2 {
    ntile.loop iv1 to 2 {
      %t = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
      ntile.dma %x <0 + 131072*iv1 + 512*iv0, [[1024, 128], [1, 512]]> to %t <0, [[512, 128], [1, 512]]> : memref<256x1024xf32, #ntile.mem<hbm>>, memref<128x512xf32, #ntile.mem<sbuf>>
      ntile.dma %t <0, [[512, 128], [1, 512]]> to %y <0 + 131072*iv1 + 512*iv0, [[1024, 128], [1, 512]]> : memref<128x512xf32, #ntile.mem<sbuf>>, memref<256x1024xf32, #ntile.mem<hbm>>
    }
  }
  return
}

// -----

// A carried accumulation: the sum tile is allocated outside the loop and every
// iteration adds into it. The nest stays on core 0.
// CHECK-LABEL: func @carried
// CHECK: ntile.loop iv0 to 8 {
// CHECK-NOT: ntile.core
func.func @carried(%x: memref<1024x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<128x64xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %acc = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.loop iv0 to 8 {
    %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 8192*iv0, [[64, 128], [1, 64]]> to %t <0, [[64, 128], [1, 64]]> : memref<1024x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.tensor_tensor add %acc, %t to %acc : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<sbuf>>
  }
  ntile.dma %acc <0, [[64, 128], [1, 64]]> to %y <0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<hbm>>
  return
}

// -----

// Every iteration writes the same HBM rows (no iv0 in the store), or reads back rows
// the loop writes: neither splits.
// CHECK-LABEL: func @overlapping
// CHECK: ntile.loop iv0 to 4 {
// CHECK-NOT: ntile.core
// CHECK: ntile.loop iv0 to 4 {
// CHECK-NOT: ntile.core
// CHECK: return
func.func @overlapping(%x: memref<512x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<512x64xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  ntile.loop iv0 to 4 {
    %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 8192*iv0, [[64, 128], [1, 64]]> to %t <0, [[64, 128], [1, 64]]> : memref<512x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %t <0, [[64, 128], [1, 64]]> to %y <0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<512x64xf32, #ntile.mem<hbm>>
  }
  ntile.loop iv0 to 4 {
    %t = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %y <0, [[64, 128], [1, 64]]> to %t <0, [[64, 128], [1, 64]]> : memref<512x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
    ntile.dma %t <0, [[64, 128], [1, 64]]> to %y <0 + 8192*iv0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<512x64xf32, #ntile.mem<hbm>>
  }
  return
}
