/*
 * Host lane: the pure parts of the compile layer, compiled into the test
 * from src/compile/ (no library call):
 *   - SHA-256 against the FIPS 180-4 example vectors ("abc", the empty
 *     string, the 448-bit and 896-bit messages, one million 'a'), fed in
 *     one piece and incrementally across every block boundary;
 *   - target selection over tables of NVRTC supported archs,
 *     NVRTC, driver and device versions and requested outputs.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#include <string>
#include <vector>

#include "compile/checksum.hpp"
#include "compile/target.hpp"
#include "core/sha256.hpp"

using t4a::compile::select_target;
using t4a::compile::TargetChoice;
using t4a::compile::TargetQuery;
using t4a::core::Sha256;
using t4a::core::to_hex;

namespace {

const char k_448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
const char k_896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                     "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

std::string hex_of(const std::string &m) {
  return to_hex(Sha256::of(m.data(), m.size()));
}

void test_sha256_vectors(void **) {
  assert_string_equal(
      hex_of("abc").c_str(),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_string_equal(
      hex_of("").c_str(),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_string_equal(
      hex_of(k_448).c_str(),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  assert_string_equal(
      hex_of(k_896).c_str(),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  std::string million(1000000, 'a');
  assert_string_equal(
      hex_of(million).c_str(),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

void test_sha256_incremental(void **) {
  // Every split point of the 896-bit message (two blocks plus padding that
  // spills into a third), and several chunk sizes around the block size.
  const std::string m = k_896;
  const std::string whole = hex_of(m);
  for (size_t split = 0; split <= m.size(); ++split) {
    Sha256 h;
    h.update(m.data(), split);
    h.update(m.data() + split, m.size() - split);
    assert_string_equal(to_hex(h.finish()).c_str(), whole.c_str());
  }
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 127u, 997u}) {
    std::string million(1000000, 'a');
    Sha256 h;
    for (size_t at = 0; at < million.size(); at += chunk)
      h.update(million.data() + at,
               chunk < million.size() - at ? chunk : million.size() - at);
    assert_string_equal(
        to_hex(h.finish()).c_str(),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  // Messages whose padding lands on every offset of a block (lengths 0 to
  // 130): fed one byte at a time, they hash as in one piece.
  std::string s;
  for (int n = 0; n <= 130; ++n) {
    Sha256 h;
    for (char c : s) h.update(&c, 1);
    assert_string_equal(to_hex(h.finish()).c_str(), hex_of(s).c_str());
    s.push_back(static_cast<char>('a' + n % 26));
  }
}

// The fast code (the x86 SHA extensions, where the CPU has them) and the
// portable code agree on every length from 0 to 4 KiB and on the FIPS
// million 'a', over bytes that are not text.
void test_sha256_fast_equals_portable(void **) {
  std::string m;
  uint32_t x = 12345;
  for (int n = 0; n <= 4096; ++n) {
    assert_true(Sha256::of(m.data(), m.size()) ==
                Sha256::of_portable(m.data(), m.size()));
    x = x * 1103515245u + 12345u;
    m.push_back(static_cast<char>(x >> 24));
  }
  std::string million(1000000, 'a');
  assert_string_equal(
      to_hex(Sha256::of_portable(million.data(), million.size())).c_str(),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// XXH64, the disk cache's checksum: vectors from the reference
// implementation (Python xxhash 3), seeds 0 and 0x9E3779B97F4A7C15, over
// every code path (under 4, under 8, under 32, stripes with a tail).
void test_xxh64_vectors(void **) {
  using t4a::compile::xxh64;
  std::string long_input;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 256; ++i) long_input.push_back(static_cast<char>(i));
  long_input += "xyz1234";
  const std::string k32 = "0123456789abcdef0123456789abcdef";
  const uint64_t seed = 0x9E3779B97F4A7C15ull;
  assert_true(xxh64("", 0) == 0xef46db3751d8e999ull);
  assert_true(xxh64("a", 1) == 0xd24ec4f1a98c6e5bull);
  assert_true(xxh64("abc", 3) == 0x44bc2cf5ad770999ull);
  assert_true(xxh64(k32.data(), 32) == 0x642a94958e71e6c5ull);
  assert_true(xxh64(long_input.data(), long_input.size()) ==
              0x559ea82afe8f46c9ull);
  assert_true(xxh64("", 0, seed) == 0xc4349fc93c010000ull);
  assert_true(xxh64("a", 1, seed) == 0x9a7c6d2ea45568c9ull);
  assert_true(xxh64("abc", 3, seed) == 0x2ed0f59d6b43ac8bull);
  assert_true(xxh64(k32.data(), 32, seed) == 0x91c9c9c721ea6985ull);
  assert_true(xxh64(long_input.data(), long_input.size(), seed) ==
              0xdf91de6225bade9bull);
}

const std::vector<int> k_nvrtc13 = {75,  80,  86,  87,  89, 90,
                                    100, 103, 110, 120, 121};
const std::vector<int> k_nvrtc124 = {50, 52, 53, 60, 61, 62, 70,
                                     72, 75, 80, 86, 87, 89, 90};
const std::vector<int> k_unknown = {};

struct Row {
  const std::vector<int> *archs;
  int nvrtc, driver, cc_major, cc_minor;
  uint32_t requested;
  t4a_status status;
  uint32_t output; // when SUCCESS
  int arch;        // when SUCCESS
  const char *why; // part of the message when UNSUPPORTED
};

constexpr uint32_t CUBIN = T4A_COMPILE_CUBIN, PTX = T4A_COMPILE_PTX;
constexpr t4a_status OK = T4A_SUCCESS, UNSUPPORTED = T4A_ERROR_UNSUPPORTED;

const Row k_rows[] = {
    // NVRTC supports the device's SM: a CUBIN, with or without a driver.
    {&k_nvrtc13, 13000, 13000, 9, 0, CUBIN, OK, CUBIN, 90, nullptr},
    {&k_nvrtc13, 13000, 13020, 9, 0, CUBIN, OK, CUBIN, 90, nullptr},
    {&k_nvrtc13, 13000, 0, 9, 0, CUBIN, OK, CUBIN, 90, nullptr},
    {&k_nvrtc13, 13000, 0, 12, 1, CUBIN, OK, CUBIN, 121, nullptr},
    {&k_nvrtc124, 12040, 12030, 8, 6, CUBIN, OK, CUBIN, 86, nullptr},
    {&k_nvrtc124, 12040, 13000, 9, 0, CUBIN, OK, CUBIN, 90, nullptr},
    // PTX requested: the device's own arch when supported.
    {&k_nvrtc13, 13000, 13000, 9, 0, PTX, OK, PTX, 90, nullptr},
    {&k_nvrtc13, 13000, 0, 7, 5, PTX, OK, PTX, 75, nullptr},
    // A device newer than NVRTC knows: PTX for the highest lower arch.
    {&k_nvrtc13, 13000, 13010, 13, 0, CUBIN, OK, PTX, 121, nullptr},
    {&k_nvrtc13, 13000, 13000, 12, 2, CUBIN, OK, PTX, 121, nullptr},
    {&k_nvrtc13, 13000, 13000, 8, 8, CUBIN, OK, PTX, 87, nullptr},
    {&k_nvrtc124, 12040, 12040, 10, 0, CUBIN, OK, PTX, 90, nullptr},
    {&k_nvrtc124, 12040, 0, 10, 0, CUBIN, OK, PTX, 90, nullptr},
    // ...but only when the driver can JIT that NVRTC's PTX.
    {&k_nvrtc124, 12040, 12030, 10, 0, CUBIN, UNSUPPORTED, 0, 0,
     "PTX for compute_90 from NVRTC 12.4 needs a driver of CUDA 12.4"},
    {&k_nvrtc13, 13000, 12080, 9, 0, PTX, UNSUPPORTED, 0, 0,
     "driver CUDA 12.8 (12080); device compute capability 9.0"},
    // A CUBIN of a newer toolkit major is not loadable by an older driver;
    // its PTX cannot be JIT-compiled either.
    {&k_nvrtc13, 13000, 12080, 9, 0, CUBIN, UNSUPPORTED, 0, 0,
     "a CUBIN of NVRTC 13.0 needs a driver of CUDA 13 or newer"},
    // A device older than anything NVRTC supports.
    {&k_nvrtc13, 13000, 13000, 5, 2, CUBIN, UNSUPPORTED, 0, 0,
     "NVRTC 13.0 supports no target at or below sm_52 (it supports sm_75 .. "
     "sm_121); driver CUDA 13.0; device compute capability 5.2"},
    {&k_nvrtc13, 13000, 0, 7, 0, PTX, UNSUPPORTED, 0, 0, "driver unknown"},
    // NVRTC without nvrtcGetSupportedArchs: every arch is taken as
    // supported.
    {&k_unknown, 12040, 0, 9, 0, CUBIN, OK, CUBIN, 90, nullptr},
    {&k_unknown, 12040, 12040, 9, 0, PTX, OK, PTX, 90, nullptr},
    {&k_unknown, 12040, 12030, 9, 0, PTX, UNSUPPORTED, 0, 0, "NVRTC 12.4"},
};

void test_target_selection_table(void **) {
  int failures = 0;
  for (size_t i = 0; i < sizeof k_rows / sizeof k_rows[0]; ++i) {
    const Row &r = k_rows[i];
    TargetQuery q;
    q.archs = *r.archs;
    q.nvrtc_version = r.nvrtc;
    q.driver_version = r.driver;
    q.cc_major = r.cc_major;
    q.cc_minor = r.cc_minor;
    q.output = r.requested;
    TargetChoice c = select_target(q);
    bool ok = c.status == r.status;
    if (ok && r.status == T4A_SUCCESS)
      ok = c.output == r.output && c.arch == r.arch && c.message.empty();
    if (ok && r.status != T4A_SUCCESS)
      ok = c.message.find(r.why) != std::string::npos;
    if (!ok) {
      print_error("row %zu: got status %d output %u arch %d message \"%s\"\n",
                  i, c.status, c.output, c.arch, c.message.c_str());
      ++failures;
    }
  }
  assert_int_equal(failures, 0);
}

void test_arch_names(void **) {
  assert_string_equal(t4a::compile::arch_name(CUBIN, 90).c_str(), "sm_90");
  assert_string_equal(t4a::compile::arch_name(PTX, 121).c_str(), "compute_121");
}

} // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sha256_vectors),
      cmocka_unit_test(test_sha256_incremental),
      cmocka_unit_test(test_sha256_fast_equals_portable),
      cmocka_unit_test(test_xxh64_vectors),
      cmocka_unit_test(test_target_selection_table),
      cmocka_unit_test(test_arch_names),
  };
  return cmocka_run_group_tests_name("compile_units", tests, nullptr, nullptr);
}
