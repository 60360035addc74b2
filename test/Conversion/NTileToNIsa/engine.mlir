// RUN: neuron-opt %s -neuron-allocate-tiles -convert-ntile-to-nisa -split-input-file -verify-diagnostics | FileCheck %s

// `ntile.engine` (set by custom kernels) moves ALU work and copies off the Vector engine
// (queue 1): GpSimd is queue 3, Scalar queue 2; without it they stay on the Vector queue.
// CHECK-LABEL: func @engines
// CHECK: nisa.tensor_tensor sub on 3
// CHECK: nisa.tensor_scalar mul on 1
// CHECK: nisa.tensor_reduce add on 3
// CHECK: nisa.tensor_copy on 2
// CHECK: nisa.tensor_copy on 1
func.func @engines(%x: memref<4x8xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %a = memref.alloc() : memref<4x8xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[8, 4], [1, 8]]> to %a <0, [[8, 4], [1, 8]]> : memref<4x8xf32, #ntile.mem<hbm>>, memref<4x8xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<4x8xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor sub %a, %a to %b {ntile.engine = "gpsimd"} : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>
  ntile.tensor_scalar mul %b, 2.0 to %b {ntile.engine = "vector"} : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>
  %r = memref.alloc() : memref<4x1xf32, #ntile.mem<sbuf>>
  ntile.reduce add %b to %r {ntile.engine = "gpsimd"} : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x1xf32, #ntile.mem<sbuf>>
  %c = memref.alloc() : memref<4x8xbf16, #ntile.mem<sbuf>>
  ntile.copy %b to %c {ntile.engine = "scalar"} : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xbf16, #ntile.mem<sbuf>>
  ntile.copy %b to %c : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xbf16, #ntile.mem<sbuf>>
  return
}

// -----

func.func @unknown_engine(%x: memref<4x8xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}) {
  %a = memref.alloc() : memref<4x8xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[8, 4], [1, 8]]> to %a <0, [[8, 4], [1, 8]]> : memref<4x8xf32, #ntile.mem<hbm>>, memref<4x8xf32, #ntile.mem<sbuf>>
  // expected-error @+2 {{unknown engine 'tensor' (ntile.engine: vector, gpsimd or scalar)}}
  // expected-error @+1 {{failed to legalize operation 'ntile.tensor_scalar'}}
  ntile.tensor_scalar mul %a, 2.0 to %a {ntile.engine = "tensor"} : memref<4x8xf32, #ntile.mem<sbuf>>, memref<4x8xf32, #ntile.mem<sbuf>>
  return
}
