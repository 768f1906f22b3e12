#include "launch/names.hpp"

#include "core/error.hpp"

namespace t4a::launch {

namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$';
}
bool space_char(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v';
}
// Two characters that a removed space would join into another token.
bool joins(char a, char b) {
  if (word_char(a) && word_char(b)) return true;
  return a == b && (a == '+' || a == '-' || a == '&' || a == '|' || a == '<');
}

std::string_view without_ampersand(std::string_view s) {
  if (!s.empty() && s.front() == '&') s.remove_prefix(1);
  return s;
}

} // namespace

std::string normalize_expression(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool gap = false;
  for (char c : s) {
    if (space_char(c)) {
      gap = !out.empty();
      continue;
    }
    if (gap && joins(out.back(), c)) out.push_back(' ');
    gap = false;
    out.push_back(c);
  }
  return out;
}

t4a_status find_expression(const NameTable &table, const char *name,
                           const char *arg, const NameExpression **out) {
  *out = nullptr;
  if (table.empty()) return T4A_SUCCESS;
  const std::string_view given(name);
  const std::string norm = normalize_expression(given);
  const std::string norm_bare =
      normalize_expression(without_ampersand(std::string_view(norm)));
  for (int stage = 0; stage < 3; ++stage) {
    const NameExpression *hit = nullptr;
    for (const NameExpression &e : table) {
      bool match = false;
      if (stage == 0) {
        match = e.expression == given;
      } else {
        std::string en = normalize_expression(e.expression);
        if (stage == 1)
          match = en == norm;
        else
          match = normalize_expression(without_ampersand(en)) == norm_bare;
      }
      if (!match) continue;
      if (hit == nullptr) {
        hit = &e;
      } else if (hit->lowered != e.lowered) {
        return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                          "%s '%s' is ambiguous: it matches the name "
                          "expressions '%s' (lowered '%s') and '%s' (lowered "
                          "'%s'); spell one of them exactly",
                          arg, name, hit->expression.c_str(),
                          hit->lowered.c_str(), e.expression.c_str(),
                          e.lowered.c_str());
      }
    }
    if (hit != nullptr) {
      *out = hit;
      return T4A_SUCCESS;
    }
  }
  return T4A_SUCCESS;
}

} // namespace t4a::launch
