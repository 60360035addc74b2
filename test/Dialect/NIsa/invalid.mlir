// RUN: neuron-opt %s -split-input-file -verify-diagnostics

// Each instruction kind runs on its engine's queue.
func.func @matmul_on_vector() {
  // expected-error @+1 {{cannot run on queue 1; allowed: 0}}
  nisa.nc_matmul on 1 <psum[0] + 0, [[1, 3], [1, 8]], f32>, <sbuf[0] + 0, [[1, 64], [1, 3]], bf16>, <sbuf[0] + 64, [[1, 64], [1, 8]], bf16>
  return
}

// -----

// Waits are [queue, count] pairs.
func.func @odd_waits() {
  // expected-error @+1 {{waits must be [queue, count] pairs}}
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 3], [1, 200]], f32>, <hbm[0] + 0, [[200, 3], [1, 200]], f32> wait [1]
  return
}

// -----

// On-chip patterns stay within 128 partitions.
func.func @partition_overflow() {
  // expected-error @+1 {{access pattern spans partitions 100..164, beyond 128}}
  nisa.dma_copy on 4 <sbuf[100] + 0, [[1, 64], [1, 8]], f32>, <hbm[0] + 0, [[8, 64], [1, 8]], f32>
  return
}

// -----

// DMA copies element for element.
func.func @dma_count() {
  // expected-error @+1 {{copies 600 elements into 8}}
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 1], [1, 8]], f32>, <hbm[0] + 0, [[200, 3], [1, 200]], f32>
  return
}

// -----

// Unknown memories are rejected when parsing.
func.func @bad_space() {
  // expected-error @+1 {{unknown memory space 'dram'}}
  nisa.dma_copy on 4 <dram[0] + 0, [[1, 1], [1, 8]], f32>, <hbm[0] + 0, [[1, 8]], f32>
  return
}

// -----

// Compute engines work on SBUF and PSUM.
func.func @activation_from_hbm() {
  // expected-error @+1 {{compute engines read and write SBUF/PSUM only}}
  nisa.activation exp on 2 <sbuf[0] + 0, [[1, 1], [1, 8]], f32>, <hbm[0] + 0, [[8, 1], [1, 8]], f32>
  return
}

// -----

func.func @wait_term_without_wait() {
  nisa.buffer 0 input 0 : tensor<8x64xf32>
  nisa.loop iv0 to 8 {
    // expected-error @+1 {{wait term names wait 1 of 1}}
    nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, [[64, 1], [1, 64]], f32> wait [1, -1] {wait_terms = array<i64: 1, 0, 1, 0>}
  }
  return
}

// -----

func.func @offset_term_outside_loop() {
  nisa.buffer 0 input 0 : tensor<8x64xf32>
  // expected-error @+1 {{access pattern term uses iv0 but the op is inside 0 loop(s)}}
  nisa.dma_copy on 4 <sbuf[0] + 0, [[1, 1], [1, 64]], f32>, <hbm[0] + 0 + 64*iv0, [[64, 1], [1, 64]], f32>
  return
}

// -----

func.func @collective_on_dma_queue() {
  nisa.buffer 0 input 0 : tensor<64xf32>
  nisa.buffer 1 output 0 : tensor<64xf32>
  // expected-error @+1 {{cannot run on queue 4; allowed: 20}}
  nisa.collective all_reduce add group "0" of 2 on 4 <hbm[1] + 0, [[1, 64]], f32>, <hbm[0] + 0, [[1, 64]], f32>
  return
}

// -----

func.func @reduce_scatter_size() {
  nisa.buffer 0 input 0 : tensor<64xf32>
  nisa.buffer 1 output 0 : tensor<64xf32>
  // expected-error @+1 {{a reduce_scatter over 2 ranks of 64 elements cannot write 64}}
  nisa.collective reduce_scatter add group "0" of 2 on 20 <hbm[1] + 0, [[1, 64]], f32>, <hbm[0] + 0, [[1, 64]], f32>
  return
}

// -----

// An engine of physical core 1 (queue 22: its Vector engine) reads only core 1's SBUF.
func.func @cross_core_sbuf() {
  // expected-error @+1 {{on queue 22 (physical core 1) accesses the sbuf of core 0}}
  nisa.tensor_copy on 22 <sbuf[0] + 0, [[1, 4], [1, 8]], f32, core 1>, <sbuf[0] + 64, [[1, 4], [1, 8]], f32>
  return
}

// -----

// HBM is shared: its patterns name no core.
func.func @hbm_core() {
  nisa.buffer 0 input 0 : tensor<4x8xf32>
  // expected-error @+1 {{accesses the hbm of core 1}}
  nisa.dma_copy on 25 <sbuf[0] + 0, [[1, 4], [1, 8]], f32, core 1>, <hbm[0] + 0, [[8, 4], [1, 8]], f32, core 1>
  return
}
