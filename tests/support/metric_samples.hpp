#pragma once
/// Reading a Prometheus text exposition (GET /metrics) in tests.

#include <sstream>
#include <string>
#include <vector>

namespace sy::test {

/// The values of the samples of `name` whose labels include every one of `labels` (`k="v"`).
inline std::vector<double> samples(const std::string& text, const std::string& name,
                                   const std::vector<std::string>& labels = {}) {
  std::vector<double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    const std::string metric = series.substr(0, series.find('{'));
    if (metric != name) continue;
    bool all = true;
    for (const auto& l : labels) all = all && series.find(l) != std::string::npos;
    if (all) out.push_back(std::stod(line.substr(space + 1)));
  }
  return out;
}

/// The sum of the samples of `name` whose labels include every one of `labels`.
inline double value(const std::string& text, const std::string& name,
                    const std::vector<std::string>& labels = {}) {
  double sum = 0;
  for (double v : samples(text, name, labels)) sum += v;
  return sum;
}

}  // namespace sy::test
