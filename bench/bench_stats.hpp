// Percentiles of timing samples, shared by the benchmark programs in bench/.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace codeact::bench {

struct Stats {
  double p50 = 0, p90 = 0, mean = 0;
};

inline Stats stats(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.p50 = samples[samples.size() / 2];
  s.p90 = samples[std::min(samples.size() - 1, samples.size() * 9 / 10)];
  for (double x : samples) s.mean += x;
  s.mean /= static_cast<double>(samples.size());
  return s;
}

// Runs f n times; the milliseconds each run took.
inline std::vector<double> time_ms(int n, const std::function<void()>& f) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    out.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

}  // namespace codeact::bench
