// Declarative, seeded, reproducible input generation and .npy files.
//
// The same (generator, dtype, count, seed) always yields the same bytes on every
// machine: the bit stream is std::mt19937_64 (fully specified by the C++
// standard; spec/mt19937_64.h is that engine, draw for draw) and the mapping
// from bits to values is our own (no std::*_distribution, whose output is
// implementation-defined).
//
// Large buffers are generated in parallel without changing a byte: element i
// of a uniform or normal buffer takes draw i of the one stream (a normal pair
// takes draws i and i+1, i even), so a thread that starts at element `begin`
// (even) jumps a fresh engine ahead by `begin` draws (jump-ahead: Haramoto,
// Matsumoto, Nishimura, Panneton, L'Ecuyer, INFORMS J. Computing 20(3), 2008;
// spec/mt19937_64.h) and writes its own range. int_range draws a variable
// number of times per element (rejection) and stays sequential; constant and
// iota need no draws and are split alike.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kopt::spec {

/// Host bytes of `count` elements of `dtype` (little-endian, packed).
/// For Generator::Kind::npy the file's dtype and element count must match
/// (shape is ignored, C order assumed); "{case}" in its path is replaced by
/// `case_name`. Throws SpecError(kopt.inputs.2xx) naming the file on mismatch:
///   kopt.inputs.201 dtype of the .npy file differs from the buffer's
///   kopt.inputs.202 element count differs
///   kopt.inputs.203 count < 0 or count * element size overflows
/// (and kopt.npy.3xx from read_npy for unreadable or malformed files).
///
/// Mapping from the 64-bit stream (std::mt19937_64 seeded with `seed`):
///   uniform:   u = (bits >> 11) * 2^-53 in [0,1); x = low + (high - low) * u
///              (x < high, but rounding to a narrower type may give high itself)
///   normal:    Box-Muller on two draws, u1 = ((bits >> 11) + 1) * 2^-53 in (0,1],
///              u2 as above: r = sqrt(-2 ln u1); z0 = r cos(2 pi u2), z1 = r sin(2 pi u2);
///              elements take z0, z1, z0', z1', ...; x = mean + stddev * z
///   int_range: unbiased by rejection: bits are redrawn while they fall in the
///              incomplete last block of (high - low + 1)
///   constant / iota: no random bits (iota: start + i * step)
/// x (a double) is then converted to the element type: float by IEEE
/// round-to-nearest-even; half and bfloat16 from that float, round to nearest
/// even; integer types by rounding to nearest (ties away from zero) and
/// saturating to the type's range.
///
/// Threads (the bytes are the same for every choice): `threads` = 0 picks:
/// one below 4Mi (2^22) elements, else std::thread::hardware_concurrency(),
/// at most KOPT_INPUT_THREADS when that is set (a whole number from 1 to
/// 65536, else EnvironmentError kopt.inputs.206) and at most one per 2Mi
/// elements. Below that size the jump's set-up (a few milliseconds a thread,
/// docs/spec-format.md#reproducibility) costs about what a second thread
/// saves. `threads` > 0 cuts the buffer into that many parts of one even
/// size (at most 1024, at least 2 elements each) whatever its size: for
/// tests and benchmarks. A thread that cannot be started leaves its part to
/// the calling thread.
std::vector<uint8_t> generate(const Generator& g, DType dtype, int64_t count, uint64_t seed,
                              const std::string& case_name = "", unsigned threads = 0);

/// KOPT_INPUT_THREADS: the most threads generate() uses for one buffer
/// (unset: no cap). Throws EnvironmentError(kopt.inputs.206) when it is not a
/// whole number from 1 to 65536; the commands that generate inputs (optimize,
/// evaluate, bench) call it before any work, so that a bad value is reported
/// at once rather than at the first large buffer.
unsigned input_threads_cap();

/// generate() into `out`, count * dtype_size(dtype) bytes that the caller
/// owns: the same bytes, the same errors. For memory that no one has touched
/// yet (std::vector zero-fills on one thread first: about 0.5 ns a byte,
/// more than generating a float on several threads), or pinned memory.
void generate_into(const Generator& g, DType dtype, int64_t count, uint64_t seed, uint8_t* out,
                   const std::string& case_name = "", unsigned threads = 0);

/// The generator of an `npy` input's fresh trials (2 and 3, unless `fixed`):
/// values over the file's range, so that they stay what the kernel expects
/// (indices stay indices). Integer types: int_range [min, max] of the file's
/// elements; floating-point types: uniform [min, max) of its finite elements,
/// constant when they are all equal (or none is finite: 0). `g` is the npy
/// generator ("{case}" in its path replaced by `case_name`); throws as
/// generate() does for an unreadable file or one of another dtype or count
/// (kopt.inputs.201/202, kopt.npy.3xx).
Generator npy_fresh_generator(const Generator& g, DType dtype, int64_t count, const std::string& case_name);

/// A view (Generator::Kind::view): element i of the result is element
/// g.view_start + i * g.view_stride of `source` (`source_count` packed elements
/// of `source_dtype`): the bytes themselves when the types match, else
/// converted through double as generate() converts. Throws
/// SpecError("kopt.inputs.204") naming `name`, `case_name` and the source when
/// the source holds too few elements (a count that depends on a tuning
/// parameter can outgrow it), and "kopt.inputs.203" for a negative count.
/// generate() refuses a view (kopt.inputs.205): it has no source.
std::vector<uint8_t> view_elements(const Generator& g, DType dtype, int64_t count, const uint8_t* source,
                                   DType source_dtype, int64_t source_count, const std::string& name,
                                   const std::string& case_name);

/// Derives the seed of one buffer in one case and trial from the spec seed, so
/// buffers, cases and trials get independent streams.
uint64_t derive_seed(uint64_t spec_seed, const std::string& case_name,
                     const std::string& buffer_name, int trial);

/// A loaded .npy array (format versions 1.0-3.0; C order only).
struct NpyArray {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian, packed
  int64_t count() const;
};

/// Throws SpecError(kopt.npy.3xx) naming the file for unreadable files,
/// Fortran order, unsupported dtypes or big-endian data:
///   kopt.npy.301 cannot read the file
///   kopt.npy.302 not a valid .npy file (magic, version, header syntax)
///   kopt.npy.303 fortran_order is True
///   kopt.npy.304 big-endian data
///   kopt.npy.305 unsupported dtype (anything but <f2 <f4 <f8 |i1 |u1 <i4 <u4 <i8 <u8)
///   kopt.npy.306 data size does not match dtype and shape (truncated or trailing bytes)
///   kopt.npy.307 (write_npy) bfloat16, which has no .npy dtype
NpyArray read_npy(const std::filesystem::path& file);
/// Same checks, but reads only the header: dtype and shape; data stays empty.
/// (The data size is still checked against the file size.)
NpyArray read_npy_header(const std::filesystem::path& file);
/// Writes atomically (util/fs.h): format 1.0 (2.0 if the header needs it).
/// Throws SpecError kopt.npy.307 for bfloat16 and kopt.npy.306 if data.size()
/// is not count() * dtype_size(dtype).
void write_npy(const std::filesystem::path& file, const NpyArray& array);
/// The .npy descr of a dtype ("<f4", "|u1", ...); nullptr for bfloat16.
const char* npy_descr(DType dtype);

/// Converts element i of a packed buffer to double (for validation/reporting).
double element_as_double(const uint8_t* data, DType dtype, int64_t i);

/// IEEE binary16 / bfloat16 conversions. float -> 16-bit rounds to nearest,
/// ties to even; overflow gives infinity; NaN stays NaN (quiet).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace kopt::spec
