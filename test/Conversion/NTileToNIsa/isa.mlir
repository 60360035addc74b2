// RUN: neuron-opt %s -neuron-allocate-tiles -convert-ntile-to-nisa -neuron-insert-semaphores | FileCheck %s

// ntile.isa: an instruction of the ISA table by its nki.isa name. Each becomes one nisa.inst
// on the first engine of its row (tensor_scalar_reduce, max8: Vector, queue 1) or the one its
// kernel chose (iota: GpSimd, queue 3), fields carried as they are. tensor_scalar_reduce writes
// its last source (the reduce result): the ISA table says so, and semaphores see it.
// CHECK-LABEL: func @table
// CHECK: nisa.dma_copy on 4 <sbuf[0] + 0,
// CHECK-NEXT: nisa.inst tensor_scalar_reduce on 1 <sbuf[0] + 256, {{\[\[}}1, 128], [1, 64]], f32>, [#nisa.ap<sbuf[0] + 0, {{\[\[}}1, 128], [1, 64]], f32>, #nisa.ap<sbuf[0] + 512, {{\[\[}}1, 128], [1, 1]], f32>] wait [4, 1] {fields = {alu = "mul", alu2 = "max", imm = [5.000000e-01, 0.000000e+00]}, nisa.engine_chosen}
// max8 reads %b, which its own queue wrote: no wait.
// CHECK-NEXT: nisa.inst max8 on 1 <sbuf[0] + 576, {{\[\[}}1, 128], [1, 8]], f32>, [#nisa.ap<sbuf[0] + 256, {{\[\[}}1, 128], [1, 64]], f32>] {nisa.engine_chosen}
// iota overwrites %b on GpSimd after max8 (queue 1's second instruction) read it.
// CHECK-NEXT: nisa.inst iota on 3 <sbuf[0] + 256, {{\[\[}}1, 128], [1, 64]], f32>, [] wait [1, 2] {fields = {affine = [0, 1, 64]}, nisa.engine_chosen}
// The reduce result is read by the store: it waits for queue 1's first instruction.
// CHECK-NEXT: nisa.dma_copy on 4 <hbm[2] + 0, {{\[\[}}1, 128], [1, 1]], f32>, <sbuf[0] + 512, {{\[\[}}1, 128], [1, 1]], f32> wait [1, 1]
func.func @table(%x: memref<128x64xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32}, %y: memref<128x64xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}, %r: memref<128x1xf32, #ntile.mem<hbm>> {ntile.output = 1 : i32}) {
  %a = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.dma %x <0, [[64, 128], [1, 64]]> to %a <0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<hbm>>, memref<128x64xf32, #ntile.mem<sbuf>>
  %b = memref.alloc() : memref<128x64xf32, #ntile.mem<sbuf>>
  %m = memref.alloc() : memref<128x1xf32, #ntile.mem<sbuf>>
  ntile.isa tensor_scalar_reduce(%a, %m) to %b {fields = {alu = "mul", alu2 = "max", imm = [0.5, 0.0]}} : (memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  %v = memref.alloc() : memref<128x8xf32, #ntile.mem<sbuf>>
  ntile.isa max8(%b) to %v : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x8xf32, #ntile.mem<sbuf>>
  ntile.isa iota() to %b {fields = {affine = [0, 1, 64]}, ntile.engine = "gpsimd"} : () -> memref<128x64xf32, #ntile.mem<sbuf>>
  ntile.dma %m <0, [[1, 128], [1, 1]]> to %r <0, [[1, 128], [1, 1]]> : memref<128x1xf32, #ntile.mem<sbuf>>, memref<128x1xf32, #ntile.mem<hbm>>
  ntile.dma %b <0, [[64, 128], [1, 64]]> to %y <0, [[64, 128], [1, 64]]> : memref<128x64xf32, #ntile.mem<sbuf>>, memref<128x64xf32, #ntile.mem<hbm>>
  return
}
