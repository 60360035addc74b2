// Functional memory of one simulated core: HBM buffers, SBUF, PSUM on the host.
#pragma once

#include "runtime/program/Program.h"
#include "runtime/program/Target.h"
#include "runtime/simulator/functional/StridedView.h"

#include <array>
#include <cstdint>
#include <vector>

namespace neuron::runtime {

class Memory {
public:
  /// Binds Input/Output buffers to the caller's pointers (inputs[index],
  /// outputs[index]), Constant buffers to their data, and allocates Internal
  /// buffers, SBUF and PSUM zero-filled (or 0xFF-filled when `poison`, which
  /// reads back as NaN in float dtypes). Throws SimulationError on a missing
  /// pointer or a constant whose data does not match its declaration.
  Memory(const Program &program, const Target &target,
         const std::vector<const void *> &inputs,
         const std::vector<void *> &outputs, bool poison);
  ~Memory();
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;

  /// The host view of a checked access pattern.
  View view(const AccessPattern &ap) const;

  /// Call before executing `inst` (checked): makes what it reads of SBUF and
  /// PSUM, and what it writes only in part, read back as a fresh run's
  /// memory (zeros, or 0xFF with poison), wherever an earlier run on this
  /// thread left its data there (see OnChip).
  void prepare(const Instruction &inst);
  /// prepare() of one operand alone (`write`: it is written, not read).
  void prepare(const AccessPattern &ap, bool write) { touch(ap, write); }

  /// The Vector engine's accumulator registers on physical core `core`: one fp32 value per
  /// partition, kept across instructions (Instruction::reduceCmd); zero when a run starts.
  float *vectorAccumulators(int core) { return accumulators_[size_t(core)].data(); }
  /// The Scalar engine's accumulator registers on physical core `core` (activation's
  /// reduce_cmd): one fp32 value per partition, kept across instructions; zero when a run starts.
  float *scalarAccumulators(int core) { return scalarAccumulators_[size_t(core)].data(); }

  /// The pseudo-random generators of partition lane `partition` of engine `e` (Vector or
  /// GpSimd) on core `core`: 24 uint32 words on the Vector engine (4 XORWOW generators), 6 on
  /// GpSimd (one); Random.h.
  uint32_t *rngState(int core, Engine e, int64_t partition) {
    if (!rngStarted_)
      startRng();
    return e == Engine::GpSimd ? gpsimdRng_[size_t(core)][size_t(partition)].data()
                               : vectorRng_[size_t(core)][size_t(partition)].data();
  }
  /// The run's seed (RunOptions::seed), which every generator starts from (on first use).
  void setRunSeed(uint64_t seed) {
    rngSeed_ = seed;
    rngStarted_ = false;
  }
  /// The Vector-engine generators of core `core` from `seed` (set_rng_seed).
  void seedVectorRng(int core, uint64_t seed);

private:
  void startRng();
  uint64_t rngSeed_ = 0;
  bool rngStarted_ = false;
  std::array<std::array<std::array<uint32_t, 24>, 128>, kMaxPhysicalCores> vectorRng_{};
  std::array<std::array<std::array<uint32_t, 6>, 128>, kMaxPhysicalCores> gpsimdRng_{};
  std::array<std::array<float, 128>, kMaxPhysicalCores> accumulators_{};
  std::array<std::array<float, 128>, kMaxPhysicalCores> scalarAccumulators_{};
  /// SBUF or PSUM: one host block of partitions x pitch bytes. Blocks are
  /// recycled through a per-thread cache (Memory.cpp) instead of being
  /// allocated and zero-filled per run. What the last run touched is "stale"
  /// in the next one, tracked per partition and kGranule bytes, and cleared
  /// lazily: when an instruction reads it, or writes only part of a granule
  /// (a dense write clears only the part it does not overwrite); a granule an
  /// instruction overwrites entirely is never cleared.
  struct OnChip {
    static constexpr int64_t kGranule = 2048;
    uint8_t *base = nullptr;
    int64_t partBytes = 0, partitions = 0;
    /// Host bytes from one partition to the next: partBytes rounded up to
    /// 4 KiB plus one cache line, so that the same offset in different
    /// partitions falls into different L1 sets (a multiple of 4 KiB would
    /// put them all into one: transposing copies and the rows of a matmul's
    /// PSUM block would evict each other).
    int64_t pitch = 0;
    static int64_t pitchFor(int64_t partBytes) {
      return (partBytes + 4095) / 4096 * 4096 + 64;
    }
    uint8_t fill = 0;
    // Extent touched in this run: partitions [0, partHi), bytes [0, byteHi).
    int64_t partHi = 0, byteHi = 0;
    // stale[g]: bit p set if partition p's granule g holds an old run's data.
    std::vector<std::array<uint64_t, 2>> stale;
    int64_t staleGranules = 0; // granules with any bit set
  };
  static OnChip acquire(int64_t partitions, int64_t partBytes, uint8_t fill);
  static void release(OnChip &block);
  void touch(const AccessPattern &ap, bool write);

  /// An Internal HBM buffer. Its memory comes from a per-thread cache of the
  /// buffers of earlier runs when one fits (Memory.cpp), instead of fresh
  /// pages that fault and are zeroed by the OS on first touch. A recycled
  /// buffer is all "stale", tracked per kGranule bytes and cleared lazily
  /// like OnChip: when an access reads a stale granule or writes part of it.
  struct Internal {
    static constexpr int64_t kGranule = 4096;
    uint8_t *base = nullptr;
    int64_t bytes = 0;     // the buffer's size
    int64_t capacity = 0;  // the allocation's size (>= bytes)
    std::vector<uint64_t> stale; // bit g: granule g holds an old run's data
    int64_t staleGranules = 0;
  };
  void touchHbm(const AccessPattern &ap, bool write);

  std::vector<uint8_t *> hbm_;
  std::vector<int32_t> internalOf_; // buffer index -> internal_ slot, or -1
  std::vector<Internal> internal_;  // recycled or freed in the destructor
  uint8_t fill_ = 0;
  OnChip sbuf_[kMaxPhysicalCores], psum_[kMaxPhysicalCores]; // per physical core
};

} // namespace neuron::runtime
