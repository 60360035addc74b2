// RUN: neuron-opt %s -convert-ntorch-to-ntile | FileCheck %s
// RUN: neuron-opt %s -convert-ntorch-to-ntile | neuron-opt -neuron-allocate-tiles -convert-ntile-to-nisa | FileCheck %s --check-prefix=NISA

// The input copied to the result (HBM -> HBM), then 128 rows at a time in index order:
// indices and values loaded to SBUF, one indirect DMA scatter per block.
// CHECK-LABEL: func @scatter
// CHECK: ntile.loop iv0 to 2 {
// CHECK-NEXT: ntile.dma %arg0 <0 + 5120*iv0, {{\[\[}}40, 128], [1, 40]]> to %arg3 <0 + 5120*iv0
// CHECK: ntile.dma %arg0 <10240, {{\[\[}}40, 44], [1, 40]]> to %arg3 <10240
// CHECK: ntile.dma %arg1 <0, {{\[\[}}1, 128], [1, 1]]> to %[[I0:.*]] <0
// CHECK: ntile.dma %arg2 <0, {{\[\[}}40, 128], [1, 40]]> to %[[V0:.*]] <0
// CHECK: ntile.scatter %[[V0]] to %arg3[%[[I0]]] column 0 accumulate add : memref<128x40xf32, #ntile.mem<sbuf>>, memref<300x40xf32, #ntile.mem<hbm>>, memref<128x1xi64, #ntile.mem<sbuf>>
// CHECK: ntile.dma %arg1 <128, {{\[\[}}1, 72], [1, 1]]> to %[[I1:.*]] <0
// CHECK: ntile.dma %arg2 <5120, {{\[\[}}40, 72], [1, 40]]> to %[[V1:.*]] <0
// CHECK: ntile.scatter %[[V1]] to %arg3[%[[I1]]] column 0 accumulate add : memref<72x40xf32, #ntile.mem<sbuf>>
// The nisa instruction's dst is the table's row-0 pattern over all 300 rows.
// NISA: nisa.dma_scatter accumulate add on 4 <hbm[3] + 0, {{\[\[}}40, 300], [1, 40]], f32>, <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 40]], f32>[<sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 128], [1, 1]], i64>]
// NISA: nisa.dma_scatter accumulate add on 4 <hbm[3] + 0, {{\[\[}}40, 300], [1, 40]], f32>, <sbuf[0] + {{[0-9]+}}, {{\[\[}}1, 72], [1, 40]], f32>
func.func @scatter(%x: tensor<300x40xf32>, %i: tensor<200xi64>, %v: tensor<200x40xf32>) -> tensor<300x40xf32> {
  %0 = ntorch.scatter_rows %x[%i] = %v accumulate add : tensor<300x40xf32>, tensor<200xi64>, tensor<200x40xf32>
  return %0 : tensor<300x40xf32>
}

// A table of single elements ([N, 1], as gather's and scatter's flattened inputs): the copy
// of its contiguous bytes runs as rows of 2 KiB (512 f32), 128 rows per DMA, and the 160
// elements left over, not as DMAs of 128 elements.
// CHECK-LABEL: func @scatter_elements
// CHECK: ntile.dma %arg0 <0, {{\[\[}}512, 128], [1, 512]]> to %arg3 <0, {{\[\[}}512, 128], [1, 512]]>
// CHECK-NEXT: ntile.dma %arg0 <65536, {{\[\[}}512, 67], [1, 512]]> to %arg3 <65536, {{\[\[}}512, 67], [1, 512]]>
// CHECK-NEXT: ntile.dma %arg0 <99840, {{.*}}> to %arg3 <99840,
// CHECK-NOT: ntile.dma %arg0
// CHECK: ntile.scatter
func.func @scatter_elements(%x: tensor<100000x1xf32>, %i: tensor<8xi64>, %v: tensor<8x1xf32>) -> tensor<100000x1xf32> {
  %0 = ntorch.scatter_rows %x[%i] = %v : tensor<100000x1xf32>, tensor<8xi64>, tensor<8x1xf32>
  return %0 : tensor<100000x1xf32>
}
