// RUN: neuron-opt %s -neuron-insert-semaphores -split-input-file | FileCheck %s

// A load -> compute -> store pipeline over 8 rows. Both tiles rotate over two buffers,
// so an iteration only waits for the iteration two back that used the same buffer
// (loop-carried WAR), and for this iteration's producer (RAW). Counts are affine in
// iv0: one instance per queue per iteration.
// CHECK-LABEL: func @pipeline
func.func @pipeline() {
  nisa.buffer 0 input 0 : tensor<8x64xf32>
  nisa.buffer 1 output 0 : tensor<8x64xf32>
  nisa.loop iv0 to 8 {
    // Buffer iv0 mod 2 was last read by the Vector engine in iteration iv0 - 2,
    // its instance number iv0 - 1.
    // CHECK: nisa.dma_copy on 4 {{.*}} wait [1, -1] {wait_terms = array<i64: 0, 0, 1, 0>}
    nisa.dma_copy on 4 <sbuf[0] + 0 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, [[64, 1], [1, 64]], f32>
    // RAW on this iteration's load (instance iv0 + 1 of queue 4); WAR on the store
    // of iteration iv0 - 2.
    // CHECK: nisa.tensor_scalar mul on 1 {{.*}} wait [4, 1, 5, -1] {wait_terms = array<i64: 0, 0, 1, 0, 1, 0, 1, 0>}
    nisa.tensor_scalar mul on 1 <sbuf[0] + 1024 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, <sbuf[0] + 0 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, 2.0
    // The rows stored by different iterations never overlap: only the RAW wait.
    // CHECK: nisa.dma_copy on 5 {{.*}} wait [1, 1] {wait_terms = array<i64: 0, 0, 1, 0>}
    nisa.dma_copy on 5 <hbm[1] + 0 + 64*iv0, [[64, 1], [1, 64]], f32>, <sbuf[0] + 1024 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>
  }
  // After the loop every access of the body counts as its last iteration's: the
  // reload of buffer 0 waits for the 8th instance of each queue (conservative).
  // CHECK: nisa.dma_copy on 6 {{.*}} wait [1, 8, 4, 8, 5, 8]{{$}}
  nisa.dma_copy on 6 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[1] + 0, [[64, 1], [1, 64]], f32>
  return
}

// -----

// One buffer, no rotation: the next iteration's load waits for the previous
// iteration's reader (instance iv0 of the Scalar queue), and so does the activation's
// write of the tile the Vector engine read.
// CHECK-LABEL: func @single_buffer
func.func @single_buffer() {
  nisa.buffer 0 input 0 : tensor<4x64xf32>
  nisa.loop iv0 to 4 {
    // CHECK: nisa.dma_copy on 4 {{.*}} wait [2, 0] {wait_terms = array<i64: 0, 0, 1, 0>}
    nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, [[64, 1], [1, 64]], f32>
    // CHECK: nisa.activation exp on 2 {{.*}} wait [1, 0, 4, 1] {wait_terms = array<i64: 0, 0, 1, 0, 1, 0, 1, 0>}
    nisa.activation exp on 2 <sbuf[0] + 512, [[1, 1], [1, 64]], f32>, <sbuf[0] + 0, [[1, 1], [1, 64]], f32>
    // CHECK: nisa.tensor_tensor add on 1 {{.*}} wait [2, 1] {wait_terms = array<i64: 0, 0, 1, 0>}
    nisa.tensor_tensor add on 1 <sbuf[0] + 1024, [[1, 1], [1, 64]], f32>, <sbuf[0] + 1024, [[1, 1], [1, 64]], f32>, <sbuf[0] + 512, [[1, 1], [1, 64]], f32>
  }
  return
}

// -----

// Stores of 128-row blocks of a matrix from two loops: byte ranges of the blocks of the
// previous outer iteration overlap this one's (rows interleave), but the rows and
// columns themselves never do, so the second loop's stores wait only for their producer.
// CHECK-LABEL: func @disjoint_blocks
// CHECK: nisa.dma_copy on 5 {{.*}} wait [1, 1] {wait_terms = array<i64: 0, 0, 2, 0, 0, 1, 1, 0>}
func.func @disjoint_blocks() {
  nisa.buffer 0 output 0 : tensor<256x1024xf32>
  nisa.loop iv0 to 2 {
    nisa.loop iv1 to 2 {
      nisa.tensor_copy on 1 <sbuf[0] + 0 + 2048*(iv1 mod 2), [[1, 128], [1, 512]], f32>, <sbuf[0] + 8192, [[1, 128], [1, 512]], f32>
      nisa.dma_copy on 5 <hbm[0] + 0 + 512*iv0 + 131072*iv1, [[1024, 128], [1, 512]], f32>, <sbuf[0] + 0 + 2048*(iv1 mod 2), [[1, 128], [1, 512]], f32>
    }
  }
  return
}

// -----

// Two nests with the same offset terms but different trip counts (the halves of a nest
// split over two physical cores, here the consumer's second half on core 1): the reader's
// single iteration reads the rows the writer's second iteration stores, so it waits for
// both of the writer's instances.
// CHECK-LABEL: func @different_trips
func.func @different_trips() {
  nisa.buffer 0 input 0 : tensor<4x64xf32>
  nisa.buffer 1 internal -1 : tensor<4x64xf32>
  nisa.loop iv0 to 2 {
    nisa.dma_copy on 4 <hbm[1] + 0 + 128*iv0, [[64, 2], [1, 64]], f32>, <hbm[0] + 0 + 128*iv0, [[64, 2], [1, 64]], f32>
  }
  nisa.loop iv0 to 1 {
    // CHECK: nisa.dma_copy on 25 {{.*}} wait [4, 2]{{$}}
    nisa.dma_copy on 25 <sbuf[0] + 0, [[1, 2], [1, 64]], f32, core 1>, <hbm[1] + 128 + 128*iv0, [[64, 2], [1, 64]], f32>
  }
  return
}

// -----

// A pipeline whose rotating buffer is indexed by an inner loop (4 slots, iv1 mod 4) inside
// an outer loop: the load into slot iv1 waits for the reader of that slot in the previous
// outer iteration, instance 4*(iv0 - 1) + iv1 + 1 of the Scalar queue, not for the last
// reader of that iteration (which would stall the loads every 4 tiles).
// CHECK-LABEL: func @inner_rotation
// CHECK: nisa.dma_copy on 4 {{.*}} wait [2, -3] {wait_terms = array<i64: 0, 0, 4, 0, 0, 1, 1, 0>}
// CHECK: nisa.activation exp on 2 {{.*}} wait [4, 1, 5, -3] {wait_terms = array<i64: 0, 0, 4, 0, 0, 1, 1, 0, 1, 0, 4, 0, 1, 1, 1, 0>}
// CHECK: nisa.dma_copy on 5 {{.*}} wait [2, 1] {wait_terms = array<i64: 0, 0, 4, 0, 0, 1, 1, 0>}
func.func @inner_rotation() {
  nisa.buffer 0 input 0 : tensor<32x64xf32>
  nisa.buffer 1 output 0 : tensor<32x64xf32>
  nisa.loop iv0 to 8 {
    nisa.loop iv1 to 4 {
      nisa.dma_copy on 4 <sbuf[0] + 0 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv1 + 256*iv0, [[64, 1], [1, 64]], f32>
      nisa.activation exp on 2 <sbuf[0] + 1024 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>, <sbuf[0] + 0 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>
      nisa.dma_copy on 5 <hbm[1] + 0 + 64*iv1 + 256*iv0, [[64, 1], [1, 64]], f32>, <sbuf[0] + 1024 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>
    }
  }
  return
}

// -----

// A software pipeline over two slots: iteration iv0 reads slot iv0 mod 2 and loads the
// next iteration's data into the other slot, 256 - 256 * (iv0 mod 2). The two offsets
// are terms of the same iv and modulus, never equal in one iteration: the load waits
// for the read of the previous iteration (instance iv0 of the Vector queue), not for
// this iteration's (iv0 + 1), so it runs a whole iteration ahead. The read waits for
// the load of the previous iteration (instance iv0 of queue 4) and the prologue.
// CHECK-LABEL: func @two_slots
// CHECK: nisa.tensor_scalar mul on 1 {{.*}} wait [4, 0, 5, 1] {wait_terms = array<i64: 0, 0, 1, 0>}
// CHECK: nisa.dma_copy on 4 {{.*}} wait [1, 0, 5, 1] {wait_terms = array<i64: 0, 0, 1, 0>}
// CHECK: nisa.tensor_scalar mul on 1 {{.*}} wait [4, 7]{{$}}
func.func @two_slots() {
  nisa.buffer 0 input 0 : tensor<8x64xf32>
  nisa.buffer 1 output 0 : tensor<8x64xf32>
  nisa.dma_copy on 5 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0, [[64, 1], [1, 64]], f32>
  nisa.loop iv0 to 7 {
    nisa.tensor_scalar mul on 1 <sbuf[0] + 1024, [[1, 1], [1, 64]], f32>, <sbuf[0] + 0 + 256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, 2.0
    nisa.dma_copy on 4 <sbuf[0] + 256 + -256*(iv0 mod 2), [[1, 1], [1, 64]], f32>, <hbm[0] + 64 + 64*iv0, [[64, 1], [1, 64]], f32>
  }
  nisa.tensor_scalar mul on 1 <sbuf[0] + 1024, [[1, 1], [1, 64]], f32>, <sbuf[0] + 256, [[1, 1], [1, 64]], f32>, 2.0
  return
}

// -----

// A tile rotating over four buffers in an inner loop of 8 (a multiple of 4), inside an
// outer loop: the load of buffer iv1 mod 4 waits for its reader one rotation back,
// instance 8 * iv0 + iv1 - 3 of the Vector queue, across the outer boundary too (at
// iv1 < 4 that reader ran in the previous outer iteration, 4 iterations before its end),
// not for the last reader of the previous outer iteration (8 * iv0): the loads of the
// next outer iteration run ahead as within one. The same for the WAR of the Vector
// engine on the stores.
// CHECK-LABEL: func @rotation_across_outer
// CHECK: nisa.dma_copy on 4 {{.*}} wait [1, -3] {wait_terms = array<i64: 0, 0, 8, 0, 0, 1, 1, 0>}
// CHECK: nisa.tensor_scalar mul on 1 {{.*}} wait [4, 1, 5, -3] {wait_terms = array<i64: 0, 0, 8, 0, 0, 1, 1, 0, 1, 0, 8, 0, 1, 1, 1, 0>}
// CHECK: nisa.dma_copy on 5 {{.*}} wait [1, 1] {wait_terms = array<i64: 0, 0, 8, 0, 0, 1, 1, 0>}
func.func @rotation_across_outer() {
  nisa.buffer 0 input 0 : tensor<16x64xf32>
  nisa.buffer 1 output 0 : tensor<16x64xf32>
  nisa.loop iv0 to 2 {
    nisa.loop iv1 to 8 {
      nisa.dma_copy on 4 <sbuf[0] + 0 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 512*iv0 + 64*iv1, [[64, 1], [1, 64]], f32>
      nisa.tensor_scalar mul on 1 <sbuf[0] + 2048 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>, <sbuf[0] + 0 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>, 2.0
      nisa.dma_copy on 5 <hbm[1] + 0 + 512*iv0 + 64*iv1, [[64, 1], [1, 64]], f32>, <sbuf[0] + 2048 + 256*(iv1 mod 4), [[1, 1], [1, 64]], f32>
    }
  }
  return
}
