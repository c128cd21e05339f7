#include "model/shape_classes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kopt::model {
namespace {

double log2_size(int64_t v) { return std::log2(static_cast<double>(std::max<int64_t>(v, 1))); }

double point_distance(const ShapePoint& a, const ShapePoint& b) {
  double d = 0;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    const double x = log2_size(a.sizes[i]) - log2_size(b.sizes[i]);
    d += x * x;
  }
  return std::sqrt(d);
}

std::string class_name(const std::vector<ShapePoint>& points, const std::vector<size_t>& members,
                       const std::vector<std::string>& size_names) {
  std::string name;
  for (size_t d = 0; d < size_names.size(); ++d) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (size_t m : members) {
      lo = std::min(lo, points[m].sizes[d]);
      hi = std::max(hi, points[m].sizes[d]);
    }
    if (!name.empty()) name += ", ";
    name += size_names[d] + " " + std::to_string(lo);
    if (hi != lo) name += "-" + std::to_string(hi);
  }
  return name.empty() ? "all" : name;
}

}  // namespace

double class_distance(const std::vector<ShapePoint>& points, const ShapeClass& a, const ShapeClass& b) {
  double d = 0;
  for (size_t i : a.members)
    for (size_t j : b.members) d = std::max(d, point_distance(points[i], points[j]));
  return d;
}

std::vector<ShapeClass> group_shape_classes(const std::vector<ShapePoint>& points,
                                            const std::vector<std::string>& size_names, int max_classes) {
  for (const auto& p : points)
    if (p.sizes.size() != size_names.size())
      throw std::invalid_argument("shape class grouping: case '" + p.name + "' has " + std::to_string(p.sizes.size()) +
                                  " sizes, expected " + std::to_string(size_names.size()));
  std::vector<ShapeClass> classes;
  for (size_t i = 0; i < points.size(); ++i) classes.push_back({{i}, ""});
  const size_t want = static_cast<size_t>(std::max(max_classes, 1));
  while (classes.size() > want) {
    size_t bi = 0, bj = 1;
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < classes.size(); ++i)
      for (size_t j = i + 1; j < classes.size(); ++j) {
        const double d = class_distance(points, classes[i], classes[j]);
        if (d < best) {  // strict: the first pair in order wins a tie
          best = d;
          bi = i;
          bj = j;
        }
      }
    auto& into = classes[bi].members;
    into.insert(into.end(), classes[bj].members.begin(), classes[bj].members.end());
    std::sort(into.begin(), into.end());
    classes.erase(classes.begin() + static_cast<std::ptrdiff_t>(bj));
  }
  // Tuning order: the largest class, then always the class nearest to one listed.
  std::vector<ShapeClass> ordered;
  std::vector<bool> taken(classes.size(), false);
  for (size_t n = 0; n < classes.size(); ++n) {
    size_t pick = classes.size();
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < classes.size(); ++i) {
      if (taken[i]) continue;
      if (ordered.empty()) {
        if (pick == classes.size() || classes[i].members.size() > classes[pick].members.size()) pick = i;
        continue;
      }
      double d = std::numeric_limits<double>::infinity();
      for (const auto& o : ordered) d = std::min(d, class_distance(points, classes[i], o));
      if (d < best) {
        best = d;
        pick = i;
      }
    }
    taken[pick] = true;
    ordered.push_back(classes[pick]);
  }
  for (auto& c : ordered) c.name = class_name(points, c.members, size_names);
  return ordered;
}

int auto_shape_classes(size_t cases) {
  if (cases <= 5) return 0;
  return static_cast<int>(std::min<size_t>(8, (cases + 1) / 2));
}

}  // namespace kopt::model
