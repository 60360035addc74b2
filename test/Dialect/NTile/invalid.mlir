// RUN: neuron-opt %s -split-input-file -verify-diagnostics

// A pattern may not read past the end of its buffer.
func.func @dma_out_of_bounds(%x: memref<3x200xf32, #ntile.mem<hbm>>, %t: memref<3x200xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source pattern touches elements [1, 601) of a buffer of 600}}
  ntile.dma %x <1, [[200, 3], [1, 200]]> to %t <0, [[200, 3], [1, 200]]> : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Both sides of a DMA move the same number of elements.
func.func @dma_count(%x: memref<3x200xf32, #ntile.mem<hbm>>, %t: memref<3x200xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source pattern has 600 elements, target pattern has 400}}
  ntile.dma %x <0, [[200, 3], [1, 200]]> to %t <0, [[200, 2], [1, 200]]> : memref<3x200xf32, #ntile.mem<hbm>>, memref<3x200xf32, #ntile.mem<sbuf>>
  return
}

// -----

// SBUF has 128 partitions.
func.func @too_many_partitions(%a: memref<256x4xf32, #ntile.mem<sbuf>>, %b: memref<256x4xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source spans 256 partitions; at most 128 exist}}
  ntile.copy %a to %b : memref<256x4xf32, #ntile.mem<sbuf>>, memref<256x4xf32, #ntile.mem<sbuf>>
  return
}

// -----

// The moving free size is one PSUM bank of fp32.
func.func @matmul_moving_too_wide(%s: memref<128x128xbf16, #ntile.mem<sbuf>>, %m: memref<128x1024xbf16, #ntile.mem<sbuf>>, %p: memref<128x1024xf32, #ntile.mem<psum>>) {
  // expected-error @+1 {{moving free size 1024 exceeds one PSUM bank (512 fp32)}}
  ntile.matmul %s, %m to %p : memref<128x128xbf16, #ntile.mem<sbuf>>, memref<128x1024xbf16, #ntile.mem<sbuf>>, memref<128x1024xf32, #ntile.mem<psum>>
  return
}

// -----

// Matmul accumulates into PSUM, not SBUF.
func.func @matmul_into_sbuf(%s: memref<128x3xbf16, #ntile.mem<sbuf>>, %m: memref<128x8xbf16, #ntile.mem<sbuf>>, %p: memref<3x8xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{result must be an fp32 PSUM tile}}
  ntile.matmul %s, %m to %p : memref<128x3xbf16, #ntile.mem<sbuf>>, memref<128x8xbf16, #ntile.mem<sbuf>>, memref<3x8xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Compute engines do not read HBM.
func.func @activation_on_hbm(%a: memref<3x8xf32, #ntile.mem<hbm>>, %b: memref<3x8xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source must be an SBUF or PSUM tile, got hbm}}
  ntile.activation exp %a to %b : memref<3x8xf32, #ntile.mem<hbm>>, memref<3x8xf32, #ntile.mem<sbuf>>
  return
}

// -----

// DMA does not convert.
func.func @dma_convert(%x: memref<8xf32, #ntile.mem<hbm>>, %y: memref<8xbf16, #ntile.mem<hbm>>) {
  // expected-error @+1 {{DMA does not convert element types}}
  ntile.dma %x <0, [[1, 8]]> to %y <0, [[1, 8]]> : memref<8xf32, #ntile.mem<hbm>>, memref<8xbf16, #ntile.mem<hbm>>
  return
}

// -----

// A pattern stays in bounds in the last iteration too.
func.func @loop_out_of_bounds(%x: memref<4x64xf32, #ntile.mem<hbm>>, %t: memref<1x64xf32, #ntile.mem<sbuf>>) {
  ntile.loop iv0 to 5 {
    // expected-error @+1 {{source pattern touches elements [0, 320) of a buffer of 256}}
    ntile.dma %x <0 + 64*iv0, [[64, 1], [1, 64]]> to %t <0, [[64, 1], [1, 64]]> : memref<4x64xf32, #ntile.mem<hbm>>, memref<1x64xf32, #ntile.mem<sbuf>>
  }
  return
}

// -----

// A term names an enclosing loop.
func.func @term_without_loop(%x: memref<4x64xf32, #ntile.mem<hbm>>, %t: memref<1x64xf32, #ntile.mem<sbuf>>) {
  ntile.loop iv0 to 2 {
    // expected-error @+1 {{source term uses iv1 but the op is inside 1 loop(s)}}
    ntile.dma %x <0 + 64*iv1, [[64, 1], [1, 64]]> to %t <0, [[64, 1], [1, 64]]> : memref<4x64xf32, #ntile.mem<hbm>>, memref<1x64xf32, #ntile.mem<sbuf>>
  }
  return
}

// -----

func.func @empty_loop() {
  // expected-error @+1 {{'ntile.loop' op must run at least once}}
  ntile.loop iv0 to 0 {
  }
  return
}

// -----

// A view stays inside its tile in every iteration.
func.func @view_past_tile(%p: memref<128x256xbf16, #ntile.mem<sbuf>>) {
  ntile.loop iv0 to 3 {
    // expected-error @+1 {{view exceeds the tile}}
    %v = ntile.view %p <0 + 128*iv0, [[256, 128], [1, 128]]> : memref<128x256xbf16, #ntile.mem<sbuf>> to memref<128x128xbf16, #ntile.mem<sbuf>>
  }
  return
}

// -----

// Two ops compute in fp32: not on integer tiles.
func.func @two_ops_on_integers(%i: memref<128x64xi32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{with two ops computes on float tiles only}}
  ntile.tensor_scalar mul %i, 2.0 then add 1.0 to %i : memref<128x64xi32, #ntile.mem<sbuf>>, memref<128x64xi32, #ntile.mem<sbuf>>
  return
}

// -----

// bn_stats takes at most 512 elements per partition.
func.func @bn_stats_too_wide(%x: memref<128x600xf32, #ntile.mem<sbuf>>, %s: memref<128x6xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{source has more than 512 elements per partition (bn_stats_fmax)}}
  ntile.bn_stats %x to %s : memref<128x600xf32, #ntile.mem<sbuf>>, memref<128x6xf32, #ntile.mem<sbuf>>
  return
}

// -----

// bn_aggr writes (mean, variance) per partition.
func.func @bn_aggr_target(%s: memref<128x12xf32, #ntile.mem<sbuf>>, %m: memref<128x3xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{target must be [partitions of source, 2]}}
  ntile.bn_aggr %s to %m : memref<128x12xf32, #ntile.mem<sbuf>>, memref<128x3xf32, #ntile.mem<sbuf>>
  return
}

// -----

// A scan's initial tile holds one value per partition.
func.func @scan_initial_shape(%a: memref<4x64xf32, #ntile.mem<sbuf>>, %r: memref<4x2xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{initial tile must be one value per partition of the target}}
  ntile.tensor_tensor_scan mul add %a, %a, 0.0 tile %r : memref<4x2xf32, #ntile.mem<sbuf>> to %a : memref<4x64xf32, #ntile.mem<sbuf>>, memref<4x64xf32, #ntile.mem<sbuf>>, memref<4x64xf32, #ntile.mem<sbuf>>
  return
}

// -----

// ntile.isa's fields are the program format's: an unknown field is an error at the op.
func.func @isa_unknown_field(%a: memref<128x64xf32, #ntile.mem<sbuf>>, %b: memref<128x64xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{'ntile.isa' op fields: unknown instruction field "alpha"}}
  ntile.isa max8(%a) to %b {fields = {alpha = 1.0}} : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  return
}

// -----

func.func @isa_bad_alu(%a: memref<128x64xf32, #ntile.mem<sbuf>>, %b: memref<128x64xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{'ntile.isa' op fields.alu: unknown alu op "plus"}}
  ntile.isa affine_select(%a) to %b {fields = {alu = "plus"}} : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  return
}

// -----

// A broadcast source is a [P, 1] column.
func.func @isa_broadcast_shape(%a: memref<128x64xf32, #ntile.mem<sbuf>>, %b: memref<128x64xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{'ntile.isa' op broadcast source 0 must be a [P, 1] tile}}
  ntile.isa max8(%a) to %b {broadcast = array<i64: 0>} : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  return
}

// -----

// Engines read SBUF and PSUM only.
func.func @isa_hbm_source(%a: memref<128x64xf32, #ntile.mem<hbm>>, %b: memref<128x64xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{'ntile.isa' op source 0 must be an SBUF or PSUM tile, got hbm}}
  ntile.isa max8(%a) to %b : (memref<128x64xf32, #ntile.mem<hbm>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  return
}

// -----

// The opcode is one of the ISA table's rows.
func.func @isa_opcode(%a: memref<128x64xf32, #ntile.mem<sbuf>>, %b: memref<128x64xf32, #ntile.mem<sbuf>>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'opcode'}}
  ntile.isa max9(%a) to %b : (memref<128x64xf32, #ntile.mem<sbuf>>) -> memref<128x64xf32, #ntile.mem<sbuf>>
  return
}
