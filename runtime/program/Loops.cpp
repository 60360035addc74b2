// Counted loops of a Program (see Loops.h).
#include "runtime/program/Loops.h"

#include <algorithm>
#include <limits>

namespace neuron::runtime {

namespace {

std::string rangeText(const Loop &l) {
  return "[" + std::to_string(l.begin) + ", " + std::to_string(l.end) + ")";
}

int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::numeric_limits<int64_t>::max();
  return r;
}

} // namespace

std::string loopNestProblem(const std::vector<Loop> &loops,
                            size_t numInstructions, size_t &bad) {
  std::vector<size_t> open; // the loops around the current one
  for (size_t k = 0; k < loops.size(); ++k) {
    bad = k;
    const Loop &l = loops[k];
    if (l.count < 1)
      return "count " + std::to_string(l.count) + " must be at least 1" +
             (l.dynamic() ? " (a dynamic loop's count is its bound)" : "");
    if (l.whileLoop && !l.dynamic())
      return "a while loop needs a condition register";
    if (l.dynamic() && (l.countReg.queue >= kNumQueues || l.countReg.index >= kRegistersPerQueue))
      return "register " + std::to_string(l.countReg.index) + " of queue " +
             std::to_string(l.countReg.queue) + " does not exist (" +
             std::to_string(kRegistersPerQueue) + " registers per queue)";
    if (l.begin >= l.end)
      return "range " + rangeText(l) + " is empty";
    if (l.end > numInstructions)
      return "range " + rangeText(l) + " exceeds the " +
             std::to_string(numInstructions) + " instructions";
    if (k > 0 && l.begin < loops[k - 1].begin)
      return "begins before loops[" + std::to_string(k - 1) +
             "] (loops must be sorted by begin)";
    while (!open.empty() && loops[open.back()].end <= l.begin)
      open.pop_back();
    if (!open.empty() && l.end > loops[open.back()].end)
      return "range " + rangeText(l) + " overlaps loops[" +
             std::to_string(open.back()) + "] " +
             rangeText(loops[open.back()]) +
             " without nesting inside it (outer loops come first)";
    if (open.size() >= size_t(kMaxLoopDepth))
      return "nests " + std::to_string(open.size() + 1) +
             " loops deep, at most " + std::to_string(kMaxLoopDepth);
    open.push_back(k);
  }
  return "";
}

std::vector<uint8_t> loopDepths(const std::vector<Loop> &loops,
                                size_t numInstructions) {
  std::vector<uint8_t> depth(numInstructions, 0);
  for (const Loop &l : loops)
    for (size_t i = l.begin; i < l.end; ++i)
      ++depth[i];
  return depth;
}

std::vector<int64_t> instanceCounts(const std::vector<Loop> &loops,
                                    size_t numInstructions) {
  std::vector<int64_t> n(numInstructions, 1);
  for (const Loop &l : loops)
    for (size_t i = l.begin; i < l.end; ++i)
      n[i] = saturatingMul(n[i], l.count);
  return n;
}

int enclosingLoopCounts(const std::vector<Loop> &loops, size_t index,
                        int64_t *counts) {
  int depth = 0;
  for (const Loop &l : loops) // sorted: outer loops come first
    if (l.begin <= index && index < l.end && depth < kMaxLoopDepth)
      counts[depth++] = l.count;
  return depth;
}

std::string loopTermsProblem(const std::vector<LoopTerm> &terms, int depth,
                             int64_t coefLimit, const char *what) {
  for (size_t k = 0; k < terms.size(); ++k) {
    const LoopTerm &t = terms[k];
    const std::string term = std::string(what) + " term " + std::to_string(k);
    if (t.level >= depth)
      return term + " uses loop level " + std::to_string(t.level) +
             ", but the instruction is inside " + std::to_string(depth) +
             " loop(s)";
    if (t.modulus < 0)
      return term + " has a negative modulus " + std::to_string(t.modulus);
    if (t.coef > coefLimit || t.coef < -coefLimit)
      return term + " coefficient " + std::to_string(t.coef) +
             " is out of range";
  }
  return "";
}

void loopTermsRange(const std::vector<LoopTerm> &terms, const int64_t *counts,
                    __int128 &lo, __int128 &hi) {
  constexpr __int128 kSaturate = __int128(1) << 120;
  lo = hi = 0;
  for (const LoopTerm &t : terms) {
    const int64_t n = counts[t.level];
    const int64_t values = t.modulus > 0 ? std::min(t.modulus, n) : n;
    const __int128 ext = __int128(t.coef) * (values - 1);
    if (ext < 0)
      lo = std::max(lo + ext, -kSaturate);
    else
      hi = std::min(hi + ext, kSaturate);
  }
}

} // namespace neuron::runtime
