// RUN: neuron-opt %s -neuron-allocate-tiles -verify-diagnostics -split-input-file

// Two live tiles of 128 KiB per partition exceed trn2's 224 KiB partitions.
func.func @sbuf_overflow(%x: memref<128x32768xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %a = memref.alloc() : memref<128x32768xf32, #ntile.mem<sbuf>>
  // expected-error @+1 {{sbuf overflow: a tile of 131072 bytes per partition does not fit while 131072 of 229376 bytes per partition are live}}
  %b = memref.alloc() : memref<128x32768xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[32768, 128], [1, 32768]]> to %a <0, [[32768, 128], [1, 32768]]> : memref<128x32768xf32, #ntile.mem<hbm>>, memref<128x32768xf32, #ntile.mem<sbuf>>
  ntile.copy %a to %b : memref<128x32768xf32, #ntile.mem<sbuf>>, memref<128x32768xf32, #ntile.mem<sbuf>>
  return
}

// -----

// A PSUM tile may span banks, not more than the 16 KiB of PSUM.
func.func @psum_capacity(%x: memref<4xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %q = memref.alloc() : memref<128x1024xf32, #ntile.mem<psum>>
  // expected-error @+1 {{PSUM tile of 32768 bytes per partition exceeds PSUM (16384 bytes)}}
  %p = memref.alloc() : memref<128x8192xf32, #ntile.mem<psum>>
  return
}
