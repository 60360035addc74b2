// Hazard detection: checks that the simulated schedule respects program order.
//
// The functional model executes instructions in program order, the timing
// model starts each one when its queue is free and its semaphore waits hold.
// Both agree only if every pair of conflicting accesses on different queues
// is ordered in time the way it is in the program: an access that comes
// later in the program must start no earlier than the conflicting earlier one
// completes. A program whose waits do not ensure that (a compiler bug, a
// dropped semaphore) would compute different numbers on the device, and its
// simulated time would be optimistic; the detector raises SimulationError
// naming both instructions instead.
//
// Like a race detector's shadow memory, it keeps for every byte of SBUF,
// PSUM and every HBM buffer some instruction writes: the last write (its
// queue, instruction and completion time) and the latest-completing reads
// since then (on two different queues, enough to find one on a queue other
// than any given one). Bytes are grouped into ranges that were accessed
// alike (Shadow), so the cost follows the access patterns' runs, not their
// bytes. A strided read (many runs, e.g. a transposing DMA) is recorded on
// each whole range it touches, with what identifies its bytes, so that a
// later write confirms a conflict exactly instead of the read cutting the
// shadow into element-sized ranges; only the latest such read per queue is
// kept, so an older strided read hidden behind a later one of the same queue
// can go unreported (never a false report). An access pattern of more than
// 16384 runs (a transposing load of one 128x128 tile has exactly that many)
// is checked as its bounding byte range, which is conservative: it may report
// accesses to bytes interleaved with its own. It also reports reads of SBUF and PSUM
// bytes that no instruction wrote (device memory is not zeroed).
#pragma once

#include "runtime/program/Program.h"
#include "runtime/program/Target.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace neuron::runtime {

class HazardDetector {
public:
  HazardDetector(const Program &program, const Target &target);
  ~HazardDetector();
  HazardDetector(const HazardDetector &) = delete;
  HazardDetector &operator=(const HazardDetector &) = delete;

  /// Checks and records one instance of (checked) instruction `index`, which
  /// starts at `startNs` and completes at `completeNs`; `iv` are the induction
  /// variables of the loops around it. Instances must come in program order.
  /// Throws SimulationError on a hazard or a read of never-written memory. `at`, if given, is
  /// the instance with its operands' offsets bound (loop terms and dynamic offsets applied).
  void access(size_t index, const int64_t *iv, double startNs,
              double completeNs, const Instruction *at = nullptr);

private:
  struct Footprint;
  struct Shadow;
  const std::vector<Footprint> &footprints(size_t index);
  Shadow *shadowOf(const Footprint &f);

  const Program &prog_;
  std::vector<std::vector<Footprint>> footprints_; // per instruction, lazily
  std::vector<bool> prepared_;
  std::unique_ptr<Shadow> sbuf_[kMaxPhysicalCores], psum_[kMaxPhysicalCores];
  std::vector<std::unique_ptr<Shadow>> hbm_; // per buffer; null: never written
};

} // namespace neuron::runtime
