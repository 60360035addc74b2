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
/// Most combinations of loop iterations compared exactly per pair of accesses.
constexpr int64_t kMaxLatticePoints = 4096;

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
  uint32_t buffer;              // HBM buffer id, or on chip the space and physical core
  int64_t pLo, pHi, bLo, bHi;   // partitions x bytes at iv = 0
  SmallVector<LoopTerm, 2> terms; // byte terms
  int64_t start;                // byte of the first element at iv = 0
  int64_t elementBytes;
  SmallVector<std::pair<int64_t, int64_t>, 3> dims; // byte dims: (stride, size)
};

/// Could `x` shifted by `delta` bytes touch a byte that `a` touches? Exact when both have
/// the same nested dimensions (each stride at least the extent of the dimensions inside
/// it, like the rows of a tile); otherwise compares the byte ranges.
bool overlapsShifted(const Access &x, const Access &a, int64_t delta) {
  int64_t lo = x.bLo + delta, hi = x.bHi + delta;
  if (lo >= a.bHi || a.bLo >= hi)
    return false;
  if (x.dims != a.dims || x.elementBytes != a.elementBytes)
    return true;
  // Nested: dims sorted by stride, each stride beyond the extent inside it.
  SmallVector<std::pair<int64_t, int64_t>, 3> dims(x.dims);
  llvm::sort(dims, [](auto l, auto r) { return std::abs(l.first) > std::abs(r.first); });
  SmallVector<int64_t, 3> inner(dims.size() + 1, x.elementBytes);
  for (int64_t k = dims.size() - 1; k >= 0; --k)
    inner[k] = inner[k + 1] + std::abs(dims[k].first) * (dims[k].second - 1);
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k].second > 1 && std::abs(dims[k].first) < inner[k + 1])
      return true;
  // Element positions differ by d = delta + start difference: decompose it dim by dim.
  std::function<bool(size_t, int64_t)> hit = [&](size_t k, int64_t d) {
    if (k == dims.size())
      return std::abs(d) < x.elementBytes;
    auto [stride, size] = dims[k];
    if (size == 1 || stride == 0)
      return hit(k + 1, d);
    int64_t s = std::abs(stride), q = d >= 0 ? d / s : -((-d) / s);
    for (int64_t c : {q - 1, q, q + 1})
      if (std::abs(c) < size && hit(k + 1, d - c * s))
        return true;
    return false;
  };
  return hit(0, x.start + delta - a.start);
}

/// On-chip Access::buffer values per physical core (the memory spaces fit below it).
constexpr uint32_t kOnChipPerCore = 8;

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
  Access describe(nisa::AccessPatternAttr ap, bool write, int q);
  SmallVector<MemoryKey> keysOf(const Access &a) const;
  std::optional<int64_t> distance(const Access &x, const Access &a, int level) const;
  bool mayOverlap(const Access &x, const Access &a, int level, int64_t d,
                  int later = -1, int64_t gap = 0) const;
  void addWait(int queue, const Count &c);
  bool dominates(const Count &a, const Count &b) const;

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

Access SemaphoreInserter::describe(nisa::AccessPatternAttr ap, bool write, int q) {
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
  a.elementBytes = bytes;
  for (size_t i = onChip ? 1 : 0; i < ap.getRank(); ++i)
    a.dims.push_back({ap.getStride(i) * bytes, ap.getSize(i)});
  if (a.hbm) {
    a.buffer = ap.getIndex();
    a.pLo = 0;
    a.pHi = 1;
    a.start = ap.getOffset() * bytes;
    a.bLo = (ap.getOffset() + lo) * bytes;
    a.bHi = (ap.getOffset() + hi + 1) * bytes;
    for (const LoopTerm &t : unpackTerms(ap.getTerms()))
      a.terms.push_back({t.level, t.coef * bytes, t.modulus});
  } else {
    // Each physical core has its own SBUF and PSUM.
    a.buffer = (uint32_t)ap.getSpace() + kOnChipPerCore * ap.getCore();
    int64_t p0 = ap.getIndex(), pSpan = ap.getStride(0) * (ap.getSize(0) - 1);
    a.pLo = p0 + std::min<int64_t>(0, pSpan);
    a.pHi = p0 + std::max<int64_t>(0, pSpan) + 1;
    a.start = ap.getOffset();
    a.bLo = ap.getOffset() + lo * bytes;
    a.bHi = ap.getOffset() + (hi + 1) * bytes;
    for (const LoopTerm &t : unpackTerms(ap.getTerms()))
      a.terms.push_back(t);
  }
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
///
/// The byte shift between the two, x offset - a offset, is a constant plus a lattice of
/// loop terms: terms of loops both share in the same iteration cancel, the carried level
/// shifts by coef * d, and every other term ranges over its loop. Small lattices are
/// enumerated exactly; large ones are bounded by their range.
///
/// With `later` (a shared loop below `level`): only instances of `a` in a later iteration
/// of that loop than `x`'s, more than `gap` iterations later. The terms of that loop must
/// pair up between `x` and `a` (else: true); their shifts are enumerated over the pairs of
/// iterations when the loop is short (rotating buffers included), else bounded.
bool SemaphoreInserter::mayOverlap(const Access &x, const Access &a, int level, int64_t d,
                                   int later, int64_t gap) const {
  if (x.hbm != a.hbm || x.buffer != a.buffer || x.pHi <= a.pLo || a.pHi <= x.pLo)
    return false;
  unsigned common = 0;
  while (common < x.depth && common < a.depth && x.loops[common] == a.loops[common])
    ++common;
  unsigned same = level >= 0 ? (unsigned)level : common;
  int64_t shift = 0;
  // Lattice dims: coef * i for i in [lo, hi].
  struct Axis {
    int64_t coef, lo, hi;
  };
  SmallVector<Axis, 6> axes;
  auto range = [&](const LoopTerm &t, int64_t trips) {
    return (t.modulus > 0 ? std::min(t.modulus, trips) : trips) - 1;
  };
  SmallVector<bool, 4> matched(a.terms.size(), false);
  SmallVector<LoopTerm, 2> rotating; // matched rotating terms at `level`: exact per residue
  // Shifts of the `later` loop's terms over x's iteration i and a's j >= i + gap + 1,
  // enumerated when the loop is short enough (empty otherwise: handled term by term).
  SmallVector<int64_t, 8> laterShifts;
  bool laterEnumerated = false;
  auto rotatesIn = [&](const Access &acc) {
    return llvm::any_of(acc.terms, [&](const LoopTerm &t) {
      return t.level == later && t.modulus > 0 && t.modulus < x.trips[later];
    });
  };
  if (later >= 0 && x.trips[later] <= kMaxDistance && (rotatesIn(x) || rotatesIn(a))) {
    SmallVector<LoopTerm, 2> xs, as;
    for (const LoopTerm &t : x.terms)
      if (t.level == later)
        xs.push_back(t);
    for (const LoopTerm &t : a.terms)
      if (t.level == later)
        as.push_back(t);
    auto key = [](const LoopTerm &t) { return std::tuple(t.coef, t.modulus); };
    auto byKey = [&](const LoopTerm &l, const LoopTerm &r) { return key(l) < key(r); };
    llvm::sort(xs, byKey);
    llvm::sort(as, byKey);
    bool paired = xs.size() == as.size();
    for (size_t k = 0; paired && k < xs.size(); ++k)
      paired = key(xs[k]) == key(as[k]);
    if (!paired)
      return true; // a term moves with that loop in one of them only: not ordered by it
    int64_t n = x.trips[later];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + gap + 1; j < n; ++j) {
        int64_t sh = 0;
        for (const LoopTerm &t : xs)
          sh += t.modulus > 0 ? t.coef * (i % t.modulus - j % t.modulus) : t.coef * (i - j);
        laterShifts.push_back(sh);
      }
    if (laterShifts.empty())
      return false; // no later iteration
    llvm::sort(laterShifts);
    laterShifts.erase(std::unique(laterShifts.begin(), laterShifts.end()), laterShifts.end());
    laterEnumerated = true;
    for (size_t j = 0; j < a.terms.size(); ++j)
      if (a.terms[j].level == later)
        matched[j] = true;
  }
  for (const LoopTerm &t : x.terms) {
    if (laterEnumerated && t.level == later)
      continue; // in laterShifts
    int found = -1;
    for (size_t j = 0; j < a.terms.size(); ++j)
      if (!matched[j] && a.terms[j].level == t.level && a.terms[j].coef == t.coef &&
          a.terms[j].modulus == t.modulus) {
        found = j;
        break;
      }
    if (found < 0 && t.level < (int64_t)same) {
      // Same iteration, another coefficient of the same iv (mod the same modulus): one
      // axis of the difference (a slot rotating against its pair: c * (iv mod 2) and
      // c - c * (iv mod 2) never meet).
      for (size_t j = 0; j < a.terms.size() && found < 0; ++j)
        if (!matched[j] && a.terms[j].level == t.level && a.terms[j].modulus == t.modulus)
          found = j;
      if (found >= 0) {
        matched[found] = true;
        axes.push_back({t.coef - a.terms[found].coef, 0, range(t, x.trips[t.level])});
        continue;
      }
    }
    if (found >= 0)
      matched[found] = true;
    if (found >= 0 && t.level < (int64_t)same)
      continue; // same iteration: the terms cancel
    if (found >= 0 && t.level == level) {
      if (t.modulus == 0) // x at iv, a at iv - d
        shift += t.coef * d;
      else if (d % t.modulus != 0)
        rotating.push_back(t);
      continue;
    }
    if (found >= 0) { // independent iterations: x's i minus a's j
      // Loops below the common ones may differ (two nests, such as the halves of a
      // nest split over physical cores) and with them the trip counts.
      int64_t nx = range(t, x.trips[t.level]), na = range(a.terms[found], a.trips[t.level]);
      if (t.level == later) {
        if (t.modulus > 0 && t.modulus < x.trips[t.level])
          return true; // residues do not order the iterations
        if (na < gap + 1)
          return false; // no later iteration
        axes.push_back({t.coef, -na, -(gap + 1)}); // i - j <= -(gap + 1)
        continue;
      }
      axes.push_back({t.coef, -na, nx});
      continue;
    }
    if (t.level == later)
      return true; // only x moves with that loop: not ordered by it
    axes.push_back({t.coef, 0, range(t, x.trips[t.level])});
  }
  for (size_t j = 0; j < a.terms.size(); ++j)
    if (!matched[j]) {
      if (a.terms[j].level == later)
        return true;
      axes.push_back({-a.terms[j].coef, 0, range(a.terms[j], a.trips[a.terms[j].level])});
    }
  // coef * ((iv mod N) - ((iv - d) mod N)) depends on iv mod N: one shift per residue.
  int64_t period = 1;
  for (const LoopTerm &t : rotating)
    period = std::lcm(period, t.modulus);
  SmallVector<int64_t, 4> residueShifts;
  if (period > kMaxDistance) {
    for (const LoopTerm &t : rotating) // bounded instead
      axes.push_back({t.coef, -(t.modulus - 1), t.modulus - 1});
    residueShifts.push_back(0);
  } else {
    for (int64_t r = 0; r < period; ++r) {
      int64_t sh = 0;
      for (const LoopTerm &t : rotating)
        sh += t.coef * (r % t.modulus - (((r - d) % t.modulus) + t.modulus) % t.modulus);
      residueShifts.push_back(sh);
    }
  }
  if (laterEnumerated) {
    SmallVector<int64_t, 4> combined;
    for (int64_t r : residueShifts)
      for (int64_t l : laterShifts)
        combined.push_back(r + l);
    if ((int64_t)combined.size() > kMaxLatticePoints)
      return true;
    residueShifts = std::move(combined);
  }
  int64_t points = residueShifts.size();
  for (const Axis &axis : axes)
    points = std::min<int64_t>(points * (axis.hi - axis.lo + 1), kMaxLatticePoints + 1);
  if (points > kMaxLatticePoints) {
    // Too many to enumerate: the range of the shift.
    int64_t lo = shift, hi = shift;
    for (const Axis &axis : axes) {
      lo += std::min(axis.coef * axis.lo, axis.coef * axis.hi);
      hi += std::max(axis.coef * axis.lo, axis.coef * axis.hi);
    }
    int64_t rlo = *llvm::min_element(residueShifts), rhi = *llvm::max_element(residueShifts);
    return lo + rlo < a.bHi - x.bLo && hi + rhi > a.bLo - x.bHi;
  }
  // Branch and bound: the shifts the axes from k on can still add, as a range.
  SmallVector<int64_t, 6> restLo(axes.size() + 1, 0), restHi(axes.size() + 1, 0);
  for (int64_t k = axes.size() - 1; k >= 0; --k) {
    int64_t a0 = axes[k].coef * axes[k].lo, a1 = axes[k].coef * axes[k].hi;
    restLo[k] = restLo[k + 1] + std::min(a0, a1);
    restHi[k] = restHi[k + 1] + std::max(a0, a1);
  }
  std::function<bool(size_t, int64_t)> any = [&](size_t k, int64_t delta) {
    if (delta + restLo[k] >= a.bHi - x.bLo || delta + restHi[k] <= a.bLo - x.bHi)
      return false; // no combination of the rest reaches an overlap of the byte ranges
    if (k == axes.size())
      return overlapsShifted(x, a, delta);
    for (int64_t i = axes[k].lo; i <= axes[k].hi; ++i)
      if (any(k + 1, delta + axes[k].coef * i))
        return true;
    return false;
  };
  for (int64_t residue : residueShifts)
    if (any(0, shift + residue))
      return true;
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

/// Is `a` >= `b` in every iteration of the current loops?
bool SemaphoreInserter::dominates(const Count &a, const Count &b) const {
  int64_t least = a.base - b.base;
  for (size_t l = 0; l < std::max(a.coef.size(), b.coef.size()); ++l) {
    int64_t coef = a.at(l) - b.at(l), top = l < trips.size() ? trips[l] - 1 : 0;
    least += std::min<int64_t>(0, coef * top);
  }
  return least >= 0;
}

/// Keeps one wait per queue where one count covers the other in every iteration.
void SemaphoreInserter::addWait(int queue, const Count &c) {
  for (auto &[q, existing] : waits) {
    if (q != queue)
      continue;
    if (dominates(existing, c))
      return;
    if (dominates(c, existing)) {
      existing = c;
      return;
    }
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
    // A carried dependence waits for the same iteration of the shared loops below `level`
    // as long as no later iteration of them conflicts (a rotating buffer of an inner loop).
    // At the first shared loop below `level` where later iterations conflict too, it
    // waits for the iteration `gap` later when none beyond conflicts (a buffer rotating in
    // that loop: the instance one rotation back, across the boundary of `level`).
    unsigned keep = level >= 0 ? (unsigned)level : common;
    unsigned sameBelow = keep + 1;
    int64_t gap = 0;
    if (level >= 0) {
      while (sameBelow < common && !mayOverlap(x, a, level, *d, (int)sameBelow))
        ++sameBelow;
      // The smallest such gap (none conflicts beyond it, nor beyond a larger one).
      int64_t n = sameBelow < common ? x.trips[sameBelow] : 0;
      if (n > 2 && n <= kMaxDistance && !mayOverlap(x, a, level, *d, (int)sameBelow, n - 2)) {
        int64_t lo = 1, hi = n - 2;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (mayOverlap(x, a, level, *d, (int)sameBelow, mid))
            lo = mid + 1;
          else
            hi = mid;
        }
        gap = lo;
      }
    }
    Count c;
    c.base = a.count.base;
    c.coef.assign(level >= 0 ? sameBelow + (gap > 0) : keep, 0);
    for (unsigned l = 0; l < a.depth; ++l) {
      int64_t coef = a.count.at(l);
      if (gap > 0 && l == sameBelow) {
        c.coef[l] = coef;
        c.base += coef * gap;
      } else if (l < keep || (level >= 0 && (int)l > level && l < sameBelow))
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
    Access x = describe(ap, false, q);
    for (const MemoryKey &key : keysOf(x)) {
      for (const Access &a : history[key])
        if (a.write)
          depend(x, a);
      added.push_back({key, x});
    }
  }
  // The written patterns: dst, an activation's row sums, a generic instruction's reduce result.
  SmallVector<nisa::AccessPatternAttr, 2> writes = {op.getWritePattern()};
  if (auto act = dyn_cast<nisa::ActivationOp>(op.getOperation()); act && act.getAccumPattern())
    writes.push_back(act.getAccumPattern());
  if (auto inst = dyn_cast<nisa::InstOp>(op.getOperation()))
    writes.append(inst.getExtraWritePatterns());
  for (nisa::AccessPatternAttr written : writes) {
    Access w = describe(written, true, q);
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
