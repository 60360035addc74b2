// Semantics of the control and communication instructions (issue 25): the register moves
// between memory and the sequencer's registers, and sendrecv's exchange between the two
// physical cores of a logical core.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/simulator/functional/Memory.h"

#include <cstdint>

namespace neuron::runtime {

/// register_load: the one integer element of `ap` (i32, i8, u8) as its value.
int64_t loadRegisterValue(Memory &mem, const AccessPattern &ap);

/// register_store: writes `value` to the one element of `ap` (i32; i8 and u8 keep the low
/// bits, two's complement).
void storeRegisterValue(Memory &mem, const AccessPattern &ap, int32_t value);

/// A sendrecv pair: a.dst <- b.srcs[0] and b.dst <- a.srcs[0], bit-exact, both read before
/// either is written (a swap of one tile works).
void exchangeTiles(Memory &mem, const Instruction &a, const Instruction &b);

} // namespace neuron::runtime
