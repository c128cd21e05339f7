#include "eval/evaluator_pool.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <iostream>
#include <set>
#include <stdexcept>
#include <system_error>

#include "util/error.h"
#include "util/process.h"

namespace kopt::eval {
namespace {

/// Every "{key}" in `word` replaced by `value`.
std::string replace_all(std::string word, const std::string& key, const std::string& value) {
  for (size_t pos = 0; (pos = word.find(key, pos)) != std::string::npos; pos += value.size())
    word.replace(pos, key.size(), value);
  return word;
}

/// True for an exception that says the slot's worker (or its link, or its
/// GPU) is gone, not the candidate or the spec: a worker that cannot be
/// started or answered no hello, or found no device.
bool is_device_loss(const std::exception_ptr& e, std::string* why) {
  try {
    std::rethrow_exception(e);
  } catch (const NoDeviceError& x) {
    *why = x.what();
    return true;
  } catch (const EnvironmentError& x) {
    if (x.id().rfind("kopt.worker.", 0) != 0) return false;
    *why = x.what();
    return true;
  } catch (...) {
  }
  return false;
}

}  // namespace

std::vector<std::string> split_launcher(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (ch == '\'' || ch == '"') {
      // '...' takes everything literally; in "..." a backslash escapes the next character.
      size_t end = i + 1;
      std::string inner;
      for (; end < text.size() && text[end] != ch; ++end) {
        if (ch == '"' && text[end] == '\\' && end + 1 < text.size()) ++end;
        inner += text[end];
      }
      if (end >= text.size())
        throw UsageError("kopt.pool.002", std::string("--worker-launcher: the quote ") + ch + " at character " +
                                              std::to_string(i + 1) + " is not closed");
      word += inner;
      in_word = true;
      i = end;
    } else if (ch == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  if (words.empty()) throw UsageError("kopt.pool.002", "--worker-launcher: empty; give a command such as \"ssh gpu-node-3\"");
  return words;
}

std::string shell_quote_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char ch : a) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += '\'';
  }
  return out;
}

std::vector<WorkerSlot> plan_workers(const model::WorkerPlan& plan) {
  const std::vector<int>& devices = plan.devices;
  const std::vector<std::string>& launcher = plan.launcher;
  if (devices.empty()) throw UsageError("kopt.pool.001", "--devices: no device given");
  if (devices.size() > model::WorkerPlan::kMaxWorkers)
    throw UsageError("kopt.pool.001", "--devices: " + std::to_string(devices.size()) + " workers; at most " +
                                          std::to_string(model::WorkerPlan::kMaxWorkers) +
                                          " (each one is a process and a thread)");
  if (launcher.empty()) {
    std::set<int> seen;
    for (int d : devices)
      if (!seen.insert(d).second)
        throw UsageError("kopt.pool.003", "--devices: device " + std::to_string(d) +
                                              " is given twice; two workers would time on one GPU at once "
                                              "(a device number may repeat only with --worker-launcher, one per host)");
  }
  std::string program;
  if (!launcher.empty()) {
    program = launcher[0];
    if (program.find('/') == std::string::npos) {
      program = util::find_program(program);
      if (program.empty())
        throw UsageError("kopt.pool.002", "--worker-launcher: '" + launcher[0] + "' is not a program on PATH");
    }
    std::error_code ec;
    if (std::filesystem::is_directory(program, ec))
      throw UsageError("kopt.pool.002", "--worker-launcher: '" + launcher[0] + "' is a folder, not a program");
    if (::access(program.c_str(), X_OK) != 0)
      throw UsageError("kopt.pool.002", "--worker-launcher: '" + launcher[0] + "' is not an executable program (" +
                                            std::strerror(errno) + ")");
  }
  std::vector<WorkerSlot> slots;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string dev = std::to_string(devices[i]), index = std::to_string(i);
    WorkerSlot s;
    s.device = devices[i];
    s.name = "device " + dev + (launcher.empty() ? "" : " (worker " + index + ")");
    std::vector<std::string> worker;
    for (const std::string& w : plan.command) worker.push_back(replace_all(w, "{device}", dev));
    if (launcher.empty()) {
      s.argv = worker;
    } else {
      bool placed = false;
      for (size_t k = 0; k < launcher.size(); ++k) {
        if (launcher[k] == "{worker}") {
          s.argv.push_back(shell_quote_command(worker));
          placed = true;
          continue;
        }
        s.argv.push_back(k == 0 ? program : replace_all(replace_all(launcher[k], "{device}", dev), "{index}", index));
      }
      if (!placed) {
        if (launcher.back() == "-c")
          s.argv.push_back(shell_quote_command(worker));
        else
          s.argv.insert(s.argv.end(), worker.begin(), worker.end());
      }
    }
    s.env = {"KOPT_WORKER_DEVICE=" + dev, "KOPT_WORKER_INDEX=" + index,
             "KOPT_WORKER_COUNT=" + std::to_string(devices.size())};
    slots.push_back(std::move(s));
  }
  return slots;
}

EvaluatorOptions on_worker(EvaluatorOptions options, const WorkerSlot& slot) {
  options.worker_argv = slot.argv;
  options.worker_env = slot.env;
  options.device = slot.device;
  return options;
}

EvaluatorPool::EvaluatorPool(const spec::Spec& spec, const EvaluatorOptions& base, std::vector<WorkerSlot> slots,
                             Options options)
    : opt_(std::move(options)) {
  if (!opt_.say) opt_.say = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };
  for (auto& config : slots) {
    auto s = std::make_unique<Slot>();
    s->ev = std::make_unique<Evaluator>(spec, on_worker(base, config));
    s->config = std::move(config);
    slots_.push_back(std::move(s));
  }
  // The threads come with open(): a failure to create one must not unwind
  // this constructor while other threads wait on its condition variable.
}

void EvaluatorPool::start_thread(size_t i) {
  if (slots_[i]->thread.joinable()) return;
  try {
    slots_[i]->thread = std::thread([this, i] { loop(i); });
  } catch (const std::system_error& e) {
    throw EnvironmentError("kopt.pool.006",
                           "--devices: cannot start a thread for " + slots_[i]->config.name + " (worker " +
                               std::to_string(i + 1) + " of " + std::to_string(slots_.size()) + "): " + e.what() +
                               "; the process limit (ulimit -u) does not allow a thread and a process per worker: "
                               "give fewer devices");
  }
}

EvaluatorPool::~EvaluatorPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    // Each worker is shut down by the thread that started it (it would get
    // SIGKILL when that thread ends): the Evaluator goes on its own thread.
    for (auto& s : slots_) {
      Slot* slot = s.get();
      s->tasks.push_back([slot] { slot->ev.reset(); });
    }
    // A slot still waiting for a result (the run ends by an exception) is
    // unblocked: its worker's process group is killed, the wait ends as a
    // worker_crash that nobody collects.
    for (auto& s : slots_)
      if (s->busy) {
        const pid_t pid = s->ev->supervisor().worker_pid();
        if (pid > 0) ::kill(-pid, SIGKILL);
      }
  }
  task_cv_.notify_all();
  for (auto& s : slots_)
    if (s->thread.joinable()) s->thread.join();
}

void EvaluatorPool::post(size_t i, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[i]->tasks.push_back(std::move(task));
  }
  task_cv_.notify_all();
}

void EvaluatorPool::loop(size_t i) {
  Slot& s = *slots_[i];
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      task_cv_.wait(lock, [&] { return stop_ || !s.tasks.empty(); });
      if (s.tasks.empty()) return;  // stopping, and nothing left to do
      task = std::move(s.tasks.front());
      s.tasks.pop_front();
    }
    task();
  }
}

std::vector<std::exception_ptr> EvaluatorPool::hellos(const std::vector<size_t>& which) {
  std::vector<std::future<void>> answers;
  for (size_t i : which) {
    auto done = std::make_shared<std::promise<void>>();
    answers.push_back(done->get_future());
    post(i, [this, i, done] {
      try {
        slots_[i]->ev->device();
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
  }
  std::vector<std::exception_ptr> errors;
  for (auto& a : answers) {
    try {
      a.get();
      errors.push_back(nullptr);
    } catch (const Error&) {
      errors.push_back(std::current_exception());
    }
  }
  return errors;
}

void EvaluatorPool::leave_out_missing_devices(size_t first) {
  const std::optional<int> count = slots_[first]->ev->device_count();
  if (!count) return;
  std::vector<int> missing;
  for (auto& s : slots_)
    if (!s->dropped && s->config.device >= *count) {
      s->dropped = true;
      s->reason = "no such device: this machine has " + std::to_string(*count) + " CUDA device" +
                  (*count == 1 ? "" : "s");
      missing.push_back(s->config.device);
    }
  if (missing.empty()) return;
  std::string list;
  for (size_t k = 0; k < missing.size() && k < 8; ++k) list += (k ? ", " : "") + std::to_string(missing[k]);
  if (missing.size() > 8) list += ", ... (" + std::to_string(missing.size()) + " in all)";
  opt_.say("--devices: this machine has " + std::to_string(*count) + " CUDA device" + (*count == 1 ? "" : "s") +
           " (0 to " + std::to_string(*count - 1) + "); left out: device " + list);
}

size_t EvaluatorPool::open() {
  std::vector<std::exception_ptr> errors(slots_.size());
  std::vector<size_t> rest;
  size_t from = 0;
  if (opt_.local_devices && slots_.size() > 1) {
    // The first worker says how many devices there are: the others past
    // that count get no thread and no worker.
    start_thread(0);
    errors[0] = hellos({0}).front();
    if (!errors[0]) leave_out_missing_devices(0);
    from = 1;
  }
  for (size_t i = from; i < slots_.size(); ++i)
    if (!slots_[i]->dropped) rest.push_back(i);
  for (size_t i : rest) start_thread(i);
  const std::vector<std::exception_ptr> answered = hellos(rest);
  for (size_t k = 0; k < rest.size(); ++k) errors[rest[k]] = answered[k];
  std::exception_ptr first;
  std::vector<std::pair<size_t, std::string>> failed;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!errors[i]) continue;
    if (!first) first = errors[i];
    try {
      std::rethrow_exception(errors[i]);
    } catch (const Error& e) {
      failed.push_back({i, e.what()});
    }
    slots_[i]->dropped = true;  // before any message, so that each names the devices really left
  }
  for (const auto& [i, why] : failed) {
    slots_[i]->dropped = false;
    if (slots_.size() > 1) drop(i, why);
    slots_[i]->dropped = true;
    slots_[i]->reason = why;
  }
  if (live_count() == 0) {
    if (!first) throw EnvironmentError("kopt.pool.005", "no device of --devices is on this machine");
    std::rethrow_exception(first);
  }
  // One GPU, one worker; one architecture for every candidate's cubin.
  const size_t p = primary();
  const model::DeviceInfo& pd = slots_[p]->ev->device();
  std::map<std::string, size_t> by_uuid;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!live(i)) continue;
    const std::string& uuid = slots_[i]->ev->device_uuid();
    const model::DeviceInfo& d = slots_[i]->ev->device();
    if (!uuid.empty()) {
      auto [it, fresh] = by_uuid.emplace(uuid, i);
      if (!fresh) {
        drop(i, "its worker reports the GPU " + uuid + " that " + slots_[it->second]->config.name +
                    " has already; one GPU is timed by one worker");
        continue;
      }
    }
    if (i != p && d.arch() != pd.arch()) {
      drop(i, "it is " + d.arch() + " (" + d.name + "), and the run compiles for " + pd.arch() + " (" +
                  slots_[p]->config.name + ")");
      continue;
    }
    if (i != p && d.name != pd.name)
      opt_.say("warning: " + slots_[i]->config.name + " is a " + d.name + ", " + slots_[p]->config.name + " a " +
               pd.name + ": their timings differ; the final re-timing on " + slots_[p]->config.name +
               " decides the ranking");
  }
  return primary();
}

size_t EvaluatorPool::live_count() const {
  size_t n = 0;
  for (const auto& s : slots_) n += !s->dropped;
  return n;
}

size_t EvaluatorPool::primary() const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i]->dropped) return i;
  return slots_.size();
}

size_t EvaluatorPool::busy_count() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s->busy;
  return n;
}

void EvaluatorPool::drop(size_t i, const std::string& why) {
  Slot& s = *slots_[i];
  if (s.dropped) return;
  s.dropped = true;
  s.reason = why;
  std::string rest;
  for (const auto& o : slots_)
    if (!o->dropped) rest += (rest.empty() ? "" : ", ") + o->config.name;
  opt_.say(s.config.name + " dropped: " + why + (rest.empty() ? "; no device is left" : "; the run goes on with " + rest));
}

void EvaluatorPool::start(size_t i, Candidate c, cuda::CompileResult compiled, std::optional<bool> time_reference) {
  if (!idle(i)) throw std::logic_error("EvaluatorPool::start: slot " + std::to_string(i) + " is not idle");
  slots_[i]->busy = true;
  const auto sent = std::chrono::steady_clock::now();
  const bool probe = opt_.probe_after_failure;
  post(i, [this, i, c = std::move(c), compiled = std::move(compiled), time_reference, sent, probe]() mutable {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;  // the pool is going away: nothing more is sent
    }
    Evaluator& ev = *slots_[i]->ev;
    Done d;
    d.slot = i;
    d.sent = sent;
    try {
      ev.start(c, compiled, time_reference);
      d.result = ev.finish();
      const bool failed = d.result.verdict == Verdict::worker_crash || d.result.verdict == Verdict::timeout;
      bool stopping;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping = stop_;
      }
      if (probe && failed && !stopping) {
        try {
          ev.supervisor().hello();  // a fresh worker: is the device (and the link to it) still there?
        } catch (const Error& e) {
          d.lost = e.what();
        }
      }
    } catch (...) {
      if (ev.started()) {
        try {
          ev.finish();
        } catch (...) {
        }
      }
      // Several workers: one that cannot be started is a lost device, the
      // others go on. Alone, the run ends with the error, as it always did.
      std::string why;
      if (probe && is_device_loss(std::current_exception(), &why)) {
        d.lost = why;
        d.never_sent = true;
        d.result.verdict = Verdict::worker_crash;
        d.result.detail = why;
      } else {
        d.error = std::current_exception();
      }
    }
    d.candidate = std::move(c);
    d.finished = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(d));
    }
    done_cv_.notify_all();
  });
}

EvaluatorPool::Done EvaluatorPool::wait_any() {
  std::unique_lock<std::mutex> lock(mu_);
  if (done_.empty() && [&] {
        for (const auto& s : slots_)
          if (s->busy) return false;
        return true;
      }())
    throw std::logic_error("EvaluatorPool::wait_any: nothing is started");
  done_cv_.wait(lock, [&] { return !done_.empty(); });
  Done d = std::move(done_.front());
  done_.pop_front();
  slots_[d.slot]->busy = false;
  return d;
}

}  // namespace kopt::eval
