// RUN: neuron-opt %s -split-input-file -verify-diagnostics

// A pattern may not read past the end of its buffer.
func.func @dma_out_of_bounds(%x: memref<3x200xf32, #ntile.mem<hbm>>, %t: memref<3x200xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source pattern touches elements [1, 601) of a buffer of 600}}
  ntile.dma %x <1, [[200, 3], [1, 200]]> to %t <0, [[200, 3], [1, 200]]> : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Both sides of a DMA move the same number of elements.
func.func @dma_count(%x: memref<3x200xf32, #ntile.mem<hbm>>, %t: memref<3x200xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source pattern has 600 elements, target pattern has 400}}
  ntile.dma %x <0, [[200, 3], [1, 200]]> to %t <0, [[200, 2], [1, 200]]> : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
  return
}

// -----

// SBUF has 128 partitions.
func.func @too_many_partitions(%a: memref<256x4xf32, #ntile.mem<sbuf>>, %b: memref<256x4xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source spans 256 partitions; at most 128 exist}}
  ntile.copy %a to %b : memref<256x4xf32, #ntile.mem<sbuf>>, memref<256x4xf32, #ntile.mem<sbuf>>
  return
}

// -----

// The moving free size is one PSUM bank of fp32.
func.func @matmul_moving_too_wide(%s: memref<128x128xbf16, #ntile.mem<sbuf>>, %m: memref<128x1024xbf16, #ntile.mem<sbuf>>, %p: memref<128x1024xf32, #ntile.mem<psum>>) {
  // expected-error @+1 {{moving free size 1024 exceeds one PSUM bank (512 fp32)}}
  ntile.matmul %s, %m to %p : memref<128x128xbf16, #ntile.mem<sbuf>>, memref<128x1024xbf16, #ntile.mem<sbuf>>, memref<128x1024xf32, #ntile.mem<psum>>
  return
}

// -----

// Matmul accumulates into PSUM, not SBUF.
func.func @matmul_into_sbuf(%s: memref<128x3xbf16, #ntile.mem<sbuf>>, %m: memref<128x8xbf16, #ntile.mem<sbuf>>, %p: memref<3x8xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{result must be an fp32 PSUM tile}}
  ntile.matmul %s, %m to %p : memref<128x3xbf16, #ntile.mem<sbuf>>, memref<128x8xbf16, #ntile.mem<sbuf>>, memref<3x8xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Compute engines do not read HBM.
func.func @activation_on_hbm(%a: memref<3x8xf32, #ntile.mem<hbm>>, %b: memref<3x8xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source must be an SBUF or PSUM tile, got hbm}}
  ntile.activation exp %a to %b : memref<3x8xf32, #ntile.mem<hbm>>, memref<3x8xf32, #ntile.mem<sbuf>>
  return
}

// -----

// DMA does not convert.
func.func @dma_convert(%x: memref<8xf32, #ntile.mem<hbm>>, %y: memref<8xbf16, #ntile.mem<hbm>>) {
  // expected-error @+1 {{DMA does not convert element types}}
  ntile.dma %x <0, [[1, 8]]> to %y <0, [[1, 8]]> : memref<8xf32, #ntile.mem<hbm>>, memref<8xbf16, #ntile.mem<hbm>>
  return
}
