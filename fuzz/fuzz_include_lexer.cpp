// libFuzzer target: the include lexer (src/compile/include_lexer.cpp, issue
// 23 item 2), over arbitrary text. It must never crash or read out of
// bounds, the union of every variant holds each variant's finds, and a
// differential check against a simple reference: on a text without
// comments, character literals, raw strings or trigraphs (the input with
// '/', '\'', 'R' and '?' replaced), plain line-by-line readings after
// line splicing (strict, and lax as GCC's) find together exactly the
// header-name includes the lexer finds.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "compile/include_lexer.hpp"

using namespace t4a::compile;

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }

// The reference: LF, CR LF and CR end lines; backslash-newline splices
// (with `lax`, also a backslash followed by blanks, as GCC and Clang
// read it); a line whose first non-blank is '#' or "%:" followed by a
// directive name and a header name.
std::vector<IncludeRef> reference(const std::string &in, bool lax) {
  std::string t;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      t.push_back('\n');
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      t.push_back(in[i]);
    }
  }
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\') {
      size_t j = i + 1;
      while (lax && j < t.size() && blank(t[j])) ++j;
      if (j < t.size() && t[j] == '\n') {
        i = j;
        continue;
      }
    }
    s.push_back(t[i]);
  }
  std::vector<IncludeRef> out;
  size_t p = 0;
  while (p < s.size()) {
    size_t e = s.find('\n', p);
    if (e == std::string::npos) e = s.size();
    std::string line = s.substr(p, e - p);
    p = e + 1;
    size_t q = 0;
    while (q < line.size() && blank(line[q])) ++q;
    if (line.compare(q, 1, "#") == 0)
      q += 1;
    else if (line.compare(q, 2, "%:") == 0)
      q += 2;
    else
      continue;
    while (q < line.size() && blank(line[q])) ++q;
    size_t b = q;
    while (q < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[q])) ||
            line[q] == '_' || line[q] == '$' ||
            static_cast<unsigned char>(line[q]) >= 0x80))
      ++q;
    std::string name = line.substr(b, q - b);
    IncludeRef r;
    if (name == "include" || name == "import" || name == "embed")
      r.kind = IncludeKind::Include;
    else if (name == "include_next")
      r.kind = IncludeKind::IncludeNext;
    else
      continue;
    while (q < line.size() && blank(line[q])) ++q;
    if (q >= line.size() || (line[q] != '"' && line[q] != '<')) continue;
    char close = line[q] == '"' ? '"' : '>';
    size_t c = line.find(close, q + 1);
    if (c == std::string::npos) continue;
    r.delim = line[q];
    r.name = line.substr(q + 1, c - q - 1);
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

std::vector<IncludeRef> named_includes(const ScanResult &r) {
  std::vector<IncludeRef> out;
  for (const IncludeRef &i : r.includes)
    if (i.delim != 0 && i.kind != IncludeKind::HasInclude) out.push_back(i);
  return out;
}

bool same_set(std::vector<IncludeRef> a, std::vector<IncludeRef> b) {
  auto less = [](const IncludeRef &x, const IncludeRef &y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    if (x.delim != y.delim) return x.delim < y.delim;
    return x.name < y.name;
  };
  std::sort(a.begin(), a.end(), less);
  std::sort(b.begin(), b.end(), less);
  return a.size() == b.size() &&
         std::equal(
             a.begin(), a.end(), b.begin(),
             [](const IncludeRef &x, const IncludeRef &y) { return x == y; });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  ScanResult all = scan_includes(text);
  // Every variant, including those scan_includes skips as making no
  // difference for this text: their finds must all be in the union.
  for (unsigned bits = 0; bits < 16; ++bits) {
    LexVariant v;
    v.trigraphs = (bits & 1) != 0;
    v.lax_splices = (bits & 2) != 0;
    v.raw_strings = (bits & 4) == 0;
    v.digit_separators = (bits & 8) == 0;
    ScanResult one;
    scan_includes_variant(text, v, &one);
    for (const IncludeRef &i : one.includes)
      if (std::find(all.includes.begin(), all.includes.end(), i) ==
          all.includes.end())
        std::abort(); // the union lost a variant's find
    for (const WrapperDef &w : one.wrappers)
      if (std::find(all.wrappers.begin(), all.wrappers.end(), w) ==
          all.wrappers.end())
        std::abort();
    for (const MacroUse &u : one.uses)
      if (std::find(all.uses.begin(), all.uses.end(), u) == all.uses.end())
        std::abort();
  }
  std::string plain = text;
  for (char &c : plain)
    if (c == '/' || c == '\'' || c == 'R' || c == '?') c = 'x';
  // The lexer unites every reading; here only the splice rule differs.
  std::vector<IncludeRef> want = reference(plain, false);
  for (const IncludeRef &i : reference(plain, true))
    if (std::find(want.begin(), want.end(), i) == want.end()) want.push_back(i);
  if (!same_set(named_includes(scan_includes(plain)), want)) std::abort();
  return 0;
}
