// libFuzzer target: the grid-barrier declaration checks
// (src/launch/barrier_validation.hpp) on descriptors, declared-name lists
// and globals built from arbitrary bytes. Each check is compared with a
// model written here from the header's documentation of
// t4a_kernel_declare_barrier:
//   check_barrier_desc: accepted exactly when the model accepts; then the
//     declaration's width is 4 or 8 (0 given: 4), its flags are the given
//     known flags and both values are the given ones and fit the width;
//     refused: INVALID_ARGUMENT, a message naming the first bad field in
//     the documented order, the declaration untouched;
//   check_barrier_room: refused exactly for a name already declared (the
//     message names it and the first index holding it) or a full kernel;
//   check_barrier_global: accepted exactly for a global of `width` bytes
//     aligned to them; a refusal names the global.
// A check never rejects twice (the first message stands). Never a crash
// or a sanitizer report.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launch/barrier_validation.hpp"

#include "fuzz_reader.hpp"

namespace {

using t4a::core::Check;
using t4a::launch::BarrierDecl;
using t4a_fuzz::Reader;

[[noreturn]] void broken(const char *what, const Check &c) {
  std::fprintf(stderr, "barrier rule broken: %s (status %d, message '%s')\n",
               what, static_cast<int>(c.status), c.message);
  std::abort();
}

bool has(const Check &c, const std::string &part) {
  return std::strstr(c.message, part.c_str()) != nullptr;
}

// Values that are often interesting to the checks, or any value.
template <class T> T pick(Reader &r, const T *common, size_t n) {
  uint8_t sel = r.get<uint8_t>();
  if (sel < 0xc0) return common[sel % n];
  return r.get<T>();
}

// A NUL-terminated name of up to 31 bytes from the input.
std::string name_from(Reader &r) {
  size_t len = r.get<uint8_t>() % 32;
  std::string s;
  for (size_t i = 0; i < len; ++i) s += static_cast<char>(r.get<uint8_t>());
  s.resize(std::strlen(s.c_str()));
  return s;
}

void check_desc(Reader &r) {
  static const uint32_t widths[] = {0, 4, 8, 1, 2, 16, 5, 0xffffffffu};
  static const uint32_t flags[] = {0, 1, 2, 3, 4, 0x80000000u, 7};
  static const uint64_t values[] = {0,
                                    1,
                                    0xffffffffull,
                                    1ull << 32,
                                    ~0ull,
                                    0x7fffffffull,
                                    0x100000000ull + 5};
  static const uint32_t zero[] = {0, 0, 0, 1};
  t4a_barrier_desc d = T4A_BARRIER_DESC_INIT;
  d.width = pick(r, widths, 8);
  d.flags = pick(r, flags, 7);
  d.reset_value = pick(r, values, 7);
  d.expected_value = pick(r, values, 7);
  d.reserved0 = pick(r, zero, 4);
  uint8_t name_kind = r.get<uint8_t>() % 3;
  std::string name = name_from(r);
  if (name_kind == 0)
    d.global_name = nullptr;
  else if (name_kind == 1)
    d.global_name = "";
  else
    d.global_name = name.c_str();

  // The model: the first problem, in the documented order.
  const char *bad = nullptr;
  uint32_t width = d.width == 0 ? 4 : d.width;
  uint64_t limit = width == 8 ? ~0ull : 0xffffffffull;
  if (d.global_name == nullptr || d.global_name[0] == '\0')
    bad = "desc->global_name";
  else if (width != 4 && width != 8)
    bad = "desc->width";
  else if ((d.flags & ~3u) != 0)
    bad = "desc->flags";
  else if (d.reserved0 != 0)
    bad = "desc->reserved0";
  else if (d.reset_value > limit)
    bad = "desc->reset_value";
  else if (d.expected_value > limit)
    bad = "desc->expected_value";

  BarrierDecl decl;
  decl.width = 99;
  decl.flags = 99;
  decl.reset = 99;
  decl.expected = 99;
  Check c;
  t4a::launch::check_barrier_desc(d, &decl, &c);
  if (bad == nullptr) {
    if (!c.ok()) broken("a valid descriptor refused", c);
    if (decl.width != width || decl.flags != d.flags ||
        decl.reset != d.reset_value || decl.expected != d.expected_value)
      broken("accepted declaration differs from the descriptor", c);
    if ((decl.reset & ~t4a::launch::width_mask(decl.width)) != 0 ||
        (decl.expected & ~t4a::launch::width_mask(decl.width)) != 0)
      broken("accepted value does not fit the width", c);
    return;
  }
  if (c.status != T4A_ERROR_INVALID_ARGUMENT)
    broken("refusal is not INVALID_ARGUMENT", c);
  if (!has(c, bad)) broken("refusal does not name the first bad field", c);
  if (decl.width != 99 || decl.flags != 99 || decl.reset != 99 ||
      decl.expected != 99)
    broken("refusal wrote the declaration", c);
}

void check_room(Reader &r) {
  uint32_t max = 1 + r.get<uint8_t>() % 9;
  uint32_t n = r.get<uint8_t>() % (max + 1);
  std::vector<std::string> names(n);
  for (uint32_t i = 0; i < n; ++i) names[i] = name_from(r);
  std::vector<const char *> ptrs(n);
  for (uint32_t i = 0; i < n; ++i) ptrs[i] = names[i].c_str();
  // Often one of the declared names again.
  std::string name = name_from(r);
  if (n > 0 && (r.get<uint8_t>() & 1)) name = names[r.get<uint8_t>() % n];
  std::string kernel = name_from(r);
  uint32_t dup = n;
  for (uint32_t i = 0; i < n && dup == n; ++i)
    if (names[i] == name) dup = i;
  Check c;
  t4a::launch::check_barrier_room(name.c_str(), ptrs.data(), n, max,
                                  kernel.c_str(), &c);
  if (dup < n) {
    if (c.status != T4A_ERROR_INVALID_ARGUMENT ||
        !has(c, "'" + name + "' is already barrier " + std::to_string(dup) +
                    " of kernel '" + kernel + "'"))
      broken("a duplicate name is not refused with its index", c);
  } else if (n >= max) {
    if (c.status != T4A_ERROR_INVALID_ARGUMENT ||
        !has(c, "kernel '" + kernel + "' has " + std::to_string(n) +
                    " barriers already"))
      broken("a full kernel is not refused", c);
  } else if (!c.ok()) {
    broken("room refused", c);
  }
}

void check_global(Reader &r) {
  static const uint64_t sizes[] = {4, 8, 0, 1, 2, 16, 12, ~0ull};
  static const uint64_t ptrs[] = {0x1000, 0x1004, 0x1002, 0x1001, 0, ~0ull};
  static const uint32_t widths[] = {4, 8, 0, 3};
  uint64_t bytes = pick(r, sizes, 8);
  uint64_t ptr = pick(r, ptrs, 6);
  uint32_t width = pick(r, widths, 4);
  std::string name = name_from(r);
  Check c;
  t4a::launch::check_barrier_global(name.c_str(), bytes, ptr, width, &c);
  bool ok = width != 0 && bytes == width && ptr % width == 0;
  if (ok != c.ok()) broken("global accepted differs from the model", c);
  if (!ok && (c.status != T4A_ERROR_INVALID_ARGUMENT ||
              !has(c, "the global '" + name + "'")))
    broken("global refusal does not name it", c);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  switch (r.get<uint8_t>() % 3) {
  case 0: check_desc(r); break;
  case 1: check_room(r); break;
  case 2: check_global(r); break;
  }
  // The first rejection stands.
  Check c;
  c.reject(T4A_ERROR_INVALID_ARGUMENT, "first");
  c.reject(T4A_ERROR_INTERNAL, "second");
  if (c.status != T4A_ERROR_INVALID_ARGUMENT || std::strcmp(c.message, "first"))
    broken("a second rejection changed the first", c);
  return 0;
}
