// libFuzzer target: the environment variables' parsers and readers
// (src/driver/env.hpp), and the T4A_TRANSFER_FORCE list parser
// (src/memory/transfer_plan.hpp). The first byte picks what runs on the
// rest of the input; each is checked against what env.hpp promises:
//   0 parse_byte_count: accepted exactly when the text is one or more
//     decimal digits of value < 2^64 (an independent reference decides),
//     with that value; refused otherwise, with a reason and *out untouched;
//   1 parse_choice (the log levels, or a list built from the input):
//     accepted exactly when the text is one of the names, with its index;
//     a refusal lists every accepted name;
//   2 quote: printable ASCII only, the shown bytes decode back to the
//     first 64 bytes of the value, the length noted when longer;
//   3 through the environment (setenv, then byte_count, choice, raw,
//     text, find for a variable the input picks): the setting agrees with
//     the pure parser; a refusal's message starts with NAME='value' as
//     quote() shows it and ends with the fallback's text; value is the
//     fallback; unset again, the fallback and no message;
//   4 TransferTuning::parse: an accepted list has every field in its
//     documented range and prints back to a list that parses to the same
//     fields; a refused one leaves *out untouched.
// Never a crash, an ASan or UBSan report or a leak.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "driver/env.hpp"
#include "memory/transfer_plan.hpp"

namespace {

using namespace t4a;

[[noreturn]] void broken(const char *what, std::string_view text) {
  std::fprintf(stderr, "env rule broken: %s (input '%.*s', %zu bytes)\n", what,
               static_cast<int>(text.size() > 200 ? 200 : text.size()),
               text.data(), text.size());
  std::abort();
}

bool contains(const std::string &s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// The reference for byte counts: digits only, compared as a decimal string
// against 2^64 - 1 (no arithmetic shared with the parser).
bool reference_bytes(std::string_view t, uint64_t *value) {
  if (t.empty()) return false;
  for (char c : t)
    if (c < '0' || c > '9') return false;
  size_t first = t.find_first_not_of('0');
  std::string_view digits =
      first == std::string_view::npos ? std::string_view("0") : t.substr(first);
  const std::string_view max = "18446744073709551615";
  if (digits.size() > max.size() ||
      (digits.size() == max.size() && digits > max))
    return false;
  unsigned __int128 v = 0;
  for (char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  *value = static_cast<uint64_t>(v);
  return true;
}

void check_bytes(std::string_view t) {
  uint64_t want = 0;
  bool ok = reference_bytes(t, &want);
  uint64_t got = 0x5eed5eed5eed5eedull;
  std::string why;
  bool accepted = env::parse_byte_count(t, &got, &why);
  if (accepted != ok) broken("byte count accepted differs from reference", t);
  if (accepted && got != want) broken("byte count value differs", t);
  if (accepted && !why.empty()) broken("accepted byte count with a reason", t);
  if (!accepted) {
    if (got != 0x5eed5eed5eed5eedull) broken("refusal wrote *out", t);
    if (why.rfind("is ", 0) != 0) broken("refusal reason is not 'is ...'", t);
    if (t.empty() && !contains(why, "empty")) broken("empty not named", t);
    if (!t.empty() && t[0] == '-' && !contains(why, "negative"))
      broken("negative not named", t);
  }
}

void check_choice(std::string_view t, const char *const *names, size_t n) {
  size_t want = n;
  for (size_t i = 0; i < n && want == n; ++i)
    if (t == names[i]) want = i;
  size_t got = 12345;
  std::string why;
  bool accepted = env::parse_choice(t, names, n, "a thing", &got, &why);
  if (accepted != (want < n)) broken("choice accepted differs", t);
  if (accepted && got != want) broken("choice index differs", t);
  if (!accepted) {
    if (got != 12345) broken("choice refusal wrote *out", t);
    if (!contains(why, "a thing") || !contains(why, "(accepted: "))
      broken("choice refusal does not say what is accepted", t);
    for (size_t i = 0; i < n; ++i)
      if (!contains(why, names[i])) broken("choice refusal omits a name", t);
  }
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

void check_quote(std::string_view t) {
  std::string q = env::quote(t);
  if (q.empty() || q[0] != '\'') broken("quote does not open with '", t);
  for (char c : q)
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      broken("quote shows a byte that is not printable ASCII", t);
  // Decode the quoted part.
  std::string back;
  size_t i = 1;
  for (; i < q.size() && q[i] != '\''; ++i) {
    if (q[i] != '\\') {
      back += q[i];
      continue;
    }
    if (i + 3 >= q.size() || q[i + 1] != 'x' || hex(q[i + 2]) < 0 ||
        hex(q[i + 3]) < 0)
      broken("quote has a bad escape", t);
    back += static_cast<char>(hex(q[i + 2]) * 16 + hex(q[i + 3]));
    i += 3;
  }
  if (i == q.size()) broken("quote does not close", t);
  size_t shown = t.size() < 64 ? t.size() : 64;
  if (back != t.substr(0, shown)) broken("quote does not decode back", t);
  std::string rest = q.substr(i + 1);
  std::string want_rest =
      t.size() > 64 ? "... (" + std::to_string(t.size()) + " bytes)" : "";
  if (rest != want_rest) broken("quote's tail is wrong", t);
}

const char *const k_levels[] = {"off", "error", "warn", "info", "debug"};

void check_environment(uint8_t pick, std::string_view input) {
  // An environment value is a C string: up to the first NUL.
  std::string value(input.substr(0, input.find('\0')));
  auto v = static_cast<env::Var>(pick % env::k_var_count);
  const char *name = env::name(v);
  env::Var found;
  if (!env::find(name, &found) || found != v) broken("find(name(v)) != v", "");
  if (env::find(value, &found) && value != env::name(found))
    broken("find answers for another name", value);
  if (setenv(name, value.c_str(), 1) != 0) return;
  const char *raw = env::raw(v);
  if (raw == nullptr || value != raw) broken("raw is not the value set", value);
  if (env::text(v) != value) broken("text is not the value set", value);
  const std::string instead = "the fallback stays as it was";
  const std::string head = std::string(name) + "=" + env::quote(value) + " ";
  {
    env::Setting<uint64_t> s = env::byte_count(v, 77, instead);
    uint64_t want = 0;
    bool ok = reference_bytes(value, &want);
    if (!s.set) broken("byte_count: set variable not set", value);
    if (ok != s.error.empty()) broken("byte_count: error iff refused", value);
    if (s.value != (ok ? want : 77)) broken("byte_count: value", value);
    if (!ok &&
        (s.error.rfind(head, 0) != 0 || s.error.size() < instead.size() ||
         s.error.compare(s.error.size() - instead.size(), instead.size(),
                         instead) != 0 ||
         !contains(s.error, "; ignored, ")))
      broken("byte_count: message shape", value);
  }
  {
    env::Setting<size_t> s =
        env::choice(v, k_levels, 5, 2, "a log level", instead);
    size_t want = 5;
    for (size_t i = 0; i < 5; ++i)
      if (value == k_levels[i]) want = i;
    if (!s.set) broken("choice: set variable not set", value);
    if ((want < 5) != s.error.empty())
      broken("choice: error iff refused", value);
    if (s.value != (want < 5 ? want : 2)) broken("choice: value", value);
    if (want == 5 && (s.error.rfind(head, 0) != 0 ||
                      !contains(s.error, "off, error, warn, info, debug") ||
                      !contains(s.error, "; ignored, " + instead)))
      broken("choice: message shape", value);
  }
  unsetenv(name);
  if (env::raw(v) != nullptr || !env::text(v).empty())
    broken("unset variable still read", value);
  env::Setting<uint64_t> b = env::byte_count(v, 9, instead);
  env::Setting<size_t> c = env::choice(v, k_levels, 5, 3, "a level", instead);
  if (b.set || b.value != 9 || !b.error.empty() || c.set || c.value != 3 ||
      !c.error.empty())
    broken("unset variable: not the fallback", value);
}

std::string print(const memory::TransferTuning &t) {
  std::string s;
  auto add = [&](const std::string &item) {
    if (!s.empty()) s += ",";
    s += item;
  };
  if (t.piece != 0) add("piece=" + std::to_string(t.piece));
  if (t.min_part != 0) add("part=" + std::to_string(t.min_part));
  if (t.direct >= 0) add("direct=" + std::to_string(t.direct));
  if (t.stream >= 0) add("stream=" + std::to_string(t.stream));
  if (t.pend_stream >= 0) add(t.pend_stream ? "pend=stream" : "pend=event");
  if (t.ahead >= 0) add("ahead=" + std::to_string(t.ahead));
  return s;
}

bool same(const memory::TransferTuning &a, const memory::TransferTuning &b) {
  return a.piece == b.piece && a.min_part == b.min_part &&
         a.direct == b.direct && a.stream == b.stream &&
         a.pend_stream == b.pend_stream && a.ahead == b.ahead;
}

void check_transfer(std::string_view input) {
  std::string text(input.substr(0, input.find('\0')));
  memory::TransferTuning sentinel;
  sentinel.piece = 3;
  sentinel.min_part = 5;
  sentinel.direct = 7;
  memory::TransferTuning t = sentinel;
  if (!memory::TransferTuning::parse(text.c_str(), &t)) {
    if (!same(t, sentinel)) broken("transfer refusal wrote *out", text);
    return;
  }
  auto in = [](int v, int lo, int hi) { return v >= lo && v <= hi; };
  if (!in(t.direct, -1, 1) || !in(t.stream, -1, 1) ||
      !in(t.pend_stream, -1, 1) ||
      !in(t.ahead, -1, static_cast<int>(memory::k_upload_ahead_max)))
    broken("transfer field out of range", text);
  memory::TransferTuning again;
  if (!memory::TransferTuning::parse(print(t).c_str(), &again) ||
      !same(t, again))
    broken("transfer list does not print back", text);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (mode % 5) {
  case 0: check_bytes(rest); break;
  case 1:
    if (mode & 0x80) {
      // Names from the input: up to 6, separated by '|' (may repeat, may
      // be empty); the text is what follows a '#'.
      size_t hash = rest.find('#');
      std::string_view list = rest.substr(0, hash);
      std::string_view text =
          hash == std::string_view::npos ? "" : rest.substr(hash + 1);
      std::vector<std::string> names;
      size_t at = 0;
      while (names.size() < 6) {
        size_t bar = list.find('|', at);
        names.emplace_back(list.substr(at, bar - at));
        if (bar == std::string_view::npos) break;
        at = bar + 1;
      }
      // An accepted name is a C string: names stop at a NUL.
      std::vector<const char *> ptrs;
      for (std::string &n : names) {
        n.resize(std::strlen(n.c_str()));
        ptrs.push_back(n.c_str());
      }
      check_choice(text.substr(0, text.find('\0')), ptrs.data(), ptrs.size());
    } else {
      check_choice(rest, k_levels, 5);
    }
    break;
  case 2: check_quote(rest); break;
  case 3:
    if (!rest.empty()) check_environment(rest[0], rest.substr(1));
    break;
  case 4: check_transfer(rest); break;
  }
  return 0;
}
