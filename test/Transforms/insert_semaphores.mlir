// RUN: neuron-opt %s -neuron-insert-semaphores | FileCheck %s

// CHECK-LABEL: func @waits
func.func @waits() {
  nisa.buffer 0 input 0 : tensor<2x64xf32>
  nisa.buffer 1 output 0 : tensor<2x64xf32>
  // Loads on two DMA queues wait for nothing.
  // CHECK: nisa.dma_copy on 4 <sbuf[0] + 0, {{.*}}>, <hbm[0] + 0, {{.*}}>{{$}}
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0, [[64, 1], [1, 64]], f32>
  // CHECK: nisa.dma_copy on 5 <sbuf[0] + 256, {{.*}}>, <hbm[0] + 64, {{.*}}>{{$}}
  nisa.dma_copy on 5 <sbuf[0] + 256, [[1, 1], [1, 64]], f32>, <hbm[0] + 64, [[64, 1], [1, 64]], f32>
  // Reading both tiles waits for the first completion of each queue (RAW).
  // CHECK: nisa.tensor_tensor add on 1 {{.*}} wait [4, 1, 5, 1]
  nisa.tensor_tensor add on 1 <sbuf[0] + 512, [[1, 1], [1, 64]], f32>, <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <sbuf[0] + 256, [[1, 1], [1, 64]], f32>
  // Overwriting a tile waits for the Vector engine that read it (WAR) and the
  // queue that wrote it (WAW); other partitions of the same bytes do not conflict.
  // CHECK: nisa.dma_copy on 6 <sbuf[0] + 0, {{.*}}>, <hbm[0] + 0, {{.*}}> wait [1, 1, 4, 1]
  nisa.dma_copy on 6 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0, [[64, 1], [1, 64]], f32>
  // CHECK: nisa.dma_copy on 7 <sbuf[1] + 0, {{.*}}>, <hbm[0] + 0, {{.*}}>{{$}}
  nisa.dma_copy on 7 <sbuf[1] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0, [[64, 1], [1, 64]], f32>
  // Same queue: in order, no wait. Storing the sum waits for the Vector engine.
  // CHECK: nisa.dma_copy on 4 <hbm[1] + 0, {{.*}}>, <sbuf[0] + 512, {{.*}}> wait [1, 1]
  nisa.dma_copy on 4 <hbm[1] + 0, [[64, 1], [1, 64]], f32>, <sbuf[0] + 512, [[1, 1], [1, 64]], f32>
  return
}
