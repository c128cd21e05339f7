// Shape classes: the performance cases of a workload grouped by their sizes,
// so that a search can tune each group (deep-K, skinny, mid-size, large...)
// on its own and a variant per class comes out (driver/, propose/class_search.h).
//
// The grouping is agglomerative clustering with complete linkage (Sneath and
// Sokal, "Numerical Taxonomy", 1973; scipy.cluster.hierarchy "complete") in
// log2 space: each case is the point (log2 s_1, ..., log2 s_d) of its sizes,
// two clusters are as far apart as their farthest pair of points (Euclidean),
// and the closest two clusters are merged until `max_classes` are left. A
// class therefore holds shapes within a small factor of each other in every
// size, whatever their order of magnitude. Ties are broken by the order of
// the cases, so the grouping is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kopt::model {

/// A performance case as the grouping sees it: its name and its sizes, in
/// one order for all cases (sizes < 1 count as 1).
struct ShapePoint {
  std::string name;
  std::vector<int64_t> sizes;
};

/// One class: the indices of its cases (ascending) into the input, and a
/// name built from the spans of its sizes ("M 512-1024, N 1, K 500000").
struct ShapeClass {
  std::vector<size_t> members;
  std::string name;
};

/// Groups `points` into at most `max_classes` classes (at least 1; fewer
/// when there are fewer points). Classes come ordered for tuning: the class
/// with the most cases first (ties: the earliest case), then repeatedly the
/// class nearest (complete linkage) to any class already listed, so that
/// each class after the first has a tuned neighbour to start from.
/// `size_names` name the sizes in the class names. Throws
/// std::invalid_argument when the points' size counts differ from
/// `size_names`.
std::vector<ShapeClass> group_shape_classes(const std::vector<ShapePoint>& points,
                                            const std::vector<std::string>& size_names, int max_classes);

/// The distance the grouping uses between two classes (complete linkage in
/// log2 space), for choosing neighbours.
double class_distance(const std::vector<ShapePoint>& points, const ShapeClass& a, const ShapeClass& b);

/// The number of classes `--shape-classes auto` makes of `cases` performance
/// cases: none (0: one search over all) up to 5 cases, else one class per
/// two cases, at most 8.
int auto_shape_classes(size_t cases);

}  // namespace kopt::model
