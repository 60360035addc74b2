// The shared HBM channel of the timing model: bandwidth as reserved time.
//
// Every DMA that touches HBM reserves bytes / hbmBytesPerNs of exclusive
// channel time, placed first-fit at or after its own start. A transfer ends no
// earlier than its reservation, so the sum of all DMA traffic never exceeds
// the HBM bandwidth, whatever order the program lists the transfers in.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>

namespace neuron::runtime {

class HbmChannel {
public:
  /// Reserves `durationNs` of channel time at or after `earliest`; returns the
  /// end of the reservation.
  double reserve(double earliest, double durationNs) {
    double s = earliest;
    auto it = busy_.upper_bound(s);
    if (it != busy_.begin()) {
      auto p = std::prev(it);
      s = std::max(s, p->second);
    }
    while (it != busy_.end() && it->first < s + durationNs) {
      s = std::max(s, it->second);
      ++it;
    }
    const double e = s + durationNs;
    double ne = e;
    it = busy_.lower_bound(s);
    if (it != busy_.end() && it->first <= e + kMergeNs) {
      ne = std::max(e, it->second);
      it = busy_.erase(it);
    }
    if (it != busy_.begin()) {
      auto p = std::prev(it);
      if (p->second >= s - kMergeNs) {
        p->second = std::max(p->second, ne);
        return e;
      }
    }
    busy_.emplace_hint(it, s, ne);
    return e;
  }

  /// Forgets reservations that end before `t`: no later request starts earlier.
  void prune(double t) {
    while (!busy_.empty() && busy_.begin()->second < t)
      busy_.erase(busy_.begin());
  }

  size_t reservations() const { return busy_.size(); }

private:
  // Gaps this small are rounding noise; closing them keeps the map short.
  static constexpr double kMergeNs = 1e-6;
  std::map<double, double> busy_; // start -> end; disjoint, sorted
};

} // namespace neuron::runtime
