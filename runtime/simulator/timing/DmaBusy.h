// The "dma" busy time of the timing model: the length of the union of the
// [start, end) intervals of all DMA transfers, summed in order of start.
//
// Each DMA queue's intervals arrive sorted (a queue starts a transfer no
// earlier than its previous one ends). They are held per queue until no later
// transfer can start before them (flush), then merged into (start, end)
// order and folded into the union, so memory stays bounded by the transfers
// in flight and the sum is the same, to the bit, as sorting all intervals at
// the end.
#pragma once

#include "runtime/program/Program.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace neuron::runtime {

class DmaBusy {
public:
  /// Records the transfer [start, end) of DMA queue `dmaQueue` (0-based);
  /// a queue's transfers come in order.
  void add(int dmaQueue, double start, double end) {
    pending_[size_t(dmaQueue)].push(start, end);
  }

  /// Folds the intervals that start before `frontier`: no transfer recorded
  /// later starts before it.
  void flush(double frontier) {
    ready_.clear();
    runs_.clear();
    for (Fifo &f : pending_) {
      const size_t begin = ready_.size();
      for (; !f.empty() && f.front().first < frontier; f.pop())
        ready_.push_back(f.front());
      if (ready_.size() > begin)
        runs_.push_back(begin);
    }
    mergeRuns();
    for (const Interval &iv : ready_)
      fold(iv);
  }

  /// The union length of all recorded intervals.
  double total() {
    flush(kInfinity);
    double t = sum_;
    if (curEnd_ > curStart_)
      t += curEnd_ - curStart_;
    return t;
  }

private:
  using Interval = std::pair<double, double>;
  static constexpr double kInfinity = 1e308;

  /// A queue of intervals that reuses its storage (no allocation once warm).
  class Fifo {
  public:
    bool empty() const { return head_ == items_.size(); }
    const Interval &front() const { return items_[head_]; }
    void push(double s, double e) {
      if (head_ > 0 && head_ == items_.size()) { // drained: start over
        items_.clear();
        head_ = 0;
      } else if (head_ >= 4096 && head_ * 2 >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + std::ptrdiff_t(head_));
        head_ = 0;
      }
      items_.emplace_back(s, e);
    }
    void pop() { ++head_; }

  private:
    std::vector<Interval> items_;
    size_t head_ = 0;
  };

  /// Sorts ready_, the sorted runs starting at runs_, by merging pairs of
  /// runs (no allocation once the scratch vectors are warm).
  void mergeRuns() {
    while (runs_.size() > 1) {
      const size_t k = runs_.size();
      runs_.push_back(ready_.size()); // the end of the last run
      merged_.resize(ready_.size());
      nextRuns_.clear();
      for (size_t r = 0; r < k; r += 2) {
        const size_t a = runs_[r], b = runs_[r + 1],
                     c = r + 1 < k ? runs_[r + 2] : b;
        std::merge(ready_.begin() + std::ptrdiff_t(a),
                   ready_.begin() + std::ptrdiff_t(b),
                   ready_.begin() + std::ptrdiff_t(b),
                   ready_.begin() + std::ptrdiff_t(c),
                   merged_.begin() + std::ptrdiff_t(a));
        nextRuns_.push_back(a);
      }
      ready_.swap(merged_);
      runs_.swap(nextRuns_);
    }
  }

  /// Adds the next interval in (start, end) order to the union.
  void fold(const Interval &iv) {
    if (iv.first > curEnd_) {
      if (curEnd_ > curStart_)
        sum_ += curEnd_ - curStart_;
      curStart_ = iv.first;
      curEnd_ = iv.second;
    } else if (iv.second > curEnd_) {
      curEnd_ = iv.second;
    }
  }

  std::array<Fifo, kMaxPhysicalCores * kNumDmaQueues> pending_; // dmaIndexOfQueue
  // flush: the intervals to fold, the starts of their sorted runs, scratch.
  std::vector<Interval> ready_, merged_;
  std::vector<size_t> runs_, nextRuns_;
  double sum_ = 0, curStart_ = 0, curEnd_ = -1; // the union so far
};

} // namespace neuron::runtime
