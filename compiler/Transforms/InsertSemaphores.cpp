// The neuron-insert-semaphores pass: cross-queue ordering from physical memory overlaps,
// loop bodies included.
//
// Every queue counts its completed instruction instances. Inside loops the count at an
// instruction is affine in the induction variables (each iteration of a loop adds the
// instances its body runs on that queue), so a wait is a base count plus loop terms.
//
// A loop body is visited twice: the accesses of the first visit stand for the previous
// iteration, so the second visit finds the loop-carried dependences (a tile rewritten
// by the next iteration, a rotating buffer N iterations back) as well as those inside
// one iteration. Work is linear in the number of ops times 2^(loop depth).
#include "compiler/Passes.h"
#include "dialects/Common/LoopTerms.h"
#include "dialects/NIsa/IR/NIsaOps.h"

#include <array>
#include <map>
#include <numeric>
#include <tuple>

using namespace mlir;
using neuron::ntile::MemSpace;

namespace neuron::compiler {
#define GEN_PASS_DEF_NEURONINSERTSEMAPHORES
#include "compiler/Passes.h.inc"

namespace {

/// Farthest loop-carried distance searched exactly (beyond it: the previous iteration).
constexpr int64_t kMaxDistance = 64;

/// base + sum coef[l] * iv[l] over loop levels.
struct Count {
  int64_t base = 0;
  SmallVector<int64_t, 4> coef; // per level
  int64_t at(size_t l) const { return l < coef.size() ? coef[l] : 0; }
};

/// A memory access of one static instruction, its region at iv = 0 and its loop terms.
struct Access {
  int queue;
  bool write;
  Count count;                  // the queue's count once this instance completes
  unsigned depth;               // loops around the instruction
  SmallVector<int64_t, 4> trips; // their counts
  SmallVector<Operation *, 4> loops;
  int carried;                  // level whose previous iteration this stands for, or -1
  bool hbm;
  uint32_t buffer;              // HBM buffer id
  int64_t pLo, pHi, bLo, bHi;   // partitions x bytes at iv = 0
  SmallVector<LoopTerm, 2> terms; // byte terms
};

/// Accesses are indexed by (space, buffer id or 0, byte bucket) so that a lookup scans
/// only the accesses near its own bytes. HBM buffers are one bucket each: in loop form a
/// buffer has few static accesses, but each may sweep all of it.
using MemoryKey = std::tuple<int, uint32_t, int64_t>;

constexpr int64_t kOnChipBucketBytes = 4096;

int64_t elementBytes(nisa::AccessPatternAttr ap) {
  return std::max<int64_t>(1, ap.getElementType().getIntOrFloatBitWidth() / 8);
}

/// Range of a term over its loop's iterations.
std::pair<int64_t, int64_t> termSpan(const LoopTerm &t, int64_t trips) {
  int64_t top = (t.modulus > 0 ? std::min(t.modulus, trips) : trips) - 1;
  return t.coef < 0 ? std::pair{t.coef * top, int64_t(0)} : std::pair{int64_t(0), t.coef * top};
}

class SemaphoreInserter {
public:
  explicit SemaphoreInserter(MLIRContext *ctx) : ctx(ctx) {}
  void run(Block &body) { visitBlock(body, /*setWaits=*/true); }

private:
  void visitBlock(Block &block, bool setWaits);
  void visitInstruction(nisa::InstructionOpInterface op, bool setWaits);
  Access describe(Operation *op, nisa::AccessPatternAttr ap, bool write, int q);
  SmallVector<MemoryKey> keysOf(const Access &a) const;
  std::optional<int64_t> distance(const Access &x, const Access &a, int level) const;
  bool mayOverlap(const Access &x, const Access &a, int level, int64_t d) const;
  void addWait(int queue, const Count &c);

  MLIRContext *ctx;
  std::map<MemoryKey, std::vector<Access>> history;
  /// Per queue: its count at the current point (levels of the current loop nest).
  Count counts[nisa::kNumQueues];
  SmallVector<Operation *, 4> loops;
  SmallVector<int64_t, 4> trips;
  /// > 0 while visiting the first (previous-iteration) pass of the loop at that level.
  SmallVector<bool, 4> firstPass;
  /// Per loop level: instances per queue of one iteration of its body.
  SmallVector<std::array<int64_t, nisa::kNumQueues>, 4> perIterations;
  /// Waits of the instruction being visited: queue -> counts.
  SmallVector<std::pair<int, Count>> waits;
};

/// Instances per queue that one visit of `block` runs.
void instancesPerQueue(Block &block, int64_t scale, int64_t (&out)[nisa::kNumQueues]) {
  for (Operation &op : block) {
    if (auto loop = dyn_cast<nisa::LoopOp>(op))
      instancesPerQueue(loop.getBody().front(), scale * loop.getCount(), out);
    else if (auto inst = dyn_cast<nisa::InstructionOpInterface>(op))
      out[inst.getQueueId()] += scale;
  }
}

void SemaphoreInserter::visitBlock(Block &block, bool setWaits) {
  for (Operation &op : block) {
    auto loop = dyn_cast<nisa::LoopOp>(op);
    if (!loop) {
      if (auto inst = dyn_cast<nisa::InstructionOpInterface>(op))
        visitInstruction(inst, setWaits);
      continue;
    }
    Block &body = loop.getBody().front();
    int64_t perIteration[nisa::kNumQueues] = {};
    instancesPerQueue(body, 1, perIteration);
    size_t level = loops.size();
    Count entry[nisa::kNumQueues];
    for (int q = 0; q < nisa::kNumQueues; ++q)
      entry[q] = counts[q];
    loops.push_back(loop);
    trips.push_back(loop.getCount());
    firstPass.push_back(true);
    perIterations.push_back({});
    std::copy(std::begin(perIteration), std::end(perIteration), perIterations.back().begin());
    // The previous iteration: its counts are one iteration lower.
    for (int q = 0; q < nisa::kNumQueues; ++q) {
      counts[q] = entry[q];
      counts[q].coef.resize(level + 1, 0);
      counts[q].coef[level] = perIteration[q];
      counts[q].base -= perIteration[q];
    }
    if (loop.getCount() > 1)
      visitBlock(body, /*setWaits=*/false);
    firstPass.back() = false;
    for (int q = 0; q < nisa::kNumQueues; ++q) {
      counts[q] = entry[q];
      counts[q].coef.resize(level + 1, 0);
      counts[q].coef[level] = perIteration[q];
    }
    visitBlock(body, setWaits);
    // The accesses of the previous iteration are ordered through the last one now.
    for (auto &[key, list] : history)
      llvm::erase_if(list, [&](const Access &a) { return a.carried == (int)level; });
    for (int q = 0; q < nisa::kNumQueues; ++q) {
      counts[q] = entry[q];
      counts[q].base += perIteration[q] * loop.getCount();
    }
    loops.pop_back();
    trips.pop_back();
    firstPass.pop_back();
    perIterations.pop_back();
  }
}

Access SemaphoreInserter::describe(Operation *op, nisa::AccessPatternAttr ap, bool write,
                                   int q) {
  Access a;
  a.queue = q;
  a.write = write;
  a.count = counts[q];
  a.depth = loops.size();
  a.trips = trips;
  a.loops = loops;
  a.carried = -1;
  // Only the outermost first pass counts: an inner first pass inside it stands for an
  // iteration of the same (previous) outer iteration, so its count goes back up.
  for (size_t l = 0; l < firstPass.size(); ++l) {
    if (!firstPass[l])
      continue;
    if (a.carried < 0)
      a.carried = l;
    else
      a.count.base += perIterations[l][q];
  }
  int64_t bytes = elementBytes(ap);
  a.hbm = ap.getSpace() == MemSpace::hbm;
  bool onChip = !a.hbm;
  int64_t lo = 0, hi = 0;
  for (size_t i = onChip ? 1 : 0; i < ap.getRank(); ++i) {
    int64_t span = ap.getStride(i) * (ap.getSize(i) - 1);
    (span < 0 ? lo : hi) += span;
  }
  if (a.hbm) {
    a.buffer = ap.getIndex();
    a.pLo = 0;
    a.pHi = 1;
    a.bLo = (ap.getOffset() + lo) * bytes;
    a.bHi = (ap.getOffset() + hi + 1) * bytes;
    for (const LoopTerm &t : unpackTerms(ap.getTerms()))
      a.terms.push_back({t.level, t.coef * bytes, t.modulus});
  } else {
    a.buffer = (uint32_t)ap.getSpace();
    int64_t p0 = ap.getIndex(), pSpan = ap.getStride(0) * (ap.getSize(0) - 1);
    a.pLo = p0 + std::min<int64_t>(0, pSpan);
    a.pHi = p0 + std::max<int64_t>(0, pSpan) + 1;
    a.bLo = ap.getOffset() + lo * bytes;
    a.bHi = ap.getOffset() + (hi + 1) * bytes;
    for (const LoopTerm &t : unpackTerms(ap.getTerms()))
      a.terms.push_back(t);
  }
  (void)op;
  return a;
}

SmallVector<MemoryKey> SemaphoreInserter::keysOf(const Access &a) const {
  int64_t lo = a.bLo, hi = a.bHi;
  for (const LoopTerm &t : a.terms) {
    auto [l, h] = termSpan(t, a.trips[t.level]);
    lo += l;
    hi += h;
  }
  if (a.hbm)
    return {{(int)MemSpace::hbm, a.buffer, 0}};
  SmallVector<MemoryKey> keys;
  for (int64_t b = lo / kOnChipBucketBytes; b <= (hi - 1) / kOnChipBucketBytes; ++b)
    keys.push_back({(int)a.buffer, 0, b});
  return keys;
}

/// Can `a`, `d` iterations of `level` back (all else the same iteration, its own inner
/// loops anywhere), touch bytes that `x` touches in some instance?
bool SemaphoreInserter::mayOverlap(const Access &x, const Access &a, int level, int64_t d) const {
  if (x.hbm != a.hbm || x.buffer != a.buffer || x.pHi <= a.pLo || a.pHi <= x.pLo)
    return false;
  // Levels where both sit in the same loop and run the same iteration.
  unsigned common = 0;
  while (common < x.depth && common < a.depth && x.loops[common] == a.loops[common])
    ++common;
  unsigned same = level >= 0 ? (unsigned)level : common;
  // diff = x offset - a offset, as [lo, hi].
  int64_t lo = 0, hi = 0;
  auto add = [&](const LoopTerm &t, int64_t trips, int sign) {
    auto [l, h] = termSpan(t, trips);
    if (sign > 0) {
      lo += l;
      hi += h;
    } else {
      lo -= h;
      hi -= l;
    }
  };
  SmallVector<bool, 4> matched(a.terms.size(), false);
  SmallVector<LoopTerm, 2> rotating; // matched rotating terms at `level`: exact per residue
  for (const LoopTerm &t : x.terms) {
    bool shared = t.level < (int64_t)same || t.level == level;
    int found = -1;
    if (shared)
      for (size_t j = 0; j < a.terms.size(); ++j)
        if (!matched[j] && a.terms[j].level == t.level && a.terms[j].coef == t.coef &&
            a.terms[j].modulus == t.modulus) {
          found = j;
          break;
        }
    if (found >= 0 && t.level < (int64_t)same) {
      matched[found] = true; // same iteration: the terms cancel
      continue;
    }
    if (found >= 0 && t.level == level) {
      matched[found] = true;
      if (t.modulus == 0) { // x at iv, a at iv - d
        lo += t.coef * d;
        hi += t.coef * d;
      } else if (d % t.modulus != 0) {
        rotating.push_back(t);
      }
      continue;
    }
    add(t, x.trips[t.level], +1);
  }
  for (size_t j = 0; j < a.terms.size(); ++j)
    if (!matched[j])
      add(a.terms[j], a.trips[a.terms[j].level], -1);
  // Overlap iff x.bLo + diff < a.bHi and a.bLo < x.bHi + diff for some diff.
  auto overlaps = [&](int64_t shift) {
    return lo + shift < a.bHi - x.bLo && hi + shift > a.bLo - x.bHi;
  };
  if (rotating.empty())
    return overlaps(0);
  // coef * ((iv mod N) - ((iv - d) mod N)) depends on iv mod N: try every residue of
  // the rotations' common period.
  int64_t period = 1;
  for (const LoopTerm &t : rotating)
    period = std::lcm(period, t.modulus);
  if (period > kMaxDistance)
    return true;
  for (int64_t r = 0; r < period; ++r) {
    int64_t shift = 0;
    for (const LoopTerm &t : rotating) {
      int64_t n = t.modulus;
      shift += t.coef * (r % n - (((r - d) % n) + n) % n);
    }
    if (overlaps(shift))
      return true;
  }
  return false;
}

/// The smallest distance (iterations of `level` back, 0 for the same iteration) at which
/// `a` conflicts with `x`, or nullopt.
std::optional<int64_t> SemaphoreInserter::distance(const Access &x, const Access &a,
                                                   int level) const {
  if (level < 0)
    return mayOverlap(x, a, -1, 0) ? std::optional<int64_t>(0) : std::nullopt;
  int64_t trips = x.trips[level];
  for (int64_t d = 1; d < trips && d <= kMaxDistance; ++d)
    if (mayOverlap(x, a, level, d))
      return d;
  if (trips - 1 > kMaxDistance && mayOverlap(x, a, level, kMaxDistance + 1))
    return 1; // not searched further: order after the previous iteration
  return std::nullopt;
}

void SemaphoreInserter::addWait(int queue, const Count &c) {
  for (auto &[q, existing] : waits)
    if (q == queue && existing.coef == c.coef) {
      existing.base = std::max(existing.base, c.base);
      return;
    }
  waits.push_back({queue, c});
}

void SemaphoreInserter::visitInstruction(nisa::InstructionOpInterface op, bool setWaits) {
  int q = op.getQueueId();
  counts[q].base += 1;
  waits.clear();

  auto depend = [&](const Access &x, const Access &a) {
    if (a.queue == q)
      return;
    unsigned common = 0;
    while (common < x.depth && common < a.depth && x.loops[common] == a.loops[common])
      ++common;
    int level = a.carried >= 0 && a.carried < (int)common ? a.carried : -1;
    std::optional<int64_t> d = distance(x, a, level);
    if (!d)
      return;
    // The most recent conflicting instance of `a`: the same iteration of the shared
    // loops above `level`, d iterations back at `level`, the last iteration below.
    Count c;
    c.base = a.count.base;
    unsigned keep = level >= 0 ? (unsigned)level : common;
    c.coef.assign(keep + (level >= 0 ? 1 : 0), 0);
    for (unsigned l = 0; l < a.depth; ++l) {
      int64_t coef = a.count.at(l);
      if (l < keep)
        c.coef[l] = coef;
      else if ((int)l == level) {
        c.coef[l] = coef;
        c.base -= coef * (*d - (a.carried == level ? 1 : 0));
      } else
        c.base += coef * (a.trips[l] - 1);
    }
    while (!c.coef.empty() && c.coef.back() == 0)
      c.coef.pop_back();
    addWait(a.queue, c);
  };

  std::vector<std::pair<MemoryKey, Access>> added;
  for (nisa::AccessPatternAttr ap : op.getReadPatterns()) {
    Access x = describe(op, ap, false, q);
    for (const MemoryKey &key : keysOf(x)) {
      for (const Access &a : history[key])
        if (a.write)
          depend(x, a);
      added.push_back({key, x});
    }
  }
  Access w = describe(op, op.getWritePattern(), true, q);
  for (const MemoryKey &key : keysOf(w)) {
    std::vector<Access> &list = history[key];
    for (const Access &a : list)
      depend(w, a);
    // Accesses the write covers in every iteration are ordered through it from now on.
    if (w.carried < 0)
      llvm::erase_if(list, [&](const Access &a) {
        return a.carried < 0 && a.hbm == w.hbm && a.buffer == w.buffer && a.terms.empty() &&
               w.terms.empty() && w.pLo <= a.pLo && a.pHi <= w.pHi && w.bLo <= a.bLo &&
               a.bHi <= w.bHi;
      });
    added.push_back({key, w});
  }
  for (auto &[key, access] : added)
    history[key].push_back(access);

  if (!setWaits)
    return;
  SmallVector<int32_t> flat;
  SmallVector<int64_t> terms;
  std::stable_sort(waits.begin(), waits.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto &[queue, c] : waits) {
    if (c.coef.empty() && c.base <= 0)
      continue; // satisfied before the program starts
    int64_t index = flat.size() / 2;
    flat.append({queue, (int32_t)c.base});
    for (size_t l = 0; l < c.coef.size(); ++l)
      if (c.coef[l])
        terms.append({index, (int64_t)l, c.coef[l], 0});
  }
  if (!flat.empty())
    op->setAttr("waits", DenseI32ArrayAttr::get(ctx, flat));
  else
    op->removeAttr("waits");
  if (!terms.empty())
    op->setAttr("wait_terms", DenseI64ArrayAttr::get(ctx, terms));
  else
    op->removeAttr("wait_terms");
}

struct NeuronInsertSemaphoresPass
    : impl::NeuronInsertSemaphoresBase<NeuronInsertSemaphoresPass> {
  void runOnOperation() override {
    SemaphoreInserter(&getContext()).run(getOperation().getBody().front());
  }
};

} // namespace
} // namespace neuron::compiler
