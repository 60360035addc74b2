// Hazard detection (see Hazards.h).
#include "runtime/simulator/Hazards.h"

#include "runtime/program/Isa.h"
#include "runtime/program/Loops.h"
#include "runtime/simulator/Checks.h"
#include "runtime/simulator/Simulator.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <utility>

namespace neuron::runtime {

namespace {

constexpr uint32_t kNever = UINT32_MAX;    // no instruction wrote the byte
constexpr uint32_t kInitial = UINT32_MAX - 1; // holds the run's initial data
constexpr uint16_t kNoQueue = UINT16_MAX;
constexpr uint8_t kExactRead = UINT8_MAX; // Read::footprint of an exact record

/// Reads with more runs than this are "strided": recorded per range they
/// touch instead of splitting ranges at every run (a transposing read would
/// cut a buffer's shadow into element-sized pieces).
constexpr size_t kSplitRuns = 64;

/// Footprints with more runs than this are checked as their bounding range:
/// conservative (it may report a conflict between interleaved accesses that
/// touch different bytes), but bounded in cost.
constexpr size_t kMaxRuns = size_t(1) << 14;

/// Byte ranges [lo, hi), sorted, disjoint and not adjacent.
using Runs = std::vector<std::pair<int64_t, int64_t>>;

/// The bytes of `dims` (strides in elements of `elem` bytes) from offset 0.
Runs byteRuns(const std::vector<std::array<int64_t, 2>> &dims, size_t first,
              int64_t elem) {
  // The innermost dim is one run if its stride is one element.
  size_t outerEnd = dims.size();
  int64_t runBytes = elem;
  if (outerEnd > first && dims[outerEnd - 1][0] == 1) {
    runBytes = dims[outerEnd - 1][1] * elem;
    --outerEnd;
  }
  int64_t count = 1;
  for (size_t d = first; d < outerEnd; ++d)
    count *= std::max<int64_t>(dims[d][1], 0);
  for (size_t d = first; d < dims.size(); ++d)
    if (dims[d][1] <= 0)
      return {};
  Runs runs;
  if (count > int64_t(kMaxRuns)) { // the bounding range
    int64_t lo = 0, hi = 0;
    for (size_t d = first; d < dims.size(); ++d) {
      const int64_t span = dims[d][0] * (dims[d][1] - 1) * elem;
      (span < 0 ? lo : hi) += span;
    }
    runs.push_back({lo, hi + (outerEnd < dims.size() ? runBytes : elem)});
    return runs;
  }
  runs.reserve(size_t(count));
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t at = 0;
    for (size_t d = first; d < outerEnd; ++d)
      at += idx[d] * dims[d][0] * elem;
    runs.push_back({at, at + runBytes});
    for (size_t d = outerEnd; d-- > first;) { // next index, row-major
      if (++idx[d] < dims[d][1])
        break;
      idx[d] = 0;
    }
  }
  std::sort(runs.begin(), runs.end());
  Runs merged;
  for (const auto &r : runs) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

std::string fmtNs(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ns);
  return buf;
}

} // namespace

/// One operand of an instruction: its partitions and byte runs relative to
/// the operand's offset in the first loop iteration.
struct HazardDetector::Footprint {
  MemSpace space = MemSpace::Hbm;
  uint32_t buffer = 0;
  bool write = false;
  int64_t partLo = 0, partStep = 1, partCount = 1; // on-chip only
  int64_t elem = 1;          // bytes per element
  int64_t offset = 0;        // base offset (bytes on chip, elements in HBM)
  const std::vector<LoopTerm> *terms = nullptr;
  int operand = -1;          // the instruction's dst (-1) or srcs[operand]
  Runs runs;
  bool strided = false;      // a read of more than kSplitRuns runs

  /// Whether it touches a byte of `o`, at byte shifts `shift` and `oShift`.
  bool overlaps(int64_t shift, const Footprint &o, int64_t oShift) const {
    if (space != o.space || buffer != o.buffer)
      return false;
    bool part = false;
    for (int64_t k = 0; k < partCount && !part; ++k) {
      const int64_t p = partLo + k * partStep - o.partLo;
      part = o.partStep == 0 ? p == 0
                             : p % o.partStep == 0 && p / o.partStep >= 0 &&
                                   p / o.partStep < o.partCount;
    }
    if (!part)
      return false;
    size_t i = 0, j = 0;
    while (i < runs.size() && j < o.runs.size()) {
      const int64_t lo = std::max(runs[i].first + shift, o.runs[j].first + oShift);
      const int64_t hi = std::min(runs[i].second + shift, o.runs[j].second + oShift);
      if (lo < hi)
        return true;
      if (runs[i].second + shift < o.runs[j].second + oShift)
        ++i;
      else
        ++j;
    }
    return false;
  }
};

/// A read recorded in a Cell. A strided read (Footprint::strided) is
/// recorded on every range it touches any byte of; `footprint` and `shift`
/// identify its bytes exactly, to confirm a conflict with a later write.
struct Read {
  double end = 0;
  uint32_t inst = kNever;
  uint16_t queue = kNoQueue;
  uint8_t footprint = kExactRead; // index into the reader's footprints
  int64_t shift = 0;
};

/// The last write and recent reads of a byte range in one partition.
struct Cell {
  double writeEnd = 0;
  uint32_t writer = kNever;
  uint16_t writeQueue = kNoQueue;
  // Since the last write: the latest read, and the latest on a queue other
  // than read[0]'s (so that one on a queue other than any given one is known).
  Read read[2];

  /// The latest read since the last write on a queue other than `q`, or null.
  const Read *otherRead(uint16_t q) const {
    for (const Read &r : read)
      if (r.inst != kNever && r.queue != q)
        return &r;
    return nullptr;
  }
  void addRead(const Read &r) {
    if (read[0].inst == kNever || r.queue == read[0].queue) {
      if (read[0].inst == kNever || r.end >= read[0].end)
        read[0] = r;
    } else if (r.end >= read[0].end) { // the old latest is on another queue
      read[1] = read[0];
      read[0] = r;
    } else if (read[1].inst == kNever || r.end >= read[1].end) {
      read[1] = r;
    }
  }
  void setWrite(uint32_t inst, uint16_t q, double end) {
    *this = Cell();
    writer = inst, writeQueue = q, writeEnd = end;
  }
};

/// Shadow state of one memory: byte ranges (within a partition) mapped to
/// one Cell per partition.
struct HazardDetector::Shadow {
  MemSpace space;
  uint32_t buffer;
  int64_t partitions;
  struct Segment {
    int64_t hi;
    std::vector<Cell> cells; // per partition
  };
  std::map<int64_t, Segment> segments; // by low byte

  Shadow(MemSpace s, uint32_t b, int64_t parts, int64_t bytes, uint32_t init)
      : space(s), buffer(b), partitions(parts) {
    Cell c;
    c.writer = init;
    segments.emplace(0, Segment{bytes, std::vector<Cell>(size_t(parts), c)});
  }

  /// The segment starting at `at` (splitting the one containing it); end()
  /// if `at` is at or past the last byte.
  std::map<int64_t, Segment>::iterator splitAt(int64_t at) {
    auto it = segments.upper_bound(at);
    if (it == segments.begin())
      return it; // before the first byte (cannot happen for checked programs)
    auto prev = std::prev(it);
    if (prev->first == at)
      return prev;
    if (at >= prev->second.hi)
      return it;
    Segment tail{prev->second.hi, prev->second.cells};
    prev->second.hi = at;
    return segments.emplace_hint(it, at, std::move(tail));
  }
};

HazardDetector::HazardDetector(const Program &program, const Target &target)
    : prog_(program), footprints_(program.instructions.size()),
      prepared_(program.instructions.size(), false),
      hbm_(program.buffers.size()) {
  // On-chip shadows are per physical core (Footprint::buffer is the core).
  for (int c = 0; c < std::min(target.physicalCores, kMaxPhysicalCores); ++c) {
    sbuf_[c] = std::make_unique<Shadow>(MemSpace::Sbuf, c, target.partitions,
                                        target.sbufBytesPerPartition, kNever);
    psum_[c] = std::make_unique<Shadow>(MemSpace::Psum, c, target.partitions,
                                        target.psumBytesPerPartition, kNever);
  }
  // Only HBM buffers that some instruction writes can have a hazard.
  for (const Instruction &inst : program.instructions) {
    const AccessPattern &d = inst.dst;
    if (d.space == MemSpace::Hbm && d.buffer < hbm_.size() && !hbm_[d.buffer])
      hbm_[d.buffer] = std::make_unique<Shadow>(
          MemSpace::Hbm, d.buffer, 1, program.buffers[d.buffer].numBytes(),
          kInitial);
  }
}

HazardDetector::~HazardDetector() = default;

const std::vector<HazardDetector::Footprint> &
HazardDetector::footprints(size_t index) {
  std::vector<Footprint> &fps = footprints_[index];
  if (prepared_[index])
    return fps;
  prepared_[index] = true;
  const Instruction &inst = prog_.instructions[index];
  auto add = [&](const AccessPattern &ap, int operand, bool write) {
    if (ap.space == MemSpace::Hbm && (ap.buffer >= hbm_.size() || !hbm_[ap.buffer]))
      return; // a buffer nothing writes: no hazard, and no runs to enumerate
    Footprint f;
    f.space = ap.space;
    f.buffer = ap.space == MemSpace::Hbm ? ap.buffer : ap.core;
    f.write = write;
    f.elem = dtypeSize(ap.dtype);
    f.offset = ap.offset;
    f.terms = &ap.offsetTerms;
    f.operand = operand;
    if (ap.space == MemSpace::Hbm) {
      f.runs = byteRuns(ap.dims, 0, f.elem);
    } else {
      if (ap.dims.empty())
        return;
      f.partLo = ap.partition;
      f.partStep = ap.dims[0][0];
      f.partCount = ap.dims[0][1];
      if (f.partStep == 0)
        f.partCount = std::min<int64_t>(f.partCount, 1);
      f.runs = byteRuns(ap.dims, 1, f.elem);
    }
    f.strided = !write && f.runs.size() > kSplitRuns;
    if (!f.runs.empty() && f.partCount > 0)
      fps.push_back(std::move(f));
  };
  // Reads first: an instruction may read what it overwrites.
  const bool rowSums = writesLastSource(inst);
  for (size_t k = 0; k < inst.srcs.size() - (rowSums ? 1 : 0); ++k)
    add(inst.srcs[k], int(k), false);
  if (rowSums) // activation's row sums, a reduce result: a second output
    add(inst.srcs.back(), int(inst.srcs.size()) - 1, true);
  if (!dstIsOperand(inst.opcode)) // register_alloc / move / load, core_barrier
    return fps;
  if (readsDst(inst))
    add(inst.dst, -1, false);
  add(inst.dst, -1, true);
  return fps;
}

HazardDetector::Shadow *HazardDetector::shadowOf(const Footprint &f) {
  switch (f.space) {
  case MemSpace::Sbuf:
    return f.buffer < kMaxPhysicalCores ? sbuf_[f.buffer].get() : nullptr;
  case MemSpace::Psum:
    return f.buffer < kMaxPhysicalCores ? psum_[f.buffer].get() : nullptr;
  case MemSpace::Hbm:
    return f.buffer < hbm_.size() ? hbm_[f.buffer].get() : nullptr;
  }
  return nullptr;
}

namespace {

std::string describe(const Program &p, uint32_t index) {
  const Instruction &inst = p.instructions[index];
  std::string s = "instruction " + std::to_string(index) + " (" +
                  opcodeName(inst.opcode) + " on queue " +
                  queueName(inst.queue);
  if (inst.origin < p.origins.size())
    s += ", from " + p.origins[inst.origin];
  return s + ")";
}

} // namespace

void HazardDetector::access(size_t index, const int64_t *iv, double startNs,
                            double completeNs, const Instruction *at) {
  const uint16_t q = prog_.instructions[index].queue;
  const uint32_t self = uint32_t(index);
  const std::vector<Footprint> &fps = footprints(index);
  for (size_t fi = 0; fi < fps.size(); ++fi) {
    const Footprint &f = fps[fi];
    Shadow *shadow = shadowOf(f);
    if (!shadow)
      continue; // an HBM buffer nothing writes
    const int64_t offset =
        at ? (f.operand < 0 ? at->dst : at->srcs[size_t(f.operand)]).offset
        : f.terms->empty() ? f.offset
                           : loopTermsAt(f.offset, *f.terms, iv);
    const int64_t shift = f.space == MemSpace::Hbm ? offset * f.elem : offset;
    const Read asRead{completeNs, self, q,
                      f.strided ? uint8_t(fi) : kExactRead, shift};

    // A conflict in partition p, bytes [lo, hi): raise it.
    auto fail = [&](const char *kind, uint32_t other, double otherEnd,
                    int64_t p, int64_t lo, int64_t hi) {
      std::string where = std::string(spaceName(f.space));
      if (f.space == MemSpace::Hbm)
        where += " buffer " + std::to_string(f.buffer) + " (" +
                 prog_.buffers[f.buffer].name + ")";
      else
        where += (f.buffer ? " of core " + std::to_string(f.buffer) : std::string()) +
                 " partition " + std::to_string(p);
      where += " bytes [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
      const bool otherReads = std::string(kind) == "write after read";
      throw SimulationError(
          std::string("hazard (") + kind + "): " + describe(prog_, self) +
          " starts at " + fmtNs(startNs) + " ns and " +
          (f.write ? "writes " : "reads ") + where + ", which " +
          describe(prog_, other) + (otherReads ? " reads" : " writes") +
          " until " + fmtNs(otherEnd) +
          " ns; no semaphore wait orders them as the program does");
    };

    // Checks and records the access to bytes [lo, hi) of a range.
    auto visit = [&](Shadow::Segment &seg, int64_t lo, int64_t hi) {
      for (int64_t k = 0, p = f.partLo; k < f.partCount; ++k, p += f.partStep) {
        Cell &c = seg.cells[size_t(p)];
        if (!f.write) {
          if (c.writer == kNever)
            throw SimulationError(
                describe(prog_, self) + " reads " + spaceName(f.space) +
                " partition " + std::to_string(p) + " bytes [" +
                std::to_string(lo) + ", " + std::to_string(hi) +
                ") that no instruction wrote (on-chip memory starts "
                "undefined)");
          // A range has one writer for all its bytes: touching any of them
          // reads what it wrote.
          if (c.writer != kInitial && c.writeQueue != q && c.writeEnd > startNs)
            fail("read after write", c.writer, c.writeEnd, p, lo, hi);
          c.addRead(asRead);
          continue;
        }
        if (c.writer < kInitial && c.writeQueue != q && c.writeEnd > startNs)
          fail("write after write", c.writer, c.writeEnd, p, lo, hi);
        const Read *r = c.otherRead(q);
        if (r && r->end > startNs &&
            (r->footprint == kExactRead ||
             footprints_[r->inst][r->footprint].overlaps(r->shift, f, shift)))
          fail("write after read", r->inst, r->end, p, lo, hi);
        c.setWrite(self, q, completeNs);
      }
    };

    auto &segments = shadow->segments;
    if (f.strided) {
      // Each range touched by any run, once, without splitting ranges: a
      // strided read is recorded on whole ranges (Read::footprint).
      auto containing = [&](int64_t at) {
        auto it = segments.upper_bound(at);
        return it == segments.begin() ? it : std::prev(it);
      };
      auto s = containing(f.runs.front().first + shift);
      for (size_t i = 0; s != segments.end() && i < f.runs.size();) {
        const int64_t lo = f.runs[i].first + shift, hi = f.runs[i].second + shift;
        if (s->second.hi <= lo) {
          s = containing(lo);
          if (s->second.hi <= lo)
            ++s;
        } else if (s->first >= hi) {
          ++i;
        } else {
          visit(s->second, std::max(lo, s->first), std::min(hi, s->second.hi));
          ++s;
        }
      }
      continue;
    }
    const bool allPartitions = f.partStep == 1 && f.partLo == 0 &&
                               f.partCount == shadow->partitions;
    for (const auto &run : f.runs) {
      const int64_t lo = run.first + shift, hi = run.second + shift;
      auto it = shadow->splitAt(lo);
      auto stop = shadow->splitAt(hi);
      for (auto s = it; s != stop; ++s)
        visit(s->second, std::max(lo, s->first), std::min(hi, s->second.hi));
      // A write to every partition leaves identical cells: one range.
      if (f.write && allPartitions && it != stop && std::next(it) != stop) {
        it->second.hi = std::prev(stop)->second.hi;
        segments.erase(std::next(it), stop);
      }
    }
  }
}

} // namespace neuron::runtime
