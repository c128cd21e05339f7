// The shape-capture runtime of generated launch headers (docs/capture.md):
// with KOPT_CAPTURE set, launch_config() counts the sizes it is called with,
// and the counts are merged into a capture file at exit (a lock beside it,
// then an atomic rename). `kopt generate` copies the text between the
// kopt:embed markers, unchanged, into each header (gen/capture_code.h): the
// includes before its namespace, the runtime as kopt_<name>::capture after
// the three constants it declares for the kernel (kKernel, kSizes,
// kSizeNames). Here they are an example kernel's, so that this file compiles
// on its own and kopt's tests run it (tests/unit/test_capture.cpp; kopt reads
// the files it writes with spec::parse_capture).
//
// POSIX and the C++17 standard library only. Every name the runtime uses is
// qualified (std::, ::) or its own, so that a tuning parameter declared in
// the enclosing namespace (constexpr long long BM = ...) cannot change it.
#pragma once

// kopt:embed-begin capture_includes
// Shape capture (KOPT_CAPTURE): POSIX and the C++ standard library only.
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
// kopt:embed-end capture_includes

namespace kopt::gen::capture_example {

/// The kernel whose launches are counted, and its size names in the order of
/// launch_config()'s arguments (a launch header declares its own).
constexpr const char* kKernel = "example";
constexpr std::size_t kSizes = 3;
constexpr const char* kSizeNames[kSizes] = {"M", "N", "K"};

// kopt:embed-begin capture_runtime
using Tuple = std::array<long long, kSizes>;
using Counts = std::map<Tuple, unsigned long long>;
/// At most this many distinct size tuples are kept, in a process and in the file.
constexpr std::size_t kMaxShapes = 4096;

struct State {
  std::mutex mu;
  Counts counts;
  std::string file;
  bool dropped = false;  // a shape beyond kMaxShapes was not counted
};

/// This process's capture; null while capture is off (set once by state()).
inline State* g_state = nullptr;

/// One line on stderr, once per process; the application carries on.
inline void warn(const std::string& what) noexcept {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr, "kopt capture (%s): %s\n", kKernel, what.c_str());
}

inline unsigned long long add(unsigned long long a, unsigned long long b) noexcept {
  return a > std::numeric_limits<unsigned long long>::max() - b ? std::numeric_limits<unsigned long long>::max()
                                                                 : a + b;
}

inline std::string size_list() {
  std::string s;
  for (std::size_t i = 0; i < kSizes; ++i) s += (i ? ", " : "") + std::string(kSizeNames[i]);
  return s;
}

/// The capture file: $KOPT_CAPTURE_<kernel>, else $KOPT_CAPTURE, else the
/// compile definition KOPT_CAPTURE_FILE; "" (capture off) when none is set
/// or it is empty, 0 or off. "{kernel}" becomes the kernel's name; a folder
/// (one that exists, or a path ending in '/') gets <kernel>.capture.json.
inline std::string file_from_environment() {
  const std::string own = std::string("KOPT_CAPTURE_") + kKernel;
  const char* v = std::getenv(own.c_str());
  if (!v) v = std::getenv("KOPT_CAPTURE");
#ifdef KOPT_CAPTURE_FILE
  if (!v) v = KOPT_CAPTURE_FILE;
#endif
  if (!v) return std::string();
  std::string f = v;
  if (f.empty() || f == "0" || f == "off" || f == "OFF" || f == "Off") return std::string();
  const std::string tag = "{kernel}", name = kKernel;
  for (std::size_t p = f.find(tag); p != std::string::npos; p = f.find(tag, p + name.size())) f.replace(p, tag.size(), name);
  struct ::stat st;
  if (f.back() == '/' || (::stat(f.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
    if (f.back() != '/') f += '/';
    f += name + ".capture.json";
  }
  return f;
}

// A forked child starts with no counts of its own (its parent's are the
// parent's to write); the lock is held across fork() so that the child's copy
// of the counts is whole.
inline void fork_prepare() noexcept {
  if (g_state) g_state->mu.lock();
}
inline void fork_parent() noexcept {
  if (g_state) g_state->mu.unlock();
}
inline void fork_child() noexcept {
  if (!g_state) return;
  g_state->counts.clear();
  g_state->dropped = false;
  g_state->mu.unlock();
}

inline void flush() noexcept;
inline void flush_at_exit() { flush(); }

inline State* open_state() noexcept {
  try {
    std::string f = file_from_environment();
    if (f.empty()) return nullptr;
    State* s = new State();  // never deleted: launches may come from static destructors
    s->file = std::move(f);
    g_state = s;
    std::atexit(flush_at_exit);
    ::pthread_atfork(fork_prepare, fork_parent, fork_child);
    return s;
  } catch (...) {
    return nullptr;
  }
}

/// This process's capture, or null when capture is off: the environment is
/// read once, at the first call.
inline State* state() noexcept {
  static State* const s = open_state();
  return s;
}

/// Whether this process records its launches.
inline bool enabled() noexcept { return state() != nullptr; }

#if defined(__GNUC__) || defined(__clang__)
#define KOPT_CAPTURE_COLD __attribute__((noinline, cold))
#else
#define KOPT_CAPTURE_COLD
#endif

/// Counts one launch of capture `s` (kept out of line: launch_config() holds
/// only the check of record()).
KOPT_CAPTURE_COLD inline void count(State* s, const Tuple& t) noexcept {
  for (long long v : t)
    if (v < 1) return;  // a tuple with a size below 1 is no shape a workload can have
  try {
    std::lock_guard<std::mutex> lock(s->mu);
    const auto it = s->counts.find(t);
    if (it != s->counts.end()) {
      it->second = add(it->second, 1);
    } else if (s->counts.size() >= kMaxShapes) {
      s->dropped = true;
    } else {
      s->counts.emplace(t, 1ULL);
    }
  } catch (...) {
  }
}

/// Counts one launch with these sizes when capture is on.
inline void record(const Tuple& t) noexcept {
  if (State* s = state()) count(s, t);  // capture off: the static's guard, a load and a branch
}

// ---- Reading an existing capture file: a small JSON reader. ----

struct Value {
  enum Kind { null_v, bool_v, number_v, string_v, array_v, object_v } kind = null_v;
  std::string text;             // string_v
  bool whole = false;           // number_v: a whole number >= 0 that fits in 64 bits
  unsigned long long u = 0;     // ... and its value
  std::vector<Value> items;     // array_v
  std::vector<std::pair<std::string, Value>> members;  // object_v
  const Value* get(const char* key) const {
    for (const auto& m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

class Reader {
 public:
  Reader(const char* p, const char* e) : p_(p), e_(e) {}
  bool document(Value& v) {
    if (!value(v, 0)) return false;
    space();
    return p_ == e_;
  }

 private:
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  void space() {
    while (p_ < e_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (static_cast<std::size_t>(e_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  bool string(std::string& out) {
    if (p_ == e_ || *p_ != '"') return false;
    ++p_;
    while (p_ < e_ && *p_ != '"') {
      char c = *p_++;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ == e_) return false;
      c = *p_++;
      switch (c) {
        case '"': case '\\': case '/': out += c; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          for (int i = 0; i < 4; ++i, ++p_)
            if (p_ == e_ || !((*p_ >= '0' && *p_ <= '9') || (*p_ >= 'a' && *p_ <= 'f') || (*p_ >= 'A' && *p_ <= 'F')))
              return false;
          out += '?';  // names in a capture are identifiers: nothing to keep here
          break;
        default: return false;
      }
    }
    if (p_ == e_) return false;
    ++p_;
    return true;
  }
  bool number(Value& v) {
    bool negative = false, fraction = false, fits = true;
    if (p_ < e_ && *p_ == '-') {
      negative = true;
      ++p_;
    }
    const char* first = p_;
    unsigned long long u = 0;
    for (; p_ < e_ && digit(*p_); ++p_) {
      const unsigned d = static_cast<unsigned>(*p_ - '0');
      if (u > (std::numeric_limits<unsigned long long>::max() - d) / 10) fits = false;
      else u = u * 10 + d;
    }
    if (p_ == first) return false;
    if (p_ < e_ && *p_ == '.') {
      fraction = true;
      const char* f = ++p_;
      while (p_ < e_ && digit(*p_)) ++p_;
      if (p_ == f) return false;
    }
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      fraction = true;
      ++p_;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      const char* x = p_;
      while (p_ < e_ && digit(*p_)) ++p_;
      if (p_ == x) return false;
    }
    v.kind = Value::number_v;
    v.whole = !negative && !fraction && fits;
    v.u = u;
    return true;
  }
  bool value(Value& v, int depth) {
    if (depth > 32) return false;
    space();
    if (p_ == e_) return false;
    const char c = *p_;
    if (c == '{' || c == '[') {
      const bool object = c == '{';
      const char close = object ? '}' : ']';
      v.kind = object ? Value::object_v : Value::array_v;
      ++p_;
      space();
      if (p_ < e_ && *p_ == close) {
        ++p_;
        return true;
      }
      for (;;) {
        space();
        Value* slot = nullptr;
        if (object) {
          std::string key;
          if (!string(key)) return false;
          space();
          if (p_ == e_ || *p_ != ':') return false;
          ++p_;
          v.members.emplace_back(std::move(key), Value());
          slot = &v.members.back().second;
        } else {
          v.items.emplace_back();
          slot = &v.items.back();
        }
        if (!value(*slot, depth + 1)) return false;
        space();
        if (p_ == e_) return false;
        if (*p_ == ',') {
          ++p_;
          continue;
        }
        if (*p_ != close) return false;
        ++p_;
        return true;
      }
    }
    if (c == '"') {
      v.kind = Value::string_v;
      return string(v.text);
    }
    if (c == 't' || c == 'f') {
      v.kind = Value::bool_v;
      return word(c == 't' ? "true" : "false");
    }
    if (c == 'n') return word("null");
    return number(v);
  }
  const char* p_;
  const char* e_;
};

/// Adds the launches of capture-file text to `counts`. Returns "" when they
/// were added, else why not; `other` is set when the text is a capture of
/// another kernel, other sizes or another format (to be left alone).
inline std::string merge_text(const std::string& text, Counts& counts, bool& other) {
  Value doc;
  Reader reader(text.data(), text.data() + text.size());
  if (!reader.document(doc)) return "not valid JSON";
  if (doc.kind != Value::object_v) return "not a JSON object";
  const Value* version = doc.get("kopt_capture");
  if (!version || version->kind != Value::number_v) return "no \"kopt_capture\": 1";
  if (!version->whole || version->u != 1) {
    other = true;
    return "it is a capture of another format than 1";
  }
  const Value* kernel = doc.get("kernel");
  const Value* sizes = doc.get("sizes");
  const Value* launches = doc.get("launches");
  if (!kernel || kernel->kind != Value::string_v) return "no \"kernel\" name";
  if (!sizes || sizes->kind != Value::array_v) return "no \"sizes\" list";
  if (!launches || launches->kind != Value::array_v) return "no \"launches\" list";
  if (kernel->text != kKernel) {
    other = true;
    return "it holds the launches of kernel '" + kernel->text.substr(0, 60) + "'";
  }
  bool same = sizes->items.size() == kSizes;
  for (std::size_t i = 0; same && i < kSizes; ++i) {
    bool listed = false;
    for (const Value& s : sizes->items) listed = listed || (s.kind == Value::string_v && s.text == kSizeNames[i]);
    same = listed;
  }
  if (!same) {
    other = true;
    return "its sizes are not " + size_list();
  }
  Counts found;
  for (const Value& l : launches->items) {
    if (l.kind != Value::object_v) return "a launch that is not an object";
    const Value* ls = l.get("sizes");
    const Value* n = l.get("count");
    if (!ls || ls->kind != Value::object_v || ls->members.size() != kSizes) return "a launch without its sizes";
    if (!n || n->kind != Value::number_v || !n->whole || n->u < 1) return "a launch without a count of 1 or more";
    Tuple t;
    for (std::size_t i = 0; i < kSizes; ++i) {
      const Value* x = ls->get(kSizeNames[i]);
      if (!x || x->kind != Value::number_v || !x->whole || x->u < 1 ||
          x->u > static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
        return std::string("a launch whose size ") + kSizeNames[i] + " is not a whole number of 1 or more";
      t[i] = static_cast<long long>(x->u);
    }
    found[t] = add(found[t], n->u);
  }
  for (const auto& e : found) counts[e.first] = add(counts[e.first], e.second);
  return std::string();
}

/// Most frequent first; ties in size order.
inline std::vector<std::pair<Tuple, unsigned long long>> ranked(const Counts& counts) {
  std::vector<std::pair<Tuple, unsigned long long>> v(counts.begin(), counts.end());
  std::stable_sort(v.begin(), v.end(), [](const std::pair<Tuple, unsigned long long>& a,
                                          const std::pair<Tuple, unsigned long long>& b) { return a.second > b.second; });
  return v;
}

inline std::string to_text(const std::vector<std::pair<Tuple, unsigned long long>>& shapes) {
  std::string out = std::string("{\"kopt_capture\": 1, \"kernel\": \"") + kKernel + "\", \"sizes\": [";
  for (std::size_t i = 0; i < kSizes; ++i) out += (i ? ", \"" : "\"") + std::string(kSizeNames[i]) + "\"";
  out += "],\n \"launches\": [";
  for (std::size_t j = 0; j < shapes.size(); ++j) {
    out += j ? ",\n  {\"sizes\": {" : "\n  {\"sizes\": {";
    for (std::size_t i = 0; i < kSizes; ++i)
      out += (i ? ", \"" : "\"") + std::string(kSizeNames[i]) + "\": " + std::to_string(shapes[j].first[i]);
    out += "}, \"count\": " + std::to_string(shapes[j].second) + "}";
  }
  out += shapes.empty() ? "]}\n" : "\n ]}\n";
  return out;
}

/// 0: read into `out`; ENOENT: no such file; another errno: cannot read it.
inline int read_all(const std::string& file, std::string& out) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (std::size_t{64} << 20)) {
      ::close(fd);
      return EFBIG;
    }
  }
  ::close(fd);
  return 0;
}

/// Writes `text` to `file` atomically (a temporary file beside it, then
/// rename()). Returns 0 or the errno.
inline int write_atomically(const std::string& file, const std::string& text) {
  const std::string tmp = file + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), file.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return e;
  }
  return 0;
}

/// Under the lock: reads the file, adds `mine`, writes it back. Returns ""
/// or the one line to say.
inline std::string merge_locked(const std::string& file, Counts mine, bool dropped) {
  const std::string lost = "; these launches are not recorded";
  std::string text, note;
  const int err = read_all(file, text);
  if (err == 0) {
    bool other = false;
    Counts merged = mine;
    const std::string bad = merge_text(text, merged, other);
    if (bad.empty()) {
      mine.swap(merged);
    } else if (other) {
      return file + ": " + bad + ", not of " + kKernel + " (" + size_list() +
             "): left as it is" + lost + " (give each kernel its own file: KOPT_CAPTURE=<folder>/{kernel}.capture.json)";
    } else {
      const std::string aside = file + ".corrupt";
      if (::rename(file.c_str(), aside.c_str()) != 0)
        return file + ": not a capture file (" + bad + ") and cannot be moved aside (" + std::strerror(errno) + ")" + lost;
      note = file + ": was not a capture file (" + bad + "); moved it to " + aside + " and started a new one";
    }
  } else if (err != ENOENT) {
    return file + ": cannot read it (" + std::strerror(err) + ")" + lost;
  }
  std::vector<std::pair<Tuple, unsigned long long>> shapes = ranked(mine);
  if (shapes.size() > kMaxShapes) {
    shapes.resize(kMaxShapes);
    dropped = true;
  }
  if (const int e = write_atomically(file, to_text(shapes))) return file + ": cannot write it (" + std::strerror(e) + ")" + lost;
  if (note.empty() && dropped)
    note = file + ": more than " + std::to_string(kMaxShapes) + " distinct shapes; the least frequent are not recorded";
  return note;
}

inline void merge_into(const std::string& file, Counts mine, bool dropped) {
  const std::string lock_name = file + ".lock";
  const int lock = ::open(lock_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock < 0) {
    warn(file + ": cannot create its lock file " + lock_name + " (" + std::strerror(errno) +
         "); these launches are not recorded");
    return;
  }
  while (::flock(lock, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    warn(file + ": cannot lock " + lock_name + " (" + std::strerror(errno) + "); these launches are not recorded");
    ::close(lock);
    return;
  }
  const std::string said = merge_locked(file, std::move(mine), dropped);
  ::flock(lock, LOCK_UN);
  ::close(lock);
  if (!said.empty()) warn(said);
}

/// Adds this process's counts to the capture file and starts counting
/// afresh. Runs at exit (std::atexit); a program that never exits (a server)
/// may call it now and then. Never throws; a problem is one line on stderr.
inline void flush() noexcept {
  State* s = state();
  if (!s) return;
  try {
    Counts mine;
    bool dropped = false;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      mine.swap(s->counts);
      dropped = s->dropped;
      s->dropped = false;
    }
    if (mine.empty()) return;
    merge_into(s->file, std::move(mine), dropped);
  } catch (...) {
    warn("cannot record the launches (out of memory)");
  }
}
// kopt:embed-end capture_runtime

}  // namespace kopt::gen::capture_example
