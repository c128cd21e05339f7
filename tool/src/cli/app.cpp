#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "spec/inputs.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/suggest.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

/// Help text at most this many columns wide.
constexpr size_t kHelpColumns = 100;
/// The width of the option-name column of the help text.
constexpr size_t kHelpNameColumn = 30;

/// `text` with line breaks between words so that no line is longer than
/// `width` (a word longer than that stays whole, on a line of its own).
std::string wrap_words(const std::string& text, size_t width) {
  std::string out, line;
  auto flush = [&] {
    out += (out.empty() ? "" : "\n") + line;
    line.clear();
  };
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {  // a break the author wrote is kept
      flush();
      ++i;
      continue;
    }
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const size_t end = text.find_first_of(" \n", i);
    const std::string word = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (!line.empty() && line.size() + 1 + word.size() > width) flush();
    line += (line.empty() ? "" : " ") + word;
    i = end == std::string::npos ? text.size() : end;
  }
  if (!line.empty()) flush();
  return out;
}

/// CLI11's help, wrapped at kHelpColumns, without CLI11's flag syntax in
/// option names ("--no-specialize{false}" is shown as "--no-specialize").
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kHelpNameColumn); }
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t open; (open = name.find('{')) != std::string::npos;) {
      const size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap_words(opt->get_description(), kHelpColumns - kHelpNameColumn);
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    // As CLI11 lays out a name and its text (without its detail:: helper,
    // which CLI11 versions declare differently).
    std::string name = "  " + sub->get_display_name(true);
    std::string out = name;
    const std::string indent(kHelpNameColumn, ' ');
    if (name.size() >= kHelpNameColumn)
      out += "\n" + indent;
    else
      out += std::string(kHelpNameColumn - name.size(), ' ');
    const std::string text = wrap_words(sub->get_description(), kHelpColumns - kHelpNameColumn);
    for (char c : text) out += c == '\n' ? "\n" + indent : std::string(1, c);
    return out + "\n";
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string d = app->get_description();
    return d.empty() ? std::string() : wrap_words(d, kHelpColumns) + "\n";
  }
};

/// The long and short names of `sub`'s options ("--budget", "-q"), for "did you mean".
std::vector<std::string> option_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
}

/// `arg` ("--verison", "-spec=x") as a message: an unknown option with the
/// closest of `known`. A long option written with one dash ("-spec" for
/// "--spec") is said to be one.
std::string unknown_option(const std::string& arg, const std::vector<std::string>& known) {
  const std::string name = arg.substr(0, arg.find('='));
  if (name.size() > 2 && name[1] != '-' && std::find(known.begin(), known.end(), "-" + name) != known.end())
    return quote(name) + " is not an option: long options take two dashes (did you mean " + quote("-" + name) + "?)";
  return "unknown option " + quote(name) + util::did_you_mean(name, known);
}

/// The first argument of `sub` that CLI11 could not place and that looks
/// like an option, as unknown_option() says it; empty when there is none.
std::string unexpected_option(const CLI::App& sub) {
  for (const std::string& arg : sub.remaining())
    if (arg.size() >= 2 && arg[0] == '-') return unknown_option(arg, option_names(sub));
  return {};
}

/// The first argument of `sub` that CLI11 could not place, as a message: an
/// unknown option with the closest known one, or a stray value.
std::string unexpected_argument(const CLI::App& sub) {
  const std::string option = unexpected_option(sub);
  if (!option.empty()) return option;
  const std::vector<std::string> rest = sub.remaining();
  return rest.empty() ? std::string() : "unexpected argument " + quote(rest.front());
}

/// An error as one line on stderr: "kopt: <message>", the message clipped
/// (no message may flood the terminal, whatever it echoes).
void print_error(const std::string& message) { std::cerr << "kopt: " << clip(message, 2000) << "\n"; }

/// An error that ends a command after SIGINT/SIGTERM was received (a command
/// that winds down on it, `optimize`, returns 130/143 itself): it may be the
/// signal's doing, and the exit code says that the run was stopped.
int code_after(int code) {
  const int sig = util::interrupt_signal();
  return sig ? util::interrupt_exit_code(sig) : code;
}

/// Runs the command; an exception becomes its message on stderr and an exit code.
int run_reporting_errors(Command& command) {
  try {
    const std::string name = command.name();
    if (name == "optimize" || name == "evaluate" || name == "bench") spec::input_threads_cap();
    return command.run();
  } catch (const util::Interrupted& e) {
    print_error(e.what());
    return util::interrupt_exit_code(e.signal());
  } catch (const NoDeviceError& e) {
    print_error(e.what());
    return code_after(kNoDevice);
  } catch (const SpecError& e) {
    print_error(e.what());
    return code_after(kUsage);
  } catch (const UsageError& e) {
    print_error(e.what());
    return code_after(kUsage);
  } catch (const std::exception& e) {
    print_error(e.what());
    return code_after(kEnvironment);
  }
}

/// A command-line error CLI11 found, as one line with an id:
/// "kopt: [kopt.cli.010] --top: expected ... (kopt optimize --help)".
int report_parse_error(const CLI::ParseError& e, const std::string& command, const CLI::App* sub) {
  const char* id = "kopt.cli.013";  // anything else (options that exclude each other, ...)
  if (dynamic_cast<const CLI::ValidationError*>(&e) || dynamic_cast<const CLI::ConversionError*>(&e) ||
      dynamic_cast<const CLI::ArgumentMismatch*>(&e))
    id = "kopt.cli.010";
  else if (dynamic_cast<const CLI::ExtrasError*>(&e))
    id = "kopt.cli.011";
  else if (dynamic_cast<const CLI::RequiredError*>(&e))
    id = "kopt.cli.012";
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) && sub) {  // CLI11 lists the extras backwards, without a hint
    const std::string better = unexpected_argument(*sub);
    if (!better.empty()) what = better;
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) && sub) {
    // "-spec x.json" leaves --spec missing: the mistyped option is the news.
    const std::string better = unexpected_option(*sub);
    if (!better.empty()) {
      id = "kopt.cli.011";
      what = better;
    }
  }
  print_error(std::string("[") + id + "] " + what + " (see kopt " + (command.empty() ? "" : command + " ") +
              "--help)");
  return kUsage;
}

}  // namespace

App::App() {
  commands_.push_back(make_devices_command());
  commands_.push_back(make_evaluate_command());
  commands_.push_back(make_optimize_command());
  commands_.push_back(make_generate_command());
  commands_.push_back(make_bench_command());
  commands_.push_back(make_export_command());
  commands_.push_back(make_report_command());
  commands_.push_back(make_replay_command());
  commands_.push_back(make_worker_command());
  commands_.push_back(make_compile_worker_command());
}

int App::run(int argc, char** argv) {
  CLI::App app{"kopt - KernelOptimizer: compile, check, time and tune single CUDA kernels.\n"
               "Exit codes: 0 ok, 1 candidate rejected, 2 usage or spec error, 3 environment error, "
               "77 no CUDA device, 130/143 stopped by SIGINT/SIGTERM."};
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  app.require_subcommand(1);
  std::vector<CLI::App*> subs;
  std::vector<std::string> names;
  for (const auto& c : commands_) {
    subs.push_back(app.add_subcommand(c->name(), c->description()));
    c->add_options(*subs.back());
    names.push_back(c->name());
  }
  std::string listed;
  for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
  if (argc >= 2 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    // Checked before CLI11 parses: "kopt replay --help" would print the
    // general help and exit 0, as if the subcommand existed.
    print_error("[kopt.cli.011] unknown subcommand " + quote(argv[1]) + util::did_you_mean(argv[1], names) +
                " (subcommands: " + listed + "; see kopt --help)");
    return kUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string command;
    const CLI::App* sub = nullptr;
    for (size_t i = 0; i < commands_.size(); ++i)
      if (subs[i]->parsed()) {
        command = commands_[i]->name();
        sub = subs[i];
      }
    if (command.empty()) {  // CLI11 only says "A subcommand is required"
      if (argc < 2)
        print_error("[kopt.cli.012] give a subcommand: " + listed + " (see kopt --help)");
      else
        print_error("[kopt.cli.011] " + unknown_option(argv[1], option_names(app)) + " (subcommands: " +
                    listed + "; see kopt --help)");
      return kUsage;
    }
    return report_parse_error(e, command, sub);
  }
  for (size_t i = 0; i < commands_.size(); ++i)
    if (*subs[i]) return run_reporting_errors(*commands_[i]);
  return kUsage;
}

}  // namespace kopt::cli
