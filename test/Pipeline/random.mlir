// RUN: neuron-opt %s --neuron-lower | FileCheck %s
// RUN: neuron-opt %s --neuron-lower="target=trn2-lnc2" | FileCheck %s --check-prefix=LNC2

// Random numbers are generated tile by tile on the GpSimd engine (queue 3): a loop over
// blocks of 128 rows of the widest tile (one instruction, its stream 16 x the op's),
// then the last rows and the last partial row, each instruction with its own stream.
// CHECK-LABEL: func @r
// CHECK: nisa.loop iv0 to 4 {
// CHECK-NEXT: nisa.random on 3 <sbuf[0] + {{.*}}, {{\[\[}}1, 128], [1, 2048]], f32>, stream 48
// CHECK: nisa.dma_copy on {{[0-9]+}} <hbm[0] + {{.*}}262144*iv0
// CHECK: }
// CHECK: nisa.random on 3 <sbuf[0] + {{.*}}, {{\[\[}}1, 1], [1, 2048]], f32>, stream 49
// CHECK: nisa.random on 3 <sbuf[0] + {{.*}}, {{\[\[}}1, 1], [1, 7]], f32>, stream 50
func.func @r() -> tensor<1050631xf32> {
  %u = ntorch.random stream 3 : tensor<1050631xf32>
  return %u : tensor<1050631xf32>
}

// On two physical cores the block loop splits: core 1 (GpSimd queue 24) runs its half on a
// stream of its own (48 + 2^44), so the halves do not repeat each other's numbers.
// LNC2: nisa.loop iv0 to 2 {
// LNC2-NEXT: nisa.random on 3 <{{.*}}>, stream 48
// LNC2: nisa.loop iv0 to 2 {
// LNC2-NEXT: nisa.random on 24 <{{.*}}, core 1>, stream 17592186044464
