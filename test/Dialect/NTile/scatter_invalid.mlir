// RUN: neuron-opt %s -split-input-file -verify-diagnostics

func.func @columns(%t: memref<64x32xf32, #ntile.mem<hbm>>) {
  %v = memref.alloc() : memref<16x24xf32, #ntile.mem<sbuf>>
  %i = memref.alloc() : memref<16x1xi64, #ntile.mem<sbuf>>
  // expected-error @+1 {{columns exceed the table}}
  ntile.scatter %v to %t[%i] column 9 : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
  return
}

// -----

func.func @index_tile(%t: memref<64x32xf32, #ntile.mem<hbm>>) {
  %v = memref.alloc() : memref<16x24xf32, #ntile.mem<sbuf>>
  %i = memref.alloc() : memref<8x1xi64, #ntile.mem<sbuf>>
  // expected-error @+1 {{indices must be an integer tile [P, 1] matching the source}}
  ntile.scatter %v to %t[%i] column 0 : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<8x1xi64, #ntile.mem<sbuf>>
  return
}

// -----

func.func @element_type(%t: memref<64x32xf32, #ntile.mem<hbm>>) {
  %v = memref.alloc() : memref<16x24xbf16, #ntile.mem<sbuf>>
  %i = memref.alloc() : memref<16x1xi64, #ntile.mem<sbuf>>
  // expected-error @+1 {{scatter does not convert element types}}
  ntile.scatter %v to %t[%i] column 0 : memref<16x24xbf16, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
  return
}

// -----

func.func @accumulate_div(%t: memref<64x32xf32, #ntile.mem<hbm>>) {
  %v = memref.alloc() : memref<16x24xf32, #ntile.mem<sbuf>>
  %i = memref.alloc() : memref<16x1xi64, #ntile.mem<sbuf>>
  // expected-error @+1 {{accumulates with add, mul, max or min, not div}}
  ntile.scatter %v to %t[%i] column 0 accumulate div : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
  return
}
