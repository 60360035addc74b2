// RUN: neuron-opt %s -neuron-multi-buffer -neuron-allocate-tiles -convert-ntile-to-nisa | FileCheck %s

// ntile.loop becomes nisa.loop; a tile of the body rotates over its buffers (byte
// offset + 512 * (iv mod 4)); HBM terms stay element terms; a view of a resident
// panel adds its column offset, in bytes, to the panel's address.
// CHECK-LABEL: func @loops
// CHECK: nisa.loop iv0 to 8 {
// CHECK-NEXT: nisa.dma_copy on 4 <sbuf[0] + [[T:[0-9]+]] + 512*(iv0 mod 4), {{\[\[}}1, 128], [1, 128]], f32>, <hbm[0] + 0 + 128*iv0, {{\[\[}}1024, 128], [1, 128]], f32>
// CHECK-NEXT: nisa.tensor_tensor add on 1 <sbuf[0] + [[T]] + 512*(iv0 mod 4), {{.*}}>, <sbuf[0] + [[T]] + 512*(iv0 mod 4), {{.*}}>, <sbuf[0] + 0 + 512*iv0, {{\[\[}}1, 128], [1, 128]], f32>
// CHECK-NEXT: nisa.dma_copy on 4 <hbm[1] + 0 + 128*iv0, {{.*}}>, <sbuf[0] + [[T]] + 512*(iv0 mod 4), {{.*}}>
// CHECK-NEXT: }
func.func @loops(%x: memref<128x1024xf32, #ntile.mem<hbm>> {ntile.input = 0 : i32},
                 %y: memref<128x1024xf32, #ntile.mem<hbm>> {ntile.output = 0 : i32}) {
  %panel = memref.alloc() : memref<128x1024xf32, #ntile.mem<sbuf>>
  ntile.loop iv0 to 8 {
    %t = memref.alloc() : memref<128x128xf32, #ntile.mem<sbuf>>
    ntile.dma %x <0 + 128*iv0, [[1024, 128], [1, 128]]> to %t <0, [[128, 128], [1, 128]]> : memref<128x1024xf32, #ntile.mem<hbm>>, memref<128x128xf32, #ntile.mem<sbuf>>
    %v = ntile.view %panel <0 + 128*iv0, [[1024, 128], [1, 128]]> : memref<128x1024xf32, #ntile.mem<sbuf>> to memref<128x128xf32, #ntile.mem<sbuf>>
    ntile.tensor_tensor add %t, %v to %t : memref<128x128xf32, #ntile.mem<sbuf>>, memref<128x128xf32, #ntile.mem<sbuf>>, memref<128x128xf32, #ntile.mem<sbuf>>
    ntile.dma %t <0, [[128, 128], [1, 128]]> to %y <0 + 128*iv0, [[1024, 128], [1, 128]]> : memref<128x128xf32, #ntile.mem<sbuf>>, memref<128x1024xf32, #ntile.mem<hbm>>
  }
  return
}
