// Next-fit ring allocation of SBUF and PSUM ranges.
#include "compiler/Transforms/TileAllocator.h"

namespace neuron::compiler {

void TileAllocator::release(int64_t now) {
  for (auto it = live.begin(); it != live.end();)
    it = it->second.lastUse < now ? live.erase(it) : std::next(it);
}

std::optional<int64_t> TileAllocator::findFrom(int64_t start, int64_t size) const {
  int64_t candidate = start;
  for (const auto &[begin, range] : live) {
    if (range.end <= candidate)
      continue;
    if (begin >= candidate + size)
      break;
    candidate = (range.end + alignment - 1) / alignment * alignment;
  }
  if (candidate + size <= capacity)
    return candidate;
  return std::nullopt;
}

std::optional<int64_t> TileAllocator::allocate(int64_t size, int64_t lastUse) {
  size = (size + alignment - 1) / alignment * alignment;
  std::optional<int64_t> at = findFrom(cursor, size);
  if (!at)
    at = findFrom(0, size);
  if (!at)
    return std::nullopt;
  live[*at] = {*at + size, lastUse};
  cursor = *at + size;
  return at;
}

int64_t TileAllocator::liveBytes() const {
  int64_t n = 0;
  for (const auto &[begin, range] : live)
    n += range.end - begin;
  return n;
}

} // namespace neuron::compiler
