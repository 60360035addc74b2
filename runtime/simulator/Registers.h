// The sequencer registers of a run (nki.isa.register_*): kRegistersPerQueue int32 registers per
// queue, which are allocated and which hold a value, and the static rule that every use of a
// register follows a register_alloc of it in program order.
#pragma once

#include "runtime/program/Program.h"

#include <array>
#include <bitset>
#include <cstdint>
#include <string>

namespace neuron::runtime {

/// "register 3 of queue 1 (vector)".
std::string registerName(RegRef r);

/// Throws SimulationError naming the first use of a register (register_move / load / store, a
/// dynamic loop's count, a dynamic offset) that no register_alloc of it precedes in program
/// order, or a register or queue that does not exist.
void checkRegisterUse(const Program &program);

class RegisterFile {
public:
  void allocate(RegRef r) { alloc_.set(slot(r)); }
  /// Sets `r` to `value` (in int32), visible from `readyNs` on; `known`: false for a value a
  /// timing-only run could not read from memory.
  void write(RegRef r, int64_t value, double readyNs, bool known = true);
  /// The value of `r`; throws SimulationError if it was never written (`who` names the
  /// reader in the message).
  int32_t read(RegRef r, const std::string &who) const;
  bool known(RegRef r) const { return known_.test(slot(r)); }
  /// When the last write of `r` completes (0 if never written).
  double readyNs(RegRef r) const { return ready_[slot(r)]; }

private:
  static constexpr size_t kSlots = size_t(kNumQueues) * kRegistersPerQueue;
  static size_t slot(RegRef r) { return size_t(r.queue) * kRegistersPerQueue + r.index; }
  std::bitset<kSlots> alloc_, written_, known_;
  std::array<int32_t, kSlots> value_{};
  std::array<double, kSlots> ready_{};
};

} // namespace neuron::runtime
