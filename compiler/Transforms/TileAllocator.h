// Next-fit ring allocator for on-chip memory (byte ranges of every partition).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace neuron::compiler {

/// Hands out [start, start + size) ranges of `capacity` bytes. Each range lives
/// until a given op index; allocation continues after the previous one (a ring),
/// so a freed range is reused as late as possible and its readers rarely stall
/// the next writer.
class TileAllocator {
public:
  TileAllocator(int64_t capacity, int64_t alignment) : capacity(capacity), alignment(alignment) {}

  /// Frees every range whose last use is before op index `now`.
  void release(int64_t now);
  /// A range of `size` bytes live until op index `lastUse`, or nullopt when full.
  std::optional<int64_t> allocate(int64_t size, int64_t lastUse);
  /// Bytes currently allocated.
  int64_t liveBytes() const;
  int64_t getCapacity() const { return capacity; }

private:
  std::optional<int64_t> findFrom(int64_t start, int64_t size) const;

  struct Range {
    int64_t end, lastUse;
  };
  int64_t capacity, alignment, cursor = 0;
  std::map<int64_t, Range> live; // by start
};

} // namespace neuron::compiler
