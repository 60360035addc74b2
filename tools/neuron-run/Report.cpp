#include "tools/neuron-run/Report.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace neuron::tools {
namespace {

std::string format(const char *fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

std::string us(double ns) { return format("%.3f us", ns / 1000); }

std::string bytes(double n) {
  for (auto [unit, size] : {std::pair{" GB", 1e9}, {" MB", 1e6}, {" KB", 1e3}})
    if (n >= size)
      return format("%.2f", n / size) + unit;
  return std::to_string(uint64_t(n)) + " B";
}

std::string flops(double n) {
  for (auto [unit, size] :
       {std::pair{" TFLOP", 1e12}, {" GFLOP", 1e9}, {" MFLOP", 1e6}, {" KFLOP", 1e3}})
    if (n >= size)
      return format("%.2f", n / size) + unit;
  return std::to_string(uint64_t(n)) + " FLOP";
}

std::string row(const std::string &name, const std::string &value) {
  std::string padded = name;
  padded.resize(std::max<size_t>(name.size(), 16), ' ');
  return "  " + padded + value + "\n";
}

} // namespace

std::string formatReport(const runtime::Program &program, const std::string &title,
                         const std::string &target, bool timingOnly,
                         const runtime::RunStats &s, const std::vector<double> &originBusyNs,
                         int top) {
  std::string out = "NeuronSim run of " + title + " on " + target +
                    (timingOnly ? " (timing only: outputs not computed)" : "") + "\n";
  out += row("simulated time", us(s.simNs));
  if (s.rooflineNs > 0 && s.simNs > 0)
    out += row("roofline", us(s.rooflineNs) + "  (simulated / roofline = " +
                               format("%.2f", s.simNs / s.rooflineNs) + "x)");
  out += row("MFU", format("%.2f %%", 100 * s.mfu) +
                        format("  (of %g TFLOP/s peak)", s.peakFlopsPerNs / 1000));
  out += row("FLOPs", flops(double(s.flops)));
  if (s.simNs > 0 && s.flops)
    out += row("achieved", format("%.2f TFLOP/s", double(s.flops) / s.simNs / 1000));
  std::string hbm = bytes(double(s.hbmBytes));
  if (s.minimalHbmBytes)
    hbm += "  (minimal " + bytes(double(s.minimalHbmBytes)) + ")";
  if (s.simNs > 0 && s.hbmBytes)
    hbm += format(", %.1f GB/s", double(s.hbmBytes) / s.simNs);
  out += row("HBM traffic", hbm);
  out += row("instructions", std::to_string(s.instructions) + "  (" +
                                 std::to_string(s.matmuls) + " matmuls, " +
                                 std::to_string(s.dmaTransfers) + " DMA transfers)");
  out += "\n  engine             busy  utilization\n";
  for (const char *engine : {"tensor", "vector", "scalar", "gpsimd", "dma"}) {
    auto busy = s.engineBusyNs.find(engine);
    auto util = s.engineUtilization.find(engine);
    double ns = busy == s.engineBusyNs.end() ? 0.0 : busy->second;
    double share = util == s.engineUtilization.end() ? 0.0 : util->second;
    char line[128];
    std::snprintf(line, sizeof line, "  %-8s %14s %11.1f%%  %s\n", engine, us(ns).c_str(),
                  100 * share,
                  std::string(size_t(20 * std::clamp(share, 0.0, 1.0) + 0.5), '#').c_str());
    out += line;
  }

  // Busy time per ATen node; the last entry collects instructions without an origin.
  std::vector<std::pair<double, std::string>> origins;
  for (size_t i = 0; i < originBusyNs.size(); ++i)
    if (originBusyNs[i] > 0)
      origins.emplace_back(originBusyNs[i],
                           i < program.origins.size() ? program.origins[i] : "(no origin)");
  std::stable_sort(origins.begin(), origins.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  if (!origins.empty() && top > 0) {
    double total = 0;
    for (const auto &o : origins)
      total += o.first;
    out += "\n  top ATen nodes by busy time (summed over engines and DMA queues):\n";
    for (size_t i = 0; i < origins.size() && i < size_t(top); ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "  %14s %5.1f%%  ", us(origins[i].first).c_str(),
                    100 * origins[i].first / total);
      out += line + origins[i].second + "\n";
    }
  }
  return out;
}

} // namespace neuron::tools
