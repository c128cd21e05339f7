#include "util/json_read.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "util/error.h"

namespace kopt {

using nlohmann::json;

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// Drops nlohmann's "[json.exception.type_error.302] " prefix.
std::string without_prefix(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    const size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

/// The DOM builder behind parse_json: nlohmann's own, plus the checks.
class Builder final : public nlohmann::json_sax<json> {
 public:
  Builder(json& root, const std::string& where, const std::string& text)
      : root_(root), where_(where), text_(text) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    // nlohmann reports overflow itself (parse_error with out_of_range.406);
    // this is the backstop.
    if (!std::isfinite(v)) out_of_range(text);
    return put(v);
  }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (f.value->contains(k)) {
      throw SpecError("kopt.json.002", where_ + ": " + f.path + ": duplicate key '" + json_shown(k) +
                                           "' (a key may appear only once in an object)");
    }
    f.key = k;
    f.slot = &(*f.value)[k];
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406) out_of_range(last_token);  // "number overflow parsing '1e999'"
    std::string msg = without_prefix(ex.what());
    if (msg.rfind("parse error at ", 0) == 0) msg = msg.substr(15);
    msg = json_shown(msg, 300);
    std::string hint;
    const bool blank = std::all_of(text_.begin(), text_.end(), [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    });
    if (blank) {
      hint = " (the file is empty)";
    } else if (position > 0 && position <= text_.size()) {
      // The character where the parser stopped.
      const char c = text_[position - 1];
      if (c == 'N' || c == 'I') hint = " (NaN and Infinity are not JSON numbers)";
      if (c == '/' || c == '#') hint = " (JSON has no comments)";
      if (c == '\'') hint = " (JSON strings and keys use double quotes)";
    }
    (void)last_token;
    throw SpecError("kopt.json.001", where_ + ": not valid JSON: " + msg + hint +
                                         (stack_.empty() ? "" : " (in " + json_shown(here(), 200) + ")"));
  }

 private:
  struct Frame {
    json* value;
    std::string path;
    std::string key;        // objects: the last key
    json* slot = nullptr;   // objects: where the next value goes
  };

  /// The path of the value being read.
  std::string here() const {
    const Frame& f = stack_.back();
    if (f.value->is_array()) return json_path_child(f.path, f.value->size());
    return f.slot ? json_path_child(f.path, f.key) : f.path;
  }

  [[noreturn]] void out_of_range(const std::string& token) const {
    throw SpecError("kopt.json.003", where_ + ": " + (stack_.empty() ? std::string("$") : here()) +
                                         ": the number " + json_shown(token) +
                                         " is out of range (beyond a double, about 1.8e308)");
  }

  /// Places `v` in the current container (or as the root); returns it.
  template <typename V>
  json* place(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.value->is_array()) {
      f.value->emplace_back(std::forward<V>(v));
      return &f.value->back();
    }
    *f.slot = json(std::forward<V>(v));
    json* out = f.slot;
    f.slot = nullptr;
    return out;
  }
  template <typename V>
  bool put(V&& v) {
    place(std::forward<V>(v));
    return true;
  }
  bool open(json empty) {
    std::string path = stack_.empty() ? std::string("$") : here();
    if (stack_.size() >= kMaxJsonDepth) {
      throw SpecError("kopt.json.004", where_ + ": " + json_shown(path, 200) + ": nested more than " +
                                           std::to_string(kMaxJsonDepth) + " levels deep");
    }
    json* v = place(std::move(empty));
    stack_.push_back(Frame{v, std::move(path), {}, nullptr});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  const std::string& where_;
  const std::string& text_;
  std::vector<Frame> stack_;
};

}  // namespace

std::string json_shown(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max;
  // Do not cut a UTF-8 sequence in two.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string json_path_child(const std::string& parent, const std::string& key) {
  if (is_identifier(key) && key.size() <= 60) return parent + "." + key;
  return parent + "[" + json(json_shown(key)).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
}

std::string json_path_child(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

json parse_json(const std::string& text, const std::string& where) {
  json root;
  Builder b(root, where, text);
  json::sax_parse(text, &b, json::input_format_t::json, /*strict=*/true);
  return root;
}

json parse_json_file(const std::filesystem::path& file, const std::string& what, uint64_t max_bytes) {
  return parse_json(fs::read_file(file, what, max_bytes), fs::display(file));
}

void throw_json_error(const std::string& where, const std::string& path, const json::exception& e) {
  throw SpecError("kopt.json.005", where + ": " + path + ": " + json_shown(without_prefix(e.what()), 200));
}

std::string json_describe(const json& j) {
  std::string shown = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (shown.size() > 40) shown = json_shown(shown, 37);
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean (" + shown + ")";
    case json::value_t::string: return "a string " + shown;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer (" + shown + ")";
    case json::value_t::number_float: return "a floating-point number (" + shown + ")";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported JSON value";
  }
}

std::string json_quoted_number_hint(const json& j) {
  if (!j.is_string()) return "";
  const std::string& s = j.get_ref<const std::string&>();
  if (s.empty() || s.size() > 40 || std::isspace(static_cast<unsigned char>(s[0]))) return "";
  errno = 0;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return "";
  // strtod also reads "nan", "inf" and hex floats; JSON has none of them.
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
           c == 'e' || c == 'E';
  });
  if (!plain) return "";
  return "; numbers are written without quotes (" + s + ", not \"" + s + "\")";
}

// ---------------------------------------------------------------------------
// JsonAt

void JsonAt::fail(const std::string& what, const char* id) const {
  throw SpecError(id, where_ + ": " + path_ + ": " + what);
}

const JsonAt& JsonAt::expect_object() const {
  if (!j_->is_object()) fail("expected an object, got " + json_describe(*j_));
  return *this;
}

const JsonAt& JsonAt::expect_array() const {
  if (!j_->is_array()) fail("expected an array, got " + json_describe(*j_));
  return *this;
}

JsonAt JsonAt::at(const std::string& key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end()) fail("missing required key '" + key + "'");
  return JsonAt(*it, where_, json_path_child(path_, key));
}

std::optional<JsonAt> JsonAt::find(const std::string& key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end()) return std::nullopt;
  return JsonAt(*it, where_, json_path_child(path_, key));
}

JsonAt JsonAt::at(size_t i) const {
  expect_array();
  if (i >= j_->size()) fail("expected at least " + std::to_string(i + 1) + " elements, got " +
                            std::to_string(j_->size()));
  return JsonAt((*j_)[i], where_, json_path_child(path_, i));
}

size_t JsonAt::size() const {
  expect_array();
  return j_->size();
}

std::string JsonAt::string() const {
  if (!j_->is_string()) fail("expected a string, got " + json_describe(*j_));
  return j_->get<std::string>();
}

bool JsonAt::boolean() const {
  if (!j_->is_boolean()) fail("expected a boolean (true or false), got " + json_describe(*j_));
  return j_->get<bool>();
}

int64_t JsonAt::integer(int64_t lo, int64_t hi) const {
  if (!j_->is_number_integer()) {
    fail("expected an integer, got " + json_describe(*j_) + json_quoted_number_hint(*j_));
  }
  const bool too_big = j_->is_number_unsigned() &&
                       j_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t v = too_big ? 0 : j_->get<int64_t>();
  if (too_big || v < lo || v > hi) {
    fail("the integer " + json_shown(j_->dump()) + " is out of range (expected " +
         std::to_string(lo) + " to " + std::to_string(hi) + ")");
  }
  return v;
}

double JsonAt::number(double lo, double hi) const {
  if (!j_->is_number()) {
    fail("expected a number, got " + json_describe(*j_) + json_quoted_number_hint(*j_));
  }
  const double v = j_->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    const bool any = lo == std::numeric_limits<double>::lowest() && hi == std::numeric_limits<double>::max();
    fail("the number " + json_shown(j_->dump()) + " is out of range (expected " +
         (any ? std::string("a finite number") : nlohmann::json(lo).dump() + " to " + nlohmann::json(hi).dump()) +
         ")");
  }
  return v;
}

}  // namespace kopt
