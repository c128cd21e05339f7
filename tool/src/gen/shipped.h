// The text of the shipped headers that every generated launch header copies
// (the regions between their kopt:embed markers), embedded in kopt when it is
// built (tool/cmake/KoptEmbed.cmake). Each is real C++ that kopt or its tests
// compile where it lives; launch_header() writes it unchanged.
#pragma once

namespace kopt::gen::shipped {

/// gen/launch_runtime.h: the expression language's functions (ceil_div, min,
/// max, ...) over long long, and struct LaunchConfig.
extern const char* const expression_functions;
extern const char* const launch_config;
/// gen/launch_runtime.h: floor_div and ipow, for headers whose expressions
/// use Python's '//' or '**' (spec::Expr::cpp).
extern const char* const python_operators;

/// model/dispatch_rule.h: the cost model's rule off the tuned shapes (what
/// model::DispatchModel::choose runs), and the nearest-tuned-shape choice of
/// headers without a measured dispatch.
extern const char* const dispatch_rule;
extern const char* const nearest_tuned;

/// gen/capture_runtime.h: the shape capture's #include lines and its runtime
/// (after the kernel's kKernel, kSizes and kSizeNames).
extern const char* const capture_includes;
extern const char* const capture_runtime;

}  // namespace kopt::gen::shipped
