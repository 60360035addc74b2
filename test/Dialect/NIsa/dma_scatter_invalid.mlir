// RUN: neuron-opt %s -split-input-file -verify-diagnostics

func.func @on_vector() {
  // expected-error @+1 {{cannot run on queue 1}}
  nisa.dma_scatter on 1 <hbm[0] + 0, [[40, 300], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 40]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>]
  return
}

// -----

func.func @table_in_sbuf() {
  // expected-error @+1 {{scatters SBUF rows into an HBM table with SBUF indices}}
  nisa.dma_scatter on 4 <sbuf[0] + 0, [[1, 128], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 40]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>]
  return
}

// -----

func.func @row_width() {
  // expected-error @+1 {{one index per src partition, one row slice per index}}
  nisa.dma_scatter on 4 <hbm[0] + 0, [[40, 300], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 39]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>]
  return
}

// -----

func.func @accumulate_sub() {
  // expected-error @+1 {{accumulates with add, mul, max or min, not sub}}
  nisa.dma_scatter accumulate sub on 4 <hbm[0] + 0, [[40, 300], [1, 40]], f32>, <sbuf[0] + 64, [[1, 128], [1, 40]], f32>[<sbuf[0] + 0, [[1, 128], [1, 1]], i64>]
  return
}
