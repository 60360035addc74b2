// The neuron-insert-semaphores pass: cross-queue ordering from physical memory overlaps.
#include "compiler/Passes.h"
#include "dialects/NIsa/IR/NIsaOps.h"

#include <map>
#include <tuple>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONINSERTSEMAPHORES
#include "compiler/Passes.h.inc"

namespace {

/// The bounding box an access pattern touches: partitions x bytes (HBM: one
/// "partition", bytes of the buffer).
struct Region {
  int64_t pLo, pHi, bLo, bHi;
  bool overlaps(const Region &o) const {
    return pLo < o.pHi && o.pLo < pHi && bLo < o.bHi && o.bLo < bHi;
  }
  bool covers(const Region &o) const {
    return pLo <= o.pLo && o.pHi <= pHi && bLo <= o.bLo && o.bHi <= bHi;
  }
};

struct Access {
  Region region;
  int queue;
  int32_t count; // the queue's completion count once this access is done
  bool write;
};

/// Accesses are indexed by (space, buffer id or 0, byte bucket) so that a lookup scans
/// only the accesses near its own bytes: programs reuse SBUF addresses many thousands of
/// times, and one list per memory would make the pass quadratic.
using MemoryKey = std::tuple<int, uint32_t, int64_t>;

/// Bucket sizes in bytes: about a tile for on-chip memory, larger for HBM buffers.
int64_t bucketBytes(MemSpace space) { return space == MemSpace::hbm ? (1 << 20) : 4096; }

SmallVector<MemoryKey> keysOf(nisa::AccessPatternAttr ap, const Region &r) {
  int64_t size = bucketBytes(ap.getSpace());
  uint32_t buffer = ap.getSpace() == MemSpace::hbm ? ap.getIndex() : 0;
  SmallVector<MemoryKey> keys;
  for (int64_t b = r.bLo / size; b <= (r.bHi - 1) / size; ++b)
    keys.push_back({(int)ap.getSpace(), buffer, b});
  return keys;
}

Region regionOf(nisa::AccessPatternAttr ap) {
  int64_t bytes = std::max<int64_t>(1, ap.getElementType().getIntOrFloatBitWidth() / 8);
  bool onChip = ap.getSpace() != MemSpace::hbm;
  size_t firstFree = onChip ? 1 : 0;
  int64_t lo = 0, hi = 0;
  for (size_t i = firstFree; i < ap.getRank(); ++i) {
    int64_t span = ap.getStride(i) * (ap.getSize(i) - 1);
    (span < 0 ? lo : hi) += span;
  }
  if (!onChip)
    return {0, 1, (ap.getOffset() + lo) * bytes, (ap.getOffset() + hi + 1) * bytes};
  int64_t p0 = ap.getIndex(), pSpan = ap.getStride(0) * (ap.getSize(0) - 1);
  return {p0 + std::min<int64_t>(0, pSpan), p0 + std::max<int64_t>(0, pSpan) + 1,
          ap.getOffset() + lo * bytes, ap.getOffset() + (hi + 1) * bytes};
}

struct NeuronInsertSemaphoresPass
    : impl::NeuronInsertSemaphoresBase<NeuronInsertSemaphoresPass> {
  void runOnOperation() override {
    std::map<MemoryKey, std::vector<Access>> history;
    int32_t completed[nisa::kNumQueues] = {};
    for (Operation &op : getOperation().getBody().front()) {
      if (!nisa::isInstruction(&op))
        continue;
      int q = nisa::getQueue(&op);
      int32_t need[nisa::kNumQueues] = {};
      auto depend = [&](const Access &a) {
        if (a.queue != q)
          need[a.queue] = std::max(need[a.queue], a.count);
      };
      int32_t count = ++completed[q];
      SmallVector<std::pair<MemoryKey, Access>> added;
      for (nisa::AccessPatternAttr ap : nisa::getReads(&op)) {
        Region r = regionOf(ap);
        for (const MemoryKey &key : keysOf(ap, r)) {
          for (const Access &a : history[key])
            if (a.write && a.region.overlaps(r))
              depend(a);
          added.push_back({key, Access{r, q, count, false}});
        }
      }
      nisa::AccessPatternAttr dst = nisa::getWrite(&op);
      Region w = regionOf(dst);
      for (const MemoryKey &key : keysOf(dst, w)) {
        std::vector<Access> &list = history[key];
        for (const Access &a : list)
          if (a.region.overlaps(w))
            depend(a);
        // Accesses the write fully covers are ordered through it from now on.
        llvm::erase_if(list, [&](const Access &a) { return w.covers(a.region); });
        added.push_back({key, Access{w, q, count, true}});
      }
      for (auto &[key, access] : added)
        history[key].push_back(access);

      SmallVector<int32_t> waits;
      for (int other = 0; other < nisa::kNumQueues; ++other)
        if (need[other])
          waits.append({other, need[other]});
      if (!waits.empty())
        op.setAttr("waits", DenseI32ArrayAttr::get(&getContext(), waits));
      else
        op.removeAttr("waits");
    }
  }
};

} // namespace
} // namespace neuron::compiler
