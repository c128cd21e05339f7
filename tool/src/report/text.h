// Text helpers shared by the report's HTML and SVG writers: escaping (with
// credentials in URLs redacted), truncation by code point, number formatting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kopt::report::text {

/// Appends the code point `cp` as UTF-8.
void put_utf8(std::string& out, uint32_t cp);
/// Decodes `s` into code points; invalid UTF-8 becomes U+FFFD.
std::vector<uint32_t> decode_utf8(const std::string& s);
/// Escapes text for XML/HTML content and attribute values. Invalid UTF-8 and
/// characters XML forbids become U+FFFD; with `multiline` false, tabs and line
/// breaks become spaces. A URL in the text is shown without its credentials.
std::string esc(const std::string& text, bool multiline = false);
/// esc(text) for HTML with a line-break opportunity (<wbr>) after each comma,
/// so that a label such as "BM=128,BN=64,..." wraps between its pairs.
std::string esc_label(const std::string& text);
/// At most `max_chars` code points of `s` (the last one an ellipsis if cut).
std::string truncate(const std::string& s, size_t max_chars);
/// Length in code points.
size_t length_chars(const std::string& s);
/// printf-style number; NaN and infinities spelled out.
std::string fmt(double v, const char* f = "%.3g");
/// A number for an attribute: full precision, locale independent.
std::string num_attr(double v);
/// "8x", "0.25x", "1234x".
std::string speedup_text(double s);
/// Finite and > 0.
bool finite_positive(double v);

/// What a tooltip that shows a time adds when the GPU was simulated (the
/// fake worker: model::DeviceInfo::simulated); the chart's <title> and the
/// report's banner say model::kSimulatedNote in full.
constexpr const char* kSimulatedTip = " (simulated timing: fake worker, no GPU)";

/// The font stack of every SVG the report draws.
constexpr const char* kFont =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

}  // namespace kopt::report::text
