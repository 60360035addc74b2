// RUN: neuron-opt %s -neuron-allocate-tiles -convert-ntile-to-nisa -split-input-file | FileCheck %s

// bn_stats and bn_aggr run on the Vector engine (queue 1): one source, a [P, 6] / [P, 2]
// result.
// CHECK-LABEL: func @bn_stats_aggr
// CHECK: nisa.bn_stats on 1 <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 6]], f32>, <sbuf[0] + 0, {{\[\[}}1, 128], [1, 512]], f32>
// CHECK: nisa.bn_aggr on 1 <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 2]], f32>, <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 6]], f32>
func.func @bn_stats_aggr(%x: memref<128x512xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<128x2xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %a = memref.alloc() : memref<128x512xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[512, 128], [1, 512]]> to %a <0, [[512, 128], [1, 512]]> : memref<128x512xf32, #ntile.mem<hbm>>, memref<128x512xf32, #ntile.mem<sbuf>>
  %s = memref.alloc() : memref<128x6xf32, #ntile.mem<sbuf>>
  ntile.bn_stats %a to %s : memref<128x512xf32, #ntile.mem<sbuf>>, memref<128x6xf32, #ntile.mem<sbuf>>
  %m = memref.alloc() : memref<128x2xf32, #ntile.mem<sbuf>>
  ntile.bn_aggr %s to %m : memref<128x6xf32, #ntile.mem<sbuf>>, memref<128x2xf32, #ntile.mem<sbuf>>
  ntile.dma %m <0, [[2, 128], [1, 2]]> to %y <0, [[2, 128], [1, 2]]> : memref<128x2xf32, #ntile.mem<sbuf>>, memref<128x2xf32, #ntile.mem<hbm>>
  return
}

// -----

// A scan's initial tile is read as one value per partition (free stride 0).
// CHECK-LABEL: func @scan_initial_tile
// CHECK: nisa.tensor_tensor_scan mul add on 1 {{.*}}, 0.000000e+00 tile <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 4], [0, 64]], f32>
func.func @scan_initial_tile(%x: memref<4x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<4x64xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %a = memref.alloc() : memref<4x64xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[64, 4], [1, 64]]> to %a <0, [[64, 4], [1, 64]]> : memref<4x64xf32, #ntile.mem<hbm>>, memref<4x64xf32, #ntile.mem<sbuf>>
  %r0 = memref.alloc() : memref<4x1xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[64, 4], [1, 1]]> to %r0 <0, [[1, 4], [1, 1]]> : memref<4x64xf32, #ntile.mem<hbm>>, memref<4x1xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<4x64xf32, #ntile.mem<sbuf>>
  ntile.tensor_tensor_scan mul add %a, %a, 0.0 tile %r0 : memref<4x1xf32, #ntile.mem<sbuf>> to %b : memref<4x64xf32, #ntile.mem<sbuf>>, memref<4x64xf32, #ntile.mem<sbuf>>, memref<4x64xf32, #ntile.mem<sbuf>>
  ntile.dma %b <0, [[64, 4], [1, 64]]> to %y <0, [[64, 4], [1, 64]]> : memref<4x64xf32, #ntile.mem<sbuf>>, memref<4x64xf32, #ntile.mem<hbm>>
  return
}
