// RUN: neuron-opt %s --convert-ntorch-to-ntile | FileCheck %s --check-prefix=TILE
// RUN: neuron-opt %s --neuron-lower | FileCheck %s --check-prefix=ISA

// A collective is one instruction of the collective engine (queue 20), HBM to HBM.
// Work that does not read its result (the exp tiles) waits for nothing on queue 20
// and overlaps it; the loads of its consumer wait for its completion.
// TILE-LABEL: func @overlap
// TILE: ntile.collective all_reduce add group "0" of 4 %arg0 to %arg2
// TILE-SAME: memref<1024xf32, #ntile.mem<hbm>>, memref<1024xf32, #ntile.mem<hbm>>
// ISA-LABEL: func @overlap
// ISA: nisa.collective all_reduce add group "0" of 4 on 20 <hbm[2] + 0, {{\[\[}}1, 1024]], f32>, <hbm[0] + 0, {{\[\[}}1, 1024]], f32>
// ISA-NOT: wait [20
// ISA: nisa.activation exp
// ISA-NOT: wait [20
// ISA: nisa.dma_copy on {{[0-9]+}} <sbuf{{.*}}>, <hbm[2] + 0, {{.*}}> wait [20, 1]
// ISA: nisa.tensor_tensor mul
func.func @overlap(%g: tensor<1024xf32>, %x: tensor<128x512xf32>)
    -> (tensor<1024xf32>, tensor<128x512xf32>, tensor<1024xf32>) {
  %r = ntorch.collective all_reduce add group "0" of 4 %g : tensor<1024xf32> -> tensor<1024xf32>
  %y = ntorch.unary exp %x : tensor<128x512xf32> -> tensor<128x512xf32>
  %z = ntorch.binary mul %r, %r : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>
  return %r, %y, %z : tensor<1024xf32>, tensor<128x512xf32>, tensor<1024xf32>
}

// A reduce_scatter into an internal buffer, then an all_gather back: the gather
// waits for the scatter on its own queue's order (same queue, no wait needed).
// ISA-LABEL: func @scatter_gather
// ISA: nisa.collective reduce_scatter max group "dp" of 2 on 20 <hbm[[[T:[0-9]+]]] + 0, {{\[\[}}1, 256]], bf16>, <hbm[0] + 0, {{\[\[}}1, 512]], bf16>
// ISA-NEXT: nisa.collective all_gather add group "dp" of 2 on 20 <hbm[1] + 0, {{\[\[}}1, 512]], bf16>, <hbm[[[T]]] + 0, {{\[\[}}1, 256]], bf16>
func.func @scatter_gather(%g: tensor<64x8xbf16>) -> tensor<64x8xbf16> {
  %s = ntorch.collective reduce_scatter max group "dp" of 2 %g : tensor<64x8xbf16> -> tensor<32x8xbf16>
  %a = ntorch.collective all_gather add group "dp" of 2 %s : tensor<32x8xbf16> -> tensor<64x8xbf16>
  return %a : tensor<64x8xbf16>
}
