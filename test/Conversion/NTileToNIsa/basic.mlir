// RUN: neuron-opt %s -neuron-allocate-tiles -convert-ntile-to-nisa -split-input-file | FileCheck %s

// Arguments become numbered buffers; SBUF tiles get byte offsets in every
// partition (64-byte aligned, allocated one after another); DMAs wait on the first
// DMA queue for neuron-assign-dma-queues; engine ops go to their engine's queue.
// CHECK-LABEL: func @tiles
// CHECK-NEXT: nisa.buffer 0 input 0 : tensor<3x200xf32>
// CHECK-NEXT: nisa.buffer 1 output 0 : tensor<3x200xf32>
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + 0, {{\[\[}}1, 3], [1, 200]], f32>, <hbm[0] + 0, {{\[\[}}200, 3], [1, 200]], f32>
// CHECK-NEXT: nisa.activation exp on 2 <sbuf[0] + 832, {{\[\[}}1, 3], [1, 200]], f32>, <sbuf[0] + 0, {{\[\[}}1, 3], [1, 200]], f32>
// CHECK-NEXT: nisa.dma_copy on 4 <hbm[1] + 0, {{\[\[}}200, 3], [1, 200]], f32>, <sbuf[0] + 832, {{\[\[}}1, 3], [1, 200]], f32>
func.func @tiles(%x: memref<3x200xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<3x200xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %a = memref.alloc() : memref<3x200xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[200, 3], [1, 200]]> to %a <0, [[200, 3], [1, 200]]> : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<3x200xf32, #ntile.mem<sbuf>>
  ntile.activation exp %a to %b : memref<3x200xf32, #ntile.mem<sbuf>>, memref<3x200xf32, #ntile.mem<sbuf>>
  ntile.dma %b <0, [[200, 3], [1, 200]]> to %y <0, [[200, 3], [1, 200]]> : memref<3x200xf32, #ntile.mem<sbuf>>, memref<3x200xf32, #ntile.mem<hbm>>
  return
}

// -----

// A DMA into the second row block of a tile selects partitions, not bytes.
// CHECK-LABEL: func @partition_offset
// CHECK: nisa.dma_copy on 4 <sbuf[2] + 0, {{\[\[}}1, 2], [1, 4]], f32>, <hbm[0] + 0, {{\[\[}}0, 2], [1, 4]], f32>
func.func @partition_offset(%x: memref<4xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %a = memref.alloc() : memref<4x4xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[0, 2], [1, 4]]> to %a <8, [[4, 2], [1, 4]]> : memref<4xf32, #ntile.mem<hbm>>, memref<4x4xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Internal HBM buffers, constants and reinterpreted views.
// CHECK-LABEL: func @hbm_buffers
// CHECK: nisa.buffer 0 input 0
// CHECK: nisa.buffer 1 internal -1 : tensor<8xf32>
// CHECK: nisa.buffer 2 constant -1 {value = dense<2.000000e+00> : tensor<8xf32>} : tensor<8xf32>
// CHECK: nisa.dma_copy on 4 <hbm[1] + 0, {{\[\[}}1, 8]], f32>, <hbm[0] + 0, {{\[\[}}1, 8]], f32>
// CHECK: nisa.dma_copy on 4 <hbm[1] + 0, {{\[\[}}1, 8]], f32>, <hbm[2] + 0, {{\[\[}}1, 8]], f32>
func.func @hbm_buffers(%x: memref<2x4xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %t = memref.alloc() : memref<8xf32, #ntile.mem<hbm>>
  %c = ntile.constant dense<2.0> : tensor<8xf32> : memref<8xf32, #ntile.mem<hbm>>
  %v = ntile.reinterpret %x : memref<2x4xf32, #ntile.mem<hbm>> to memref<8xf32, #ntile.mem<hbm>>
  ntile.dma %v <0, [[1, 8]]> to %t <0, [[1, 8]]> : memref<8xf32, #ntile.mem<hbm>>, memref<8xf32, #ntile.mem<hbm>>
  ntile.dma %c <0, [[1, 8]]> to %t <0, [[1, 8]]> : memref<8xf32, #ntile.mem<hbm>>, memref<8xf32, #ntile.mem<hbm>>
  return
}

// -----

// A view whose offset spans whole rows starts at a later partition (an engine access of 32
// partitions from partition 32), its column offset within the partition.
// CHECK-LABEL: func @view_start_partition
// CHECK: nisa.tensor_scalar mul on 1 <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 32], [1, 16]], f32>, <sbuf[32] + 16, {{\[\[}}1, 32], [1, 16]], f32>
func.func @view_start_partition(%x: memref<128x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<32x16xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %a = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[64, 128], [1, 64]]> to %a <0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %v = ntile.view %a <2052, [[64, 32], [1, 16]]> : memref<128x64xf32, #ntile.mem<sbuf>> to memref<32x16xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<32x16xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %v, 2.0 to %b : memref<32x16xf32, #ntile.mem<sbuf>>, memref<32x16xf32, #ntile.mem<sbuf>>
  ntile.dma %b <0, [[16, 32], [1, 16]]> to %y <0, [[16, 32], [1, 16]]> : memref<32x16xf32, #ntile.mem<sbuf>>, memref<32x16xf32, #ntile.mem<hbm>>
  return
}
