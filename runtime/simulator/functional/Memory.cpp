// Functional memory of one simulated core (see Memory.h).
#include "runtime/simulator/functional/Memory.h"

#include "runtime/program/Isa.h"
#include "runtime/simulator/functional/Random.h"
#include "runtime/simulator/Simulator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace neuron::runtime {

namespace {

// calloc, because the OS hands out zero pages lazily: a 28 MiB SBUF costs
// only the pages a program touches.
uint8_t *allocate(int64_t bytes, bool poison) {
  size_t n = size_t(bytes > 0 ? bytes : 1);
  void *p = std::calloc(n, 1);
  if (!p)
    throw std::bad_alloc();
  if (poison)
    std::memset(p, 0xff, n);
  return static_cast<uint8_t *>(p);
}

/// The last released SBUF / PSUM block of this thread, per space, kept so
/// that the next run does not pay for allocating and zeroing 30 MB again.
struct CachedBlock {
  uint8_t *base = nullptr;
  int64_t bytes = 0;
  int64_t partBytes = 0, partHi = 0, byteHi = 0;
  uint8_t fill = 0;
};

struct BlockCache {
  CachedBlock slot[2]; // SBUF-sized and PSUM-sized blocks
  ~BlockCache() {
    for (CachedBlock &b : slot)
      std::free(b.base);
  }
};

thread_local BlockCache tCache;

/// Internal HBM buffers released by earlier runs of this thread, up to
/// kMaxCachedHbm bytes in all (the most recently released are kept).
constexpr int64_t kMaxCachedHbm = int64_t(256) << 20;
struct HbmCache {
  struct Entry {
    uint8_t *base;
    int64_t bytes;
  };
  std::vector<Entry> blocks; // oldest first
  int64_t total = 0;
  ~HbmCache() {
    for (Entry &e : blocks)
      std::free(e.base);
  }
  /// A cached block of at least `bytes` (and at most 1/8 more), or nullptr.
  uint8_t *take(int64_t bytes, int64_t &capacity) {
    size_t best = blocks.size();
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].bytes >= bytes && blocks[i].bytes - bytes <= bytes / 8 &&
          (best == blocks.size() || blocks[i].bytes < blocks[best].bytes))
        best = i;
    if (best == blocks.size())
      return nullptr;
    uint8_t *p = blocks[best].base;
    capacity = blocks[best].bytes;
    total -= capacity;
    blocks.erase(blocks.begin() + std::ptrdiff_t(best));
    return p;
  }
  void put(uint8_t *p, int64_t bytes) {
    if (bytes > kMaxCachedHbm) {
      std::free(p);
      return;
    }
    blocks.push_back({p, bytes});
    total += bytes;
    while (total > kMaxCachedHbm) {
      std::free(blocks.front().base);
      total -= blocks.front().bytes;
      blocks.erase(blocks.begin());
    }
  }
};

thread_local HbmCache tHbmCache;

std::string bufferLabel(size_t i, const BufferDecl &b) {
  return "buffer " + std::to_string(i) + " (\"" + b.name + "\")";
}

} // namespace

Memory::Memory(const Program &program, const Target &target,
               const std::vector<const void *> &inputs,
               const std::vector<void *> &outputs, bool poison)
{
  try {
    fill_ = poison ? 0xff : 0;
    hbm_.resize(program.buffers.size());
    internalOf_.assign(program.buffers.size(), -1);
    internal_.reserve(program.buffers.size()); // no reallocation below
    for (size_t i = 0; i < program.buffers.size(); ++i) {
      const BufferDecl &b = program.buffers[i];
      switch (b.kind) {
      case BufferDecl::Kind::Input:
      case BufferDecl::Kind::Output: {
        bool in = b.kind == BufferDecl::Kind::Input;
        size_t count = in ? inputs.size() : outputs.size();
        if (b.index < 0 || size_t(b.index) >= count)
          throw SimulationError(bufferLabel(i, b) + " is " +
                                (in ? "input " : "output ") +
                                std::to_string(b.index) + " but " +
                                std::to_string(count) + " were passed");
        const void *p = in ? inputs[b.index] : outputs[b.index];
        if (!p && b.numBytes() > 0)
          throw SimulationError(bufferLabel(i, b) + ": null pointer passed");
        // Inputs are never written: checkInstruction rejects such writes.
        hbm_[i] = static_cast<uint8_t *>(const_cast<void *>(p));
        break;
      }
      case BufferDecl::Kind::Constant:
        if (int64_t(b.data.size()) != b.numBytes())
          throw SimulationError(
              bufferLabel(i, b) + " holds " + std::to_string(b.data.size()) +
              " bytes of data but declares " + std::to_string(b.numBytes()));
        // Constants are never written either.
        hbm_[i] = const_cast<uint8_t *>(b.data.data());
        break;
      case BufferDecl::Kind::Internal: {
        internalOf_[i] = int32_t(internal_.size());
        Internal &in = internal_.emplace_back();
        in.bytes = b.numBytes();
        const int64_t granules =
            (in.bytes + Internal::kGranule - 1) / Internal::kGranule;
        if (in.bytes >= Internal::kGranule) {
          in.stale.resize(size_t((granules + 63) / 64)); // before take()
          in.base = tHbmCache.take(in.bytes, in.capacity);
        }
        if (in.base) { // recycled: all stale until cleared
          std::fill(in.stale.begin(), in.stale.end(), ~uint64_t(0));
          if (granules % 64)
            in.stale.back() = (uint64_t(1) << (granules % 64)) - 1;
          in.staleGranules = granules;
        } else {
          in.base = allocate(in.bytes, poison);
          in.capacity = in.bytes > 0 ? in.bytes : 1;
        }
        hbm_[i] = in.base;
        break;
      }
      }
    }
    const uint8_t fill = poison ? 0xff : 0;
    // One SBUF and one PSUM per physical core of the logical core.
    for (int c = 0; c < std::min(target.physicalCores, kMaxPhysicalCores); ++c) {
      sbuf_[c] = acquire(target.partitions, target.sbufBytesPerPartition, fill);
      psum_[c] = acquire(target.partitions, target.psumBytesPerPartition, fill);
    }
  } catch (...) {
    for (Internal &in : internal_)
      std::free(in.base);
    for (int c = 0; c < kMaxPhysicalCores; ++c) {
      release(sbuf_[c]);
      release(psum_[c]);
    }
    throw;
  }
}

Memory::~Memory() {
  for (Internal &in : internal_) {
    if (in.capacity >= Internal::kGranule)
      tHbmCache.put(in.base, in.capacity);
    else
      std::free(in.base);
  }
  for (int c = 0; c < kMaxPhysicalCores; ++c) {
    release(sbuf_[c]);
    release(psum_[c]);
  }
}

Memory::OnChip Memory::acquire(int64_t partitions, int64_t partBytes,
                               uint8_t fill) {
  OnChip b;
  b.partBytes = partBytes;
  b.pitch = OnChip::pitchFor(partBytes);
  b.partitions = partitions;
  b.fill = fill;
  b.stale.assign(size_t((partBytes + OnChip::kGranule - 1) / OnChip::kGranule),
                 {0, 0});
  const int64_t bytes = partitions * b.pitch;
  for (CachedBlock &c : tCache.slot) {
    if (!c.base || c.bytes != bytes)
      continue;
    b.base = c.base;
    if (c.fill != fill || c.partBytes != partBytes || partitions > 128) {
      std::memset(b.base, fill, size_t(bytes));
    } else {
      // The old run's extent is stale; nothing is cleared yet.
      std::array<uint64_t, 2> mask = {0, 0};
      for (int64_t p = 0; p < c.partHi; ++p)
        mask[size_t(p / 64)] |= uint64_t(1) << (p % 64);
      const int64_t granules =
          (c.byteHi + OnChip::kGranule - 1) / OnChip::kGranule;
      if (mask[0] | mask[1])
        for (int64_t g = 0; g < granules; ++g)
          b.stale[size_t(g)] = mask;
      b.staleGranules = (mask[0] | mask[1]) ? granules : 0;
    }
    c = CachedBlock();
    return b;
  }
  b.base = allocate(bytes, fill != 0);
  return b;
}

void Memory::release(OnChip &b) {
  if (!b.base)
    return;
  CachedBlock *dst = nullptr;
  const int64_t bytes = b.partitions * b.pitch;
  for (CachedBlock &c : tCache.slot)
    if (!c.base) {
      dst = &c;
      break;
    }
  if (!dst) { // replace the block of another size, if any
    for (CachedBlock &c : tCache.slot)
      if (c.bytes != bytes) {
        dst = &c;
        break;
      }
  }
  if (!dst) {
    std::free(b.base);
  } else {
    std::free(dst->base);
    dst->base = b.base;
    dst->bytes = bytes;
    dst->partBytes = b.partBytes;
    // Stale granules this run never touched stay stale in the next one.
    int64_t partHi = b.partHi, byteHi = b.byteHi;
    for (size_t g = 0; g < b.stale.size(); ++g)
      for (int w = 0; w < 2; ++w)
        if (uint64_t m = b.stale[g][size_t(w)]) {
          partHi = std::max<int64_t>(partHi, w * 64 + 64 - __builtin_clzll(m));
          byteHi = std::max<int64_t>(byteHi, int64_t(g + 1) * OnChip::kGranule);
        }
    dst->partHi = std::min(partHi, b.partitions);
    dst->byteHi = std::min(byteHi, b.partBytes);
    dst->fill = b.fill;
  }
  b.base = nullptr;
}

namespace {

/// Whether dims[first..] of `ap` visit every element of one contiguous byte
/// range once: row-major, innermost stride 1.
bool denseFrom(const AccessPattern &ap, size_t first) {
  int64_t expect = 1;
  for (size_t i = ap.dims.size(); i-- > first;) {
    if (ap.dims[i][1] == 1)
      continue;
    if (ap.dims[i][0] != expect)
      return false;
    expect *= ap.dims[i][1];
  }
  return true;
}

/// The free dims (dims[1..], on chip) / all dims (HBM) are one contiguous range.
bool denseFree(const AccessPattern &ap) { return denseFrom(ap, 1); }
bool denseAll(const AccessPattern &ap) { return denseFrom(ap, 0); }

} // namespace

void Memory::touchHbm(const AccessPattern &ap, bool write) {
  Internal &in = internal_[size_t(internalOf_[ap.buffer])];
  const int64_t eb = dtypeSize(ap.dtype);
  int64_t lo = ap.offset * eb, hi = lo + eb;
  for (const auto &d : ap.dims) {
    const int64_t ext = d[0] * (d[1] - 1) * eb;
    (ext < 0 ? lo : hi) += ext;
  }
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, in.bytes);
  if (lo >= hi)
    return;
  const bool dense = write && denseAll(ap);
  const int64_t G = Internal::kGranule;
  for (int64_t g = lo / G; g <= (hi - 1) / G; ++g) {
    uint64_t &word = in.stale[size_t(g / 64)];
    const uint64_t bit = uint64_t(1) << (g % 64);
    if (!(word & bit))
      continue;
    const int64_t gLo = g * G, gHi = std::min(gLo + G, in.bytes);
    if (!(dense && lo <= gLo && gHi <= hi)) { // not overwritten entirely
      // A dense write overwrites [lo, hi): clear only the rest.
      const int64_t keepLo = dense ? std::max(lo, gLo) : gHi;
      const int64_t keepHi = dense ? std::min(hi, gHi) : gHi;
      std::memset(in.base + gLo, fill_, size_t(keepLo - gLo));
      if (keepHi < gHi)
        std::memset(in.base + keepHi, fill_, size_t(gHi - keepHi));
    }
    word &= ~bit;
    --in.staleGranules;
  }
}

void Memory::touch(const AccessPattern &ap, bool write) {
  if (ap.space == MemSpace::Hbm) {
    if (ap.buffer < internalOf_.size() && internalOf_[ap.buffer] >= 0 &&
        internal_[size_t(internalOf_[ap.buffer])].staleGranules > 0)
      touchHbm(ap, write);
    return;
  }
  OnChip &b = ap.space == MemSpace::Sbuf ? sbuf_[ap.core] : psum_[ap.core];
  const int64_t eb = dtypeSize(ap.dtype);
  int64_t lo = ap.offset, hi = ap.offset + eb;
  for (size_t i = 1; i < ap.dims.size(); ++i) {
    const int64_t ext = ap.dims[i][0] * (ap.dims[i][1] - 1) * eb;
    (ext < 0 ? lo : hi) += ext;
  }
  // The partitions touched: a stride of 0 (one partition read by all, a broadcast) touches
  // one, a negative stride the ones below p0.
  const int64_t p0 = ap.partition, pstride = ap.dims[0][0],
                parts = pstride == 0 ? 1 : ap.dims[0][1];
  const int64_t pLast = p0 + (parts - 1) * pstride;
  b.partHi = std::max(b.partHi, std::max(p0, pLast) + 1);
  b.byteHi = std::max(b.byteHi, hi);
  if (b.staleGranules == 0)
    return;

  std::array<uint64_t, 2> mask = {0, 0};
  for (int64_t k = 0, p = p0; k < parts; ++k, p += pstride)
    mask[size_t(p / 64)] |= uint64_t(1) << (p % 64);
  const bool dense = write && denseFree(ap);
  const int64_t G = OnChip::kGranule;
  for (int64_t g = lo / G; g <= (hi - 1) / G; ++g) {
    auto &st = b.stale[size_t(g)];
    const uint64_t m0 = st[0] & mask[0], m1 = st[1] & mask[1];
    if (!(m0 | m1))
      continue;
    const int64_t gLo = g * G, gHi = std::min(gLo + G, b.partBytes);
    if (!(dense && lo <= gLo && gHi <= hi)) { // not overwritten entirely
      // A dense write overwrites [lo, hi): clear only the rest of the granule.
      const int64_t keepLo = dense ? std::max(lo, gLo) : gHi;
      const int64_t keepHi = dense ? std::min(hi, gHi) : gHi;
      for (int w = 0; w < 2; ++w)
        for (uint64_t m = w ? m1 : m0; m; m &= m - 1) {
          const int64_t p = w * 64 + __builtin_ctzll(m);
          uint8_t *row = b.base + p * b.pitch;
          std::memset(row + gLo, b.fill, size_t(keepLo - gLo));
          if (keepHi < gHi)
            std::memset(row + keepHi, b.fill, size_t(gHi - keepHi));
        }
    }
    st[0] &= ~m0;
    st[1] &= ~m1;
    if (!(st[0] | st[1]))
      --b.staleGranules;
  }
}

void Memory::seedVectorRng(int core, uint64_t seed) {
  if (!rngStarted_)
    startRng();
  for (int p = 0; p < 128; ++p)
    for (int g = 0; g < 4; ++g)
      xorwowSeed(&vectorRng_[size_t(core)][size_t(p)][size_t(g * 6)],
                 rngKey(seed, int(Engine::Vector), core, p, g));
}

void Memory::startRng() {
  rngStarted_ = true;
  const uint64_t seed = rngSeed_;
  for (int c = 0; c < kMaxPhysicalCores; ++c) {
    seedVectorRng(c, seed);
    for (int p = 0; p < 128; ++p)
      xorwowSeed(gpsimdRng_[size_t(c)][size_t(p)].data(),
                 rngKey(seed, int(Engine::GpSimd), c, p, 0));
  }
}

void Memory::prepare(const Instruction &inst) {
  for (const AccessPattern &s : inst.srcs)
    touch(s, false); // reads first: an in-place op reads the old bytes
  // An accumulating matmul or scatter, a predicated copy, ... read dst before writing it.
  touch(inst.dst, !readsDst(inst));
}

View Memory::view(const AccessPattern &ap) const {
  switch (ap.space) {
  case MemSpace::Hbm:
    return View::make(hbm_[ap.buffer] + ap.offset * dtypeSize(ap.dtype),
                      ap.dtype, ap.dims, 0, false);
  case MemSpace::Sbuf:
  case MemSpace::Psum: {
    const OnChip &b = ap.space == MemSpace::Sbuf ? sbuf_[ap.core] : psum_[ap.core];
    return View::make(b.base + int64_t(ap.partition) * b.pitch + ap.offset,
                      ap.dtype, ap.dims, b.pitch, true);
  }
  }
  return View();
}

} // namespace neuron::runtime
