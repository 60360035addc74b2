// Which moments of a run some queue is busy, to tell how much of a collective's
// time no other work overlapped (RunStats::exposedCollectiveNs).
//
// Time is cut into slots of `resolutionNs` (8 ns, doubled whenever the run
// outgrows kMaxSlots); a slot is busy if any busy interval touches it. So an
// uncovered length is exact up to one slot at each end of each gap.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace neuron::runtime {

class BusyCoverage {
public:
  /// Marks [start, end) busy.
  void add(double start, double end) {
    if (!(end > start) || start < 0)
      return;
    int64_t lo = slot(start), hi = slot(std::nextafter(end, 0.0));
    while (hi >= kMaxSlots) {
      coarsen();
      lo = slot(start);
      hi = slot(std::nextafter(end, 0.0));
    }
    if (size_t(hi) >= busy_.size())
      busy_.resize(size_t(hi) + 1, 0);
    std::fill(busy_.begin() + lo, busy_.begin() + hi + 1, uint8_t(1));
  }

  /// The length of [start, end) during which nothing was busy.
  double uncovered(double start, double end) const {
    if (!(end > start))
      return 0;
    double idle = 0;
    for (int64_t k = slot(std::max(start, 0.0)); k <= slot(std::nextafter(end, 0.0)); ++k) {
      if (size_t(k) < busy_.size() && busy_[size_t(k)])
        continue;
      const double a = std::max(start, double(k) * resolutionNs_);
      const double b = std::min(end, double(k + 1) * resolutionNs_);
      idle += std::max(0.0, b - a);
    }
    return idle;
  }

private:
  static constexpr int64_t kMaxSlots = int64_t(1) << 27; // 128 MiB of flags at most

  int64_t slot(double t) const { return int64_t(t / resolutionNs_); }

  void coarsen() {
    for (size_t k = 0; k < busy_.size(); k += 2)
      busy_[k / 2] = busy_[k] | (k + 1 < busy_.size() ? busy_[k + 1] : 0);
    busy_.resize((busy_.size() + 1) / 2);
    resolutionNs_ *= 2;
  }

  double resolutionNs_ = 8;
  std::vector<uint8_t> busy_;
};

} // namespace neuron::runtime
