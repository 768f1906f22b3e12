#include "driver/env.hpp"

#include <cstdio>
#include <cstdlib>

namespace t4a::env {

namespace {

constexpr const char *k_names[] = {
#define T4A_ENV_NAME(e, n) n,
    T4A_ENV_VARIABLES(T4A_ENV_NAME)
#undef T4A_ENV_NAME
};
static_assert(sizeof k_names / sizeof k_names[0] == k_var_count);

constexpr size_t k_quote_max = 64;

bool is_suffix(char c) {
  return c == 'K' || c == 'M' || c == 'G' || c == 'T' || c == 'k' || c == 'm' ||
         c == 'g' || c == 't';
}

} // namespace

const char *name(Var v) { return k_names[static_cast<size_t>(v)]; }

bool find(std::string_view n, Var *out) {
  for (size_t i = 0; i < k_var_count; ++i)
    if (n == k_names[i]) {
      *out = static_cast<Var>(i);
      return true;
    }
  return false;
}

const char *raw(Var v) { return secure_getenv(name(v)); }

std::string text(Var v) {
  const char *t = raw(v);
  return t != nullptr ? std::string(t) : std::string();
}

bool parse_byte_count(std::string_view t, uint64_t *out, std::string *why) {
  if (t.empty()) {
    *why = "is empty; a decimal byte count is expected";
    return false;
  }
  if (t[0] == '-') {
    *why = "is negative; a byte count is 0 or more, written without a sign";
    return false;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c < '0' || c > '9') {
      *why = "is not a decimal byte count: byte " + std::to_string(i) + " is " +
             quote(t.substr(i, 1)) +
             " (only the digits 0-9 are accepted: no sign, blank, suffix "
             "or base prefix)";
      if (i > 0 && is_suffix(c)) *why += "; write the count in bytes";
      return false;
    }
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) {
      *why = "is larger than 18446744073709551615 (2^64 - 1), the largest "
             "byte count";
      return false;
    }
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool parse_choice(std::string_view t, const char *const *names, size_t count,
                  std::string_view what, size_t *out, std::string *why) {
  for (size_t i = 0; i < count; ++i)
    if (t == names[i]) {
      *out = i;
      return true;
    }
  std::string accepted;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) accepted += ", ";
    accepted += names[i];
  }
  *why = std::string(t.empty() ? "is empty, not " : "is not ") +
         std::string(what) + " (accepted: " + accepted + ")";
  return false;
}

std::string quote(std::string_view value) {
  std::string q = "'";
  size_t shown = value.size() < k_quote_max ? value.size() : k_quote_max;
  for (size_t i = 0; i < shown; ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      q += static_cast<char>(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      q += b;
    }
  }
  q += "'";
  if (shown < value.size())
    q += "... (" + std::to_string(value.size()) + " bytes)";
  return q;
}

std::string rejection(Var v, std::string_view value, std::string_view why,
                      std::string_view instead) {
  return std::string(name(v)) + "=" + quote(value) + " " + std::string(why) +
         "; ignored, " + std::string(instead);
}

Setting<uint64_t> byte_count(Var v, uint64_t fallback,
                             std::string_view instead) {
  Setting<uint64_t> s;
  s.value = fallback;
  const char *t = raw(v);
  if (t == nullptr) return s;
  s.set = true;
  std::string why;
  if (!parse_byte_count(t, &s.value, &why))
    s.error = rejection(v, t, why, instead);
  return s;
}

Setting<size_t> choice(Var v, const char *const *names, size_t count,
                       size_t fallback, std::string_view what,
                       std::string_view instead) {
  Setting<size_t> s;
  s.value = fallback;
  const char *t = raw(v);
  if (t == nullptr) return s;
  s.set = true;
  std::string why;
  if (!parse_choice(t, names, count, what, &s.value, &why))
    s.error = rejection(v, t, why, instead);
  return s;
}

} // namespace t4a::env
