// RUN: neuron-opt %s -split-input-file -verify-diagnostics -neuron-dma-transpose | FileCheck %s
// RUN: neuron-opt %s -split-input-file -verify-diagnostics -neuron-dma-transpose=target=trn1 | FileCheck %s --check-prefix=TRN1

// A load whose partitions are consecutive HBM elements and whose free elements lie a row
// apart (W^T of a [300, 200] weight) becomes a dma_transpose of the [rows, cols] source,
// keeping queue, waits and loop terms; contiguous loads, 1-byte elements and on-chip
// sources stay copies. trn1 has no dma_transpose: nothing changes.
// CHECK-LABEL: func @weights
// CHECK: nisa.dma_transpose on 4 <sbuf[0] + 0, {{\[\[}}1, 128], [1, 300]], f32>, <hbm[0] + 0, {{\[\[}}200, 300], [1, 128]], f32> wait [1, 2]
// CHECK: nisa.dma_transpose on 5 <sbuf[0] + 2048 + 1200*(iv0 mod 2), {{\[\[}}1, 72], [1, 300]], f32>, <hbm[0] + 128 + 4*iv0, {{\[\[}}200, 300], [1, 72]], f32>
// CHECK: nisa.dma_copy on 6 <sbuf[0] + 4096, {{\[\[}}1, 128], [1, 200]], f32>, <hbm[0] + 0, {{\[\[}}200, 128], [1, 200]], f32>
// CHECK: nisa.dma_copy on 7 <sbuf[0] + 8192, {{\[\[}}1, 128], [1, 64]], i8>
// TRN1-LABEL: func @weights
// TRN1-NOT: dma_transpose
func.func @weights() {
  nisa.buffer 0 input 0 : tensor<300x200xf32>
  nisa.buffer 1 input 1 : tensor<64x128xi8>
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 128], [1, 300]], f32>, <hbm[0] + 0, [[1, 128], [200, 300]], f32> wait [1, 2]
  nisa.loop iv0 to 2 {
    nisa.dma_copy on 5 <sbuf[0] + 2048 + 1200*(iv0 mod 2), [[1, 72], [1, 300]], f32>, <hbm[0] + 128 + 4*iv0, [[1, 72], [200, 300]], f32>
  }
  nisa.dma_copy on 6 <sbuf[0] + 4096, [[1, 128], [1, 200]], f32>, <hbm[0] + 0, [[200, 128], [1, 200]], f32>
  nisa.dma_copy on 7 <sbuf[0] + 8192, [[1, 128], [1, 64]], i8>, <hbm[1] + 0, [[1, 128], [128, 64]], i8>
  return
}

// -----

// The verifier: dst must be the source transposed, in SBUF, of 2- or 4-byte elements.
func.func @bad() {
  nisa.buffer 0 input 0 : tensor<300x200xf32>
  // expected-error@+1 {{dst must be [128, 300], the source transposed}}
  nisa.dma_transpose on 4 <sbuf[0] + 0, [[1, 128], [1, 200]], f32>, <hbm[0] + 0, [[200, 300], [1, 128]], f32>
  return
}

// -----

// A 3-D transposing load (8 blocks of 128 contraction rows) becomes one dma_transpose per
// block, in block order, each moving its [128 rows, 12 cols] source into [12, 128] at the
// block's byte offset.
// CHECK-LABEL: func @blocks
// CHECK: nisa.dma_transpose on 9 <sbuf[60] + 28672 + 2048*(iv0 mod 4), {{\[\[}}1, 12], [1, 128]], bf16>, <hbm[0] + 60 + 131072*iv0, {{\[\[}}1024, 128], [1, 12]], bf16>
// CHECK-NEXT: nisa.dma_transpose on 9 <sbuf[60] + 28928 + 2048*(iv0 mod 4), {{\[\[}}1, 12], [1, 128]], bf16>, <hbm[0] + 188 + 131072*iv0, {{\[\[}}1024, 128], [1, 12]], bf16>
// CHECK-COUNT-6: nisa.dma_transpose on 9
// CHECK-NOT: nisa.dma_
func.func @blocks() {
  nisa.buffer 0 input 0 : tensor<1024x1024xbf16>
  nisa.loop iv0 to 2 {
    nisa.dma_copy on 9 <sbuf[60] + 28672 + 2048*(iv0 mod 4), [[1, 12], [128, 8], [1, 128]], bf16>, <hbm[0] + 60 + 131072*iv0, [[1, 12], [128, 8], [1024, 128]], bf16>
  }
  return
}
