// Counted loops of a Program (Program.h): validation, per-instruction facts
// (depth, instance count, enclosing trip counts), ranges of affine terms, and
// the walk over instruction instances in execution order.
#pragma once

#include "runtime/program/Program.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace neuron::runtime {

/// Why `loops` is not a valid loop nest over `numInstructions` instructions,
/// or "" if it is one. Valid: every loop is a non-empty range inside the
/// program with count >= 1; loops are sorted by begin, outer first; each loop
/// lies inside or after the ones before it; at most kMaxLoopDepth deep.
/// `bad` receives the index of the first offending loop.
std::string loopNestProblem(const std::vector<Loop> &loops,
                            size_t numInstructions, size_t &bad);

/// Number of loops around each instruction (loops must be valid).
std::vector<uint8_t> loopDepths(const std::vector<Loop> &loops,
                                size_t numInstructions);

/// How many times each instruction runs: the product of the counts of the
/// loops around it, saturated at INT64_MAX (loops must be valid).
std::vector<int64_t> instanceCounts(const std::vector<Loop> &loops,
                                    size_t numInstructions);

/// Counts of the loops around instruction `index`, outermost first, into
/// `counts` (kMaxLoopDepth entries); returns how many there are.
int enclosingLoopCounts(const std::vector<Loop> &loops, size_t index,
                        int64_t *counts);

/// base + the sum of `terms` at the induction variables `iv` (evalAffine of
/// Program.h, inline for the simulator's per-instance path). Unsigned
/// arithmetic: wraps instead of overflowing (callers check ranges).
inline int64_t loopTermsAt(int64_t base, const std::vector<LoopTerm> &terms,
                           const int64_t *iv) {
  uint64_t v = uint64_t(base);
  for (const LoopTerm &t : terms) {
    const int64_t x = t.modulus > 0 ? iv[t.level] % t.modulus : iv[t.level];
    v += uint64_t(t.coef) * uint64_t(x);
  }
  return int64_t(v);
}

/// Why `terms` cannot apply to an instruction inside `depth` loops (a level
/// that is no loop around it, a negative modulus, a coefficient beyond
/// +-coefLimit), or "". `what` names the terms in the message ("offset").
std::string loopTermsProblem(const std::vector<LoopTerm> &terms, int depth,
                             int64_t coefLimit, const char *what);

/// Lowest and highest value of the sum of `terms` over all iterations of the
/// loops around the instruction (`counts` by level; levels must be valid).
/// Terms vary independently, and each is 0 in the first iteration, so
/// lo <= 0 <= hi. Saturates far beyond the int64 range.
void loopTermsRange(const std::vector<LoopTerm> &terms, const int64_t *counts,
                    __int128 &lo, __int128 &hi);

/// What a walk asks about its dynamic loops (Loop::dynamic()), by index in Program::loops.
class DynamicTrips {
public:
  virtual ~DynamicTrips() = default;
  /// A counted dynamic loop is entered: how many iterations it runs (0 .. its count).
  virtual int64_t trips(size_t loop) = 0;
  /// A while loop has run `done` iterations: whether it runs another (may throw when the
  /// condition still holds after `count` iterations).
  virtual bool again(size_t loop, int64_t done) = 0;
  /// A counted dynamic loop ends an iteration and tests its count again.
  virtual void tested(size_t loop) = 0;
  /// A dynamic loop exits after `ran` iterations.
  virtual void exited(size_t loop, int64_t ran) = 0;
};

/// Walks the instruction instances of a program in execution order, as if
/// every loop body were unrolled in place: pc() is the static instruction,
/// iv() the induction variables of the loops around it (outermost first) and
/// counts() their trip counts (a dynamic loop's: its bound). The loops must be valid
/// (loopNestProblem). Dynamic loops ask `dynamic` for their iterations (without one they run
/// their count); one that runs no iteration skips its body.
class LoopWalker {
public:
  LoopWalker(const std::vector<Loop> &loops, size_t numInstructions,
             DynamicTrips *dynamic = nullptr)
      : loops_(loops), n_(numInstructions), dyn_(dynamic) {
    enter();
  }

  bool done() const { return pc_ >= n_; }
  size_t pc() const { return pc_; }
  int depth() const { return depth_; }
  const int64_t *iv() const { return iv_; }
  const int64_t *counts() const { return count_; }
  /// Index in Program::loops of the outermost loop around pc() (depth() > 0).
  size_t outermost() const { return index_[0]; }

  /// Moves to the next instance: the next instruction, or back to the start
  /// of the innermost loop that ends here and has iterations left.
  void next() {
    ++pc_;
    unwind();
    enter();
  }

private:
  /// Leaves the loops that end at pc_, or goes back to the start of the innermost one with
  /// iterations left.
  void unwind() {
    while (depth_ > 0 && pc_ == end_[depth_ - 1]) {
      const int d = depth_ - 1;
      const int64_t done = iv_[d] + 1;
      if (dynamic_[d] && !while_[d])
        dyn_->tested(index_[d]);
      const bool more = while_[d] ? dyn_->again(index_[d], done) && done < count_[d]
                                  : done < trips_[d];
      if (more) {
        iv_[d] = done;
        pc_ = begin_[d];
        nextLoop_ = index_[d] + 1; // its inner loops start over
        return;
      }
      if (dynamic_[d])
        dyn_->exited(index_[d], done);
      --depth_;
    }
  }

  /// Enters the loops that begin at pc_ (skipping the dynamic ones that run no iteration).
  void enter() {
    while (nextLoop_ < loops_.size() && loops_[nextLoop_].begin == pc_) {
      const size_t k = nextLoop_;
      const Loop &l = loops_[k];
      const bool dyn = l.dynamic() && dyn_;
      int64_t trips = l.count;
      if (dyn)
        trips = l.whileLoop ? (dyn_->again(k, 0) ? l.count : 0) : dyn_->trips(k);
      if (trips <= 0) { // skip the body and the loops inside it
        dyn_->exited(k, 0);
        pc_ = l.end;
        while (++nextLoop_ < loops_.size() && loops_[nextLoop_].begin < l.end) {
        }
        unwind();
        continue;
      }
      begin_[depth_] = l.begin;
      end_[depth_] = l.end;
      count_[depth_] = l.count;
      trips_[depth_] = trips;
      dynamic_[depth_] = dyn;
      while_[depth_] = dyn && l.whileLoop;
      index_[depth_] = nextLoop_++;
      iv_[depth_++] = 0;
    }
  }

  const std::vector<Loop> &loops_;
  size_t n_;
  DynamicTrips *dyn_;
  size_t pc_ = 0;
  size_t nextLoop_ = 0; // the next loop to enter, in Program::loops order
  int depth_ = 0;
  // The loops around pc_, outermost first.
  size_t begin_[kMaxLoopDepth] = {}, end_[kMaxLoopDepth] = {};
  size_t index_[kMaxLoopDepth] = {};
  int64_t count_[kMaxLoopDepth] = {}, iv_[kMaxLoopDepth] = {};
  int64_t trips_[kMaxLoopDepth] = {}; // iterations it runs (a counted loop's)
  bool dynamic_[kMaxLoopDepth] = {}, while_[kMaxLoopDepth] = {};
};

} // namespace neuron::runtime
