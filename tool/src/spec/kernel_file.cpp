#include "spec/kernel_file.h"

#include <sstream>

#include "spec/local_include.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::spec {
namespace {

constexpr const char* kAnnotation = "// kopt:";               // 8 characters
constexpr const char* kSuperseded = "// kopt-superseded:";
constexpr const char* kVariantAnnotation = "// kopt-variant:";    // 16 characters
constexpr const char* kVariantMarker = "// ===== variant ";
constexpr const char* kTrailerLine = "// ---- kopt: the entry and launch this candidate was evaluated with ----";

/// `source` line by line through `f` (which may rewrite the line), joined
/// again with "\n"; a final newline of `source` stays.
template <class F>
std::string map_lines(const std::string& source, F f) {
  std::istringstream in(source);
  std::string out;
  bool first = true;
  for (std::string line; std::getline(in, line);) {
    f(line);
    if (!first) out += "\n";
    out += line;
    first = false;
  }
  if (!source.empty() && source.back() == '\n') out += "\n";
  return out;
}

std::string expr_or(const Expr& e, const char* dflt) { return e.empty() ? std::string(dflt) : e.text(); }

}  // namespace

// ---------------------------------------------------------------------------
// Parse

std::optional<Launch> annotated_launch(const Annotations& a) {
  if (!a.grid && !a.block && !a.shared_bytes) return std::nullopt;
  Launch l;
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = a.grid ? (*a.grid)[i] : Expr::constant(1);
    l.block[i] = a.block ? (*a.block)[i] : Expr::constant(1);
  }
  l.shared_bytes = a.shared_bytes ? *a.shared_bytes : Expr::constant(0);
  if (a.static_shared_bytes) l.static_shared_bytes = *a.static_shared_bytes;
  l.origin = {a.origin, a.grid_line, a.block_line, a.shared_line, a.static_shared_line};
  return l;
}

namespace {

Candidate candidate_with(const std::string& text, const std::string& name, const Annotations& a) {
  Candidate c;
  c.source = text;
  c.source_name = name;
  c.label = name;
  if (a.entry) c.entry = *a.entry;
  c.launch = annotated_launch(a);
  c.options = a.options;
  c.params = a.params;
  return c;
}

std::vector<Candidate> variants_of(Candidate whole, const std::string& name, const std::string& origin);

}  // namespace

Candidate candidate_from_text(const std::string& text, const std::string& name, const std::string& origin) {
  return candidate_with(text, name, parse_annotations(text, origin));
}

Candidate candidate_from_file(const std::filesystem::path& file) {
  const std::string own = fs::read_file(file, "kernel source", fs::kSourceMaxBytes);
  const ExpandedSource x = expand_local_includes(own, file);
  // The file's own annotations before those of files it includes.
  return candidate_with(x.text, file.filename().string(), kernel_annotations(own, x, fs::display(file)));
}

std::vector<Candidate> candidates_from_text(const std::string& text, const std::string& name,
                                            const std::string& origin) {
  return variants_of(candidate_from_text(text, name, origin), name, origin);
}

std::vector<Candidate> candidates_from_file(const std::filesystem::path& file) {
  return variants_of(candidate_from_file(file), file.filename().string(), fs::display(file));
}

namespace {

std::vector<Candidate> variants_of(Candidate whole, const std::string& name, const std::string& origin) {
  const std::vector<VariantBlock> blocks = split_variants(whole.source, origin);
  if (blocks.empty()) return {whole};
  std::vector<Candidate> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Annotations& a = blocks[i].annotations;
    Candidate c = whole;
    c.label = name + " (variant " + std::to_string(i) + ")";
    c.entry = *a.entry + "_v" + std::to_string(i);
    Launch l;
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = (*a.grid)[d];
      l.block[d] = (*a.block)[d];
    }
    l.shared_bytes = a.shared_bytes ? *a.shared_bytes : Expr::constant(0);
    l.origin = {a.origin, a.grid_line, a.block_line, a.shared_line, 0};
    c.launch = l;
    c.params = a.params;
    c.options = whole.options;  // the file's kopt:options line (every variant shares them)
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Write: annotation lines

std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  return out;
}

std::string entry_annotation(const std::string& entry) { return std::string(kAnnotation) + "entry " + entry; }

std::vector<std::string> launch_annotation_lines(const Launch& l) {
  return {std::string(kAnnotation) + "grid " + expr_or(l.grid[0], "1") + ", " + expr_or(l.grid[1], "1") + ", " +
              expr_or(l.grid[2], "1"),
          std::string(kAnnotation) + "block " + expr_or(l.block[0], "1") + ", " + expr_or(l.block[1], "1") + ", " +
              expr_or(l.block[2], "1"),
          std::string(kAnnotation) + "shared " + expr_or(l.shared_bytes, "0")};
}

std::string options_annotation(const std::vector<std::string>& options) {
  if (options.empty()) return "";
  std::string s = std::string(kAnnotation) + "options";
  for (const auto& o : options) s += " " + o;
  return s;
}

std::string param_annotation(const std::string& name, int64_t value) {
  return std::string(kAnnotation) + "param " + name + "=" + std::to_string(value);
}

std::string param_defines(const std::map<std::string, int64_t>& params) {
  std::string s;
  for (const auto& [name, v] : params)
    s += "#ifndef " + name + "\n#define " + name + " " + std::to_string(v) + "\n#endif\n";
  return s;
}

std::string with_missing_annotations(const std::string& source, const std::string& origin, const std::string& entry,
                                     const Launch& launch) {
  const Annotations a = parse_annotations(source, origin);
  const std::vector<std::string> l = launch_annotation_lines(launch);
  std::string head;
  if (!a.entry) head += entry_annotation(entry) + "\n";
  if (!a.grid) head += l[0] + "\n";
  if (!a.block) head += l[1] + "\n";
  if (!a.shared_bytes) head += l[2] + "\n";
  return head + source;
}

// ---------------------------------------------------------------------------
// Write: self-contained kernel files

std::string header_block(const KernelFileHeader& h) {
  std::string s = "// " + h.title + "\n";
  for (const auto& [name, value] : h.fields) {
    std::string label = name + ":";
    label += std::string(label.size() < 11 ? 11 - label.size() : 1, ' ');
    s += "// " + label + value + "\n";
  }
  return s + "//\n";
}

std::vector<std::string> header_annotation_lines(const SelfContainedKernel& k) {
  // Keys given here supersede the same keys in the source.
  std::vector<std::string> ann;
  if (!k.entry.empty()) ann.push_back(entry_annotation(one_line(k.entry)));
  bool has_options = false;
  for (std::string l : k.launch_lines) {
    l = one_line(l);
    const auto b0 = l.find_first_not_of(' ');
    if (b0 == std::string::npos) continue;
    l = l.substr(b0);
    if (l.rfind("//", 0) != 0) l = "// " + l;
    if (l.find("// kopt:options") != std::string::npos) has_options = true;
    ann.push_back(l);
  }
  if (!has_options) {
    std::string opts;
    for (const std::string& opt : k.compile_options) {
      // -DNAME=... of a tuning parameter is already a #define of the file.
      bool is_param = false;
      for (const auto& [name, v] : k.params) {
        (void)v;
        if (opt.rfind("-D" + name + "=", 0) == 0 || opt == "-D" + name) is_param = true;
      }
      if (!is_param) opts += (opts.empty() ? "" : " ") + one_line(opt);
    }
    if (!opts.empty()) ann.push_back(std::string(kAnnotation) + "options " + opts);
  }
  for (const auto& [name, v] : k.params) ann.push_back(param_annotation(name, v));
  return ann;
}

std::string self_contained_kernel_file(const SelfContainedKernel& k) {
  std::string o = header_block(k.header);
  const std::vector<std::string> ann = header_annotation_lines(k);
  for (const std::string& l : ann) o += l + "\n";
  if (!k.params.empty()) o += "\n" + param_defines(k.params);
  o += "\n";
  // What the header sets: annotation keys, and parameter names for kopt:param.
  // The source's lines for the same keys (names) are neutralised, so that a
  // reader (and the annotation parser, whatever its precedence) sees one value.
  std::set<std::string> keys, names;
  for (const std::string& l : ann) {
    const std::string key = annotation_key(l);
    if (!key.empty() && key != "param") keys.insert(key);
  }
  for (const auto& [name, v] : k.params) {
    (void)v;
    names.insert(name);
  }
  const std::string body = supersede_annotations(k.source, keys, names);
  o += body;
  if (body.empty() || body.back() != '\n') o += "\n";
  return o;
}

// ---------------------------------------------------------------------------
// Supersede

std::string annotation_key(const std::string& line, std::string* param) {
  const auto p = line.find(kAnnotation);
  if (p == std::string::npos) return "";
  const std::string rest = line.substr(p + 8);
  const auto sp = rest.find_first_of(" \t");
  const std::string key = rest.substr(0, sp);
  if (key == "param" && param && sp != std::string::npos) {
    std::string v = rest.substr(sp);
    v = v.substr(0, v.find('='));
    const auto b0 = v.find_first_not_of(" \t"), e0 = v.find_last_not_of(" \t");
    *param = b0 == std::string::npos ? "" : v.substr(b0, e0 - b0 + 1);
  }
  return key;
}

std::string supersede_annotations(const std::string& source, const std::set<std::string>& keys,
                                  const std::set<std::string>& params) {
  return map_lines(source, [&](std::string& line) {
    std::string param;
    const std::string key = annotation_key(line, &param);
    if (!key.empty() && (keys.count(key) || (key == "param" && params.count(param)))) {
      const auto p = line.find(kAnnotation);
      line = line.substr(0, p) + kSuperseded + line.substr(p + 8);
    }
  });
}

std::string neutralise_annotations(const std::string& source) {
  return map_lines(source, [](std::string& line) {
    const size_t p = line.find_first_not_of(" \t");
    if (p == std::string::npos || line.compare(p, 2, "//") != 0) return;
    const size_t q = line.find_first_not_of(" \t", p + 2);
    if (q == std::string::npos || line.compare(q, 5, "kopt:") != 0) return;
    const std::string key = line.substr(q + 5, line.find_first_of(" \t", q + 5) - (q + 5));
    if (key == "entry" || key == "grid" || key == "block" || key == "shared" || key == "options")
      line.replace(q, 5, "kopt-superseded:");
  });
}

std::string evaluated_with_trailer(const std::string& entry, const Launch& launch,
                                   const std::vector<std::string>& options) {
  std::string s = std::string(kTrailerLine) + "\n" + entry_annotation(entry) + "\n";
  for (const auto& l : launch_annotation_lines(launch)) s += l + "\n";
  if (!options.empty()) s += options_annotation(options) + "\n";
  return s;
}

std::string with_evaluated_trailer(const std::string& source, const std::string& entry, const Launch& launch,
                                   const std::vector<std::string>& options) {
  std::string s = neutralise_annotations(source);
  if (!source.empty() && source.back() != '\n') s += "\n";
  return s + evaluated_with_trailer(entry, launch, options);
}

// ---------------------------------------------------------------------------
// Variants

std::string variant_entry(const std::string& entry, size_t i, size_t n) {
  return n == 1 ? entry : entry + "_v" + std::to_string(i);
}

Annotations parse_variant_annotations(const std::string& source, const std::string& origin) {
  const Annotations a = parse_annotations(source, origin);
  if (!a.entry || !a.grid || !a.block)
    throw SpecError("kopt.gen.101", origin + ": the kernel needs kopt:entry, kopt:grid and kopt:block lines");
  return a;
}

std::string join_variants(const std::vector<VariantSource>& variants) {
  if (variants.empty()) throw UsageError("kopt.gen.105", "no kernel to generate");
  if (variants.size() == 1) return variants[0].source;
  std::vector<Annotations> ann;
  std::set<std::string> params;
  for (const auto& v : variants) {
    ann.push_back(parse_variant_annotations(v.source, v.origin));
    for (const auto& [k, x] : ann.back().params) params.insert(k);
  }
  const size_t n = variants.size();
  for (size_t i = 1; i < n; ++i)
    if (ann[i].options != ann[0].options)
      throw SpecError("kopt.gen.110", variants[i].origin + ": variant " + std::to_string(i) +
                                          " has other compile options than variant 0; one file compiles all variants "
                                          "with one set of options");
  std::ostringstream o;
  // Variant 0's annotations under its renamed entry, so that kopt evaluate /
  // kopt bench on this file check and time the best single configuration.
  const Annotations& a0 = ann[0];
  o << "// " << n << " shape-specialised variants of " << *a0.entry << " (entry points " << *a0.entry << "_v0.."
    << *a0.entry << "_v" << n - 1 << "); the launch header chooses among them by size.\n"
    << "// The kopt: lines describe variant 0, the best single configuration.\n"
    << entry_annotation(variant_entry(*a0.entry, 0, n)) << "\n";
  for (const auto& l : launch_annotation_lines(*annotated_launch(a0))) o << l << "\n";
  if (!a0.options.empty()) o << options_annotation(a0.options) << "\n";
  for (const auto& [k, v] : a0.params) o << param_annotation(k, v) << "\n";
  // #include lines move to the top: each variant body sits in a namespace.
  std::set<std::string> includes;
  std::vector<std::string> bodies;
  for (const auto& v : variants) {
    std::istringstream in(v.source);
    std::string line, body;
    while (std::getline(in, line)) {
      const auto b = line.find_first_not_of(" \t");
      if (b != std::string::npos && line.compare(b, 8, "#include") == 0) {
        includes.insert(line.substr(b));
        continue;
      }
      // Only the header above speaks for the file.
      const auto p = line.find(kAnnotation);
      if (p != std::string::npos) line = line.substr(0, p) + kVariantAnnotation + line.substr(p + 8);
      body += line + "\n";
    }
    bodies.push_back(body);
  }
  o << "\n";
  for (const auto& inc : includes) o << inc << "\n";
  for (size_t i = 0; i < n; ++i) {
    o << "\n" << kVariantMarker << i << ": " << variants[i].label << " =====\n";
    for (const auto& k : params) o << "#undef " << k << "\n";
    o << "#define " << *ann[i].entry << " " << variant_entry(*ann[i].entry, i, n) << "\n"
      << "namespace kopt_variant_" << i << " {\n"
      << bodies[i] << "}  // namespace kopt_variant_" << i << "\n"
      << "#undef " << *ann[i].entry << "\n"
      // extern "C": one symbol whatever the namespace; this makes the
      // unqualified name (kopt evaluate's NVRTC name expression) find it.
      << "using kopt_variant_" << i << "::" << variant_entry(*ann[i].entry, i, n) << ";\n";
  }
  for (const auto& k : params) o << "#undef " << k << "\n";
  return o.str();
}

std::vector<VariantBlock> split_variants(const std::string& text, const std::string& origin) {
  const std::string marker = kVariantMarker;
  std::vector<size_t> starts;
  for (size_t p = text.find(marker); p != std::string::npos; p = text.find(marker, p + 1))
    if (p == 0 || text[p - 1] == '\n') starts.push_back(p);
  if (starts.size() < 2) return {};
  std::vector<VariantBlock> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    std::string section = text.substr(starts[i], (i + 1 < starts.size() ? starts[i + 1] : text.size()) - starts[i]);
    for (size_t p = section.find(kVariantAnnotation); p != std::string::npos; p = section.find(kVariantAnnotation, p + 1))
      section.replace(p, 16, kAnnotation);
    VariantBlock b;
    b.annotations = parse_annotations(section, origin + " (variant " + std::to_string(i) + ")");
    if (!b.annotations.entry || !b.annotations.grid || !b.annotations.block)
      throw SpecError("kopt.annot.405", origin + ": variant " + std::to_string(i) +
                                            " lacks its kopt-variant:entry/grid/block lines");
    // The marker line: "// ===== variant <i>: <label> =====".
    const std::string first = section.substr(0, section.find('\n'));
    const auto colon = first.find(": ", marker.size());
    const std::string tail = " =====";
    if (colon != std::string::npos && first.size() >= colon + 2 + tail.size() &&
        first.compare(first.size() - tail.size(), tail.size(), tail) == 0)
      b.label = first.substr(colon + 2, first.size() - tail.size() - colon - 2);
    // The body: the lines between "namespace kopt_variant_<i> {" and its end.
    const std::string open = "\nnamespace kopt_variant_" + std::to_string(i) + " {\n";
    const std::string close = "}  // namespace kopt_variant_" + std::to_string(i) + "\n";
    const auto ob = section.find(open);
    if (ob != std::string::npos) {
      const auto from = ob + open.size();
      const auto ce = section.rfind("\n" + close);  // the body's last newline, or open's own
      if (ce != std::string::npos && ce + 1 >= from) b.body = section.substr(from, ce + 1 - from);
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace kopt::spec
