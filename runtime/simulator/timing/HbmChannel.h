// The shared HBM channel of the timing model: bandwidth as reserved time.
//
// Every DMA that touches HBM reserves bytes / hbmBytesPerNs of exclusive
// channel time, placed first-fit at or after its own start. A transfer ends no
// earlier than its reservation, so the sum of all DMA traffic never exceeds
// the HBM bandwidth, whatever order the program lists the transfers in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace neuron::runtime {

class HbmChannel {
public:
  /// Reserves `durationNs` of channel time at or after `earliest`; returns the
  /// end of the reservation.
  double reserve(double earliest, double durationNs) {
    // Fast path, the common case when HBM is busy: at or after the start of the
    // last reservation, the request goes after it (the same result as below).
    if (busy_.size() > head_) {
      Span &last = busy_.back();
      if (earliest >= last.start && last.end > last.start && durationNs > 0) {
        const double s = std::max(earliest, last.end), e = s + durationNs;
        if (last.end >= s - kMergeNs)
          last.end = std::max(last.end, e);
        else
          busy_.push_back(Span{s, e});
        return e;
      }
    }
    double s = earliest;
    size_t i = upperBound(s);
    if (i > head_)
      s = std::max(s, busy_[i - 1].end);
    for (; i < busy_.size() && busy_[i].start < s + durationNs; ++i)
      s = std::max(s, busy_[i].end);
    const double e = s + durationNs;
    double ne = e;
    i = lowerBound(s);
    if (i < busy_.size() && busy_[i].start <= e + kMergeNs) {
      ne = std::max(e, busy_[i].end);
      busy_.erase(busy_.begin() + std::ptrdiff_t(i));
    }
    if (i > head_ && busy_[i - 1].end >= s - kMergeNs) {
      busy_[i - 1].end = std::max(busy_[i - 1].end, ne);
      return e;
    }
    busy_.insert(busy_.begin() + std::ptrdiff_t(i), Span{s, ne});
    return e;
  }

  /// Forgets reservations that end before `t`: no later request starts earlier.
  void prune(double t) {
    while (head_ < busy_.size() && busy_[head_].end < t)
      ++head_;
    if (head_ >= 1024 && head_ * 2 >= busy_.size()) { // reclaim the space
      busy_.erase(busy_.begin(), busy_.begin() + std::ptrdiff_t(head_));
      head_ = 0;
    }
  }

  size_t reservations() const { return busy_.size() - head_; }

private:
  struct Span {
    double start, end;
  };

  /// Index of the first live reservation starting after `t` / at or after `t`.
  size_t upperBound(double t) const {
    return size_t(std::upper_bound(busy_.begin() + std::ptrdiff_t(head_),
                                   busy_.end(), t,
                                   [](double v, const Span &x) {
                                     return v < x.start;
                                   }) -
                  busy_.begin());
  }
  size_t lowerBound(double t) const {
    return size_t(std::lower_bound(busy_.begin() + std::ptrdiff_t(head_),
                                   busy_.end(), t,
                                   [](const Span &x, double v) {
                                     return x.start < v;
                                   }) -
                  busy_.begin());
  }

  // Gaps this small are rounding noise; closing them keeps the list short.
  static constexpr double kMergeNs = 1e-6;
  // Disjoint reservations sorted by start; those before head_ are pruned
  // (kept until they are many, so that the storage is reused, not
  // reallocated, as reservations come and go).
  std::vector<Span> busy_;
  size_t head_ = 0;
};

} // namespace neuron::runtime
