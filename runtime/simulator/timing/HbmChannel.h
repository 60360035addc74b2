// The shared HBM channel of the timing model: bandwidth as reserved time.
//
// Every DMA that touches HBM reserves bytes / hbmBytesPerNs of exclusive
// channel time at or after its own start, filling the channel's idle
// stretches in order (split over several if one is too short: HBM interleaves
// the transfers of all queues, so no idle time is lost to fragmentation). A
// transfer ends no earlier than its reservation's last piece, so the sum of
// all DMA traffic never exceeds the HBM bandwidth, whatever order the program
// lists the transfers in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace neuron::runtime {

class HbmChannel {
public:
  /// Reserves `durationNs` of channel time at or after `earliest`, in the
  /// first idle stretches there (one piece or several); returns the end of
  /// the last piece.
  double reserve(double earliest, double durationNs) {
    if (!(durationNs > 0))
      return earliest;
    // The first live reservation that ends at or after `earliest`.
    const size_t first = firstEndingAfter(earliest - kMergeNs);
    // Walk the reservations from there, filling the gaps between them.
    double cursor = earliest, left = durationNs, finish = 0;
    size_t next = first;
    while (true) {
      if (next == busy_.size()) {
        finish = cursor + left;
        break;
      }
      const Span &r = busy_[next];
      if (r.start <= cursor + kMergeNs) { // busy at the cursor
        cursor = std::max(cursor, r.end);
        ++next;
        continue;
      }
      const double gap = r.start - cursor;
      if (gap >= left) {
        finish = cursor + left;
        break;
      }
      left -= gap; // the gap is filled: r joins the busy stretch
      cursor = r.end;
      ++next;
    }
    // [earliest, finish) is now busy, with reservations first .. next - 1.
    double lo = earliest;
    if (next > first)
      lo = std::min(lo, busy_[first].start);
    double hi = finish;
    if (next < busy_.size() && busy_[next].start <= hi + kMergeNs)
      hi = std::max(hi, busy_[next++].end);
    busy_.erase(busy_.begin() + std::ptrdiff_t(first),
                busy_.begin() + std::ptrdiff_t(next));
    busy_.insert(busy_.begin() + std::ptrdiff_t(first), Span{lo, hi});
    return finish;
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

  /// Index of the first live reservation ending at or after `t` (their
  /// ends are sorted too: the reservations are disjoint).
  size_t firstEndingAfter(double t) const {
    return size_t(std::partition_point(busy_.begin() + std::ptrdiff_t(head_),
                                       busy_.end(),
                                       [t](const Span &x) { return x.end < t; }) -
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
