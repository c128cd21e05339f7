// Input generation speed (spec/inputs.h, spec/mt19937_64.h): a development
// tool, not a test. Google Benchmark; build it on request:
//
//   ninja -C build kopt_inputs_bench && build/tests/kopt_inputs_bench
//
// Generate/<kind>/<dtype>/<threads>: one buffer of 16Mi elements (64 MiB of
// float) by generate(), which returns a std::vector (zero-filled on one thread
// before the generation starts); GenerateInto/...: the same by generate_into()
// into memory not touched yet. Threads 0 is generate()'s own choice. The
// counter per_element is the wall time per element (the benchmarks use real
// time: the work is on other threads). SetUp/*: the one-time and per-thread costs of
// a jump: phi by Berlekamp-Massey (once per process), x^steps mod phi, and its
// Horner evaluation on a state; Discard/Stepping: the stepping it replaces.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spec/inputs.h"
#include "spec/mt19937_64.h"

namespace {

using kopt::spec::DType;
using kopt::spec::Generator;
using kopt::spec::Mt19937_64;
using kopt::spec::MtJumpPolynomial;

constexpr int64_t kCount = int64_t{1} << 24;

/// Wall time per element, as Google Benchmark shows a time ("4.2ns").
void per_element(benchmark::State& state) {
  state.counters["per_element"] =
      benchmark::Counter(static_cast<double>(kCount) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void generate_buffer(benchmark::State& state, Generator::Kind kind, DType dtype) {
  Generator g;
  g.kind = kind;
  const auto threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    std::vector<uint8_t> bytes = kopt::spec::generate(g, dtype, kCount, 42, "", threads);
    benchmark::DoNotOptimize(bytes.data());
  }
  per_element(state);
}

/// generate_into() memory that nobody has touched (new[] of bytes does not
/// zero it): the threads fault its pages in, in parallel.
void generate_untouched(benchmark::State& state, Generator::Kind kind, DType dtype) {
  Generator g;
  g.kind = kind;
  const auto threads = static_cast<unsigned>(state.range(0));
  const size_t bytes = static_cast<size_t>(kCount) * kopt::spec::dtype_size(dtype);
  for (auto _ : state) {
    std::unique_ptr<uint8_t[]> out(new uint8_t[bytes]);
    kopt::spec::generate_into(g, dtype, kCount, 42, out.get(), "", threads);
    benchmark::DoNotOptimize(out.get());
  }
  per_element(state);
}

void thread_args(benchmark::internal::Benchmark* b) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  b->Arg(1);
  if (hw > 1) b->Arg(2);
  if (hw > 2) b->Arg(hw);
  b->Arg(0);
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_generate() {
  for (const auto& [kind, name] : {std::pair{Generator::Kind::uniform, "uniform"},
                                   std::pair{Generator::Kind::normal, "normal"},
                                   std::pair{Generator::Kind::int_range, "int_range"}}) {
    for (const DType dtype : {DType::f32, DType::f16, DType::f64, DType::i32}) {
      if ((kind == Generator::Kind::int_range) != (dtype == DType::i32)) continue;
      const std::string label = std::string("Generate/") + name + "/" + kopt::spec::dtype_name(dtype);
      benchmark::RegisterBenchmark(label.c_str(), generate_buffer, kind, dtype)->Apply(thread_args);
      if (dtype == DType::f32) {
        const std::string into = std::string("GenerateInto/") + name + "/" + kopt::spec::dtype_name(dtype);
        benchmark::RegisterBenchmark(into.c_str(), generate_untouched, kind, dtype)->Apply(thread_args);
      }
    }
  }
}

void BM_Phi(benchmark::State& state) {  // uncached: what the first jump of a process pays
  for (auto _ : state) benchmark::DoNotOptimize(kopt::spec::mt19937_64_minimal_polynomial(Mt19937_64::kDefaultSeed));
  state.SetLabel("phi, Berlekamp-Massey over 39874 draws");
}
BENCHMARK(BM_Phi)->Name("SetUp/phi")->Unit(benchmark::kMillisecond);

void BM_JumpPolynomial(benchmark::State& state) {
  kopt::spec::mt19937_64_characteristic_polynomial();
  const auto steps = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(MtJumpPolynomial(steps).coefficients().data());
}
BENCHMARK(BM_JumpPolynomial)
    ->Name("SetUp/x^steps_mod_phi")
    ->Arg(int64_t{1} << 20)
    ->Arg(int64_t{1} << 22)
    ->Arg(int64_t{1} << 23)
    ->Arg(int64_t{1} << 26)
    ->Arg(int64_t{1} << 30)
    ->Arg(int64_t{1} << 40)
    ->Unit(benchmark::kMillisecond);

void BM_Horner(benchmark::State& state) {
  const MtJumpPolynomial p(uint64_t{1} << 26);
  Mt19937_64 e(42);
  for (auto _ : state) {
    e.jump(p);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Horner)->Name("SetUp/horner_jump")->Unit(benchmark::kMillisecond);

void BM_Stepping(benchmark::State& state) {
  const auto steps = static_cast<uint64_t>(state.range(0));
  Mt19937_64 e(42);
  for (auto _ : state) {
    e.discard(steps);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Stepping)
    ->Name("Discard/stepping")
    ->Arg(Mt19937_64::kStepJumpLimit)
    ->Arg(2 * Mt19937_64::kStepJumpLimit)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  register_generate();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
