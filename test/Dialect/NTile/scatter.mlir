// RUN: neuron-opt %s | neuron-opt | FileCheck %s

// CHECK-LABEL: func @ntile.scatter
// CHECK: ntile.scatter %{{.*}} to %arg0[%{{.*}}] column 8 : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
// CHECK: ntile.scatter %{{.*}} to %arg0[%{{.*}}] column 8 accumulate add
func.func @ntile.scatter(%t: memref<64x32xf32, #ntile.mem<hbm>>) {
  %v = memref.alloc() : memref<16x24xf32, #ntile.mem<sbuf>>
  %i = memref.alloc() : memref<16x1xi64, #ntile.mem<sbuf>>
  ntile.scatter %v to %t[%i] column 8 : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
  ntile.scatter %v to %t[%i] column 8 accumulate add : memref<16x24xf32, #ntile.mem<sbuf>>, memref<64x32xf32, #ntile.mem<hbm>>, memref<16x1xi64, #ntile.mem<sbuf>>
  return
}
