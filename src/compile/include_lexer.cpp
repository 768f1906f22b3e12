#include "compile/include_lexer.hpp"

#include <algorithm>
#include <cctype>

namespace t4a::compile {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\f' || c == '\v';
}

bool is_ident_start(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) != 0 || c == '_' || c == '$' || u >= 0x80;
}

bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

char trigraph(char c) {
  switch (c) {
  case '=': return '#';
  case '/': return '\\';
  case '\'': return '^';
  case '(': return '[';
  case ')': return ']';
  case '!': return '|';
  case '<': return '{';
  case '>': return '}';
  case '-': return '~';
  default: return 0;
  }
}

// Translation phases 1 and 2: trigraphs (when the variant has them), every
// line end (LF, CR LF, lone CR) as LF, then line splices removed.
std::string logical_text(std::string_view in, const LexVariant &v) {
  std::string t;
  t.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (v.trigraphs && c == '?' && i + 2 < in.size() && in[i + 1] == '?') {
      if (char m = trigraph(in[i + 2])) {
        t.push_back(m);
        i += 2;
        continue;
      }
    }
    if (c == '\r') {
      t.push_back('\n');
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
      continue;
    }
    t.push_back(c);
  }
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\') {
      size_t j = i + 1;
      if (v.lax_splices)
        while (j < t.size() && is_blank(t[j])) ++j;
      if (j < t.size() && t[j] == '\n') {
        i = j;
        continue;
      }
    }
    out.push_back(t[i]);
  }
  return out;
}

bool contains_include(std::string_view name) {
  static constexpr std::string_view k_word = "include";
  if (name.size() < k_word.size()) return false;
  for (size_t i = 0; i + k_word.size() <= name.size(); ++i) {
    bool match = true;
    for (size_t k = 0; k < k_word.size() && match; ++k)
      match =
          std::tolower(static_cast<unsigned char>(name[i + k])) == k_word[k];
    if (match) return true;
  }
  return false;
}

bool is_existence_operator(std::string_view id) {
  return id == "__has_include" || id == "__has_include_next" ||
         id == "__has_embed";
}

// A proper piece of "__has_include_next" or "__has_embed" that token
// pasting (`__has_ ## include`, or a CAT macro's arguments) could make
// into an existence operator the lexer does not see: "__has_", "include",
// "has_embed"... Pieces without "has", "incl" or "emb" ("next", "_") are
// too common to matter and cannot complete an operator on their own.
bool is_operator_piece(std::string_view id) {
  static constexpr std::string_view k_names[] = {"__has_include_next",
                                                 "__has_embed"};
  if (id.size() < 4 || is_existence_operator(id)) return false;
  bool telling = id.find("has") != std::string_view::npos ||
                 id.find("incl") != std::string_view::npos ||
                 id.find("emb") != std::string_view::npos;
  if (!telling) return false;
  for (std::string_view n : k_names)
    if (n.find(id) != std::string_view::npos) return true;
  return false;
}

class Lexer {
public:
  Lexer(std::string_view s, const LexVariant &v, ScanResult *out)
      : s_(s), v_(v), out_(out) {}

  void run() {
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == '\n') {
        ++line_;
        ++p_;
        at_line_start_ = true;
        continue;
      }
      if (is_blank(c)) {
        ++p_;
        continue;
      }
      if (skip_comment()) continue;
      if (at_line_start_ && (c == '#' || (c == '%' && peek(1) == ':'))) {
        p_ += c == '#' ? 1 : 2;
        at_line_start_ = false;
        directive();
        continue;
      }
      at_line_start_ = false;
      token();
    }
  }

private:
  char peek(size_t k) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }

  // A comment at p_: skipped (true). A block comment with a line end in
  // it leaves the next token at a line start (over-approximation: a
  // directive after `/* ... \n ... */` is taken as one).
  bool skip_comment() {
    if (s_[p_] != '/') return false;
    if (peek(1) == '/') {
      while (p_ < s_.size() && s_[p_] != '\n') ++p_;
      return true;
    }
    if (peek(1) != '*') return false;
    p_ += 2;
    while (p_ < s_.size() && !(s_[p_] == '*' && peek(1) == '/')) {
      if (s_[p_] == '\n') {
        ++line_;
        at_line_start_ = true;
      }
      ++p_;
    }
    p_ = std::min(p_ + 2, s_.size());
    return true;
  }

  // Blanks and comments (never a line end) from p_.
  void skip_blanks() {
    while (p_ < s_.size()) {
      if (is_blank(s_[p_])) {
        ++p_;
      } else if (s_[p_] == '/' && (peek(1) == '*' || peek(1) == '/')) {
        bool start = at_line_start_;
        skip_comment();
        at_line_start_ = start;
      } else {
        break;
      }
    }
  }

  std::string_view identifier() {
    size_t b = p_;
    while (p_ < s_.size() && is_ident_char(s_[p_])) ++p_;
    return s_.substr(b, p_ - b);
  }

  // A header name at p_ ('"' or '<'): the name, or false when it does not
  // close on its line (p_ is then left at the line end).
  bool header_name(char *delim, std::string *name) {
    char open = s_[p_];
    char close = open == '"' ? '"' : '>';
    size_t b = p_ + 1, e = b;
    while (e < s_.size() && s_[e] != close && s_[e] != '\n') ++e;
    if (e >= s_.size() || s_[e] != close) {
      p_ = e;
      return false;
    }
    *delim = open;
    name->assign(s_.substr(b, e - b));
    p_ = e + 1;
    return true;
  }

  void skip_line() {
    while (p_ < s_.size() && s_[p_] != '\n') ++p_;
  }

  std::string rest_of_line() {
    size_t b = p_;
    while (p_ < s_.size() && s_[p_] != '\n') ++p_;
    std::string t(s_.substr(b, p_ - b));
    while (!t.empty() && is_blank(t.back())) t.pop_back();
    return t;
  }

  void add_include(IncludeKind kind, char delim, std::string name,
                   uint32_t line) {
    IncludeRef r;
    r.kind = kind;
    r.delim = delim;
    r.name = std::move(name);
    r.line = line;
    out_->includes.push_back(std::move(r));
  }

  void directive() {
    skip_blanks();
    if (p_ >= s_.size() || !is_ident_start(s_[p_])) return;
    std::string_view name = identifier();
    IncludeKind kind = IncludeKind::Include;
    if (name == "include_next")
      kind = IncludeKind::IncludeNext;
    else if (name == "define")
      return define();
    else if (name == "error" || name == "warning" || name == "ident" ||
             name == "sccs")
      return skip_line(); // text, not tokens: "#error include a.h first"
    else if (name != "include" && name != "import" && name != "embed")
      return; // other directives: their tokens are lexed as usual
    uint32_t line = line_;
    skip_blanks();
    char delim = 0;
    std::string file;
    if (p_ < s_.size() && (s_[p_] == '"' || s_[p_] == '<') &&
        header_name(&delim, &file)) {
      add_include(kind, delim, std::move(file), line);
    } else {
      add_include(kind, 0, rest_of_line(), line);
    }
    skip_line(); // the rest cannot hide a later line
  }

  // `#define NAME(params) body`: a parameter handed on to an existence
  // operator or to a macro whose name contains "include" makes NAME a
  // wrapper. The body's tokens are lexed too (an object-like macro may
  // hold `__has_include(<x.h>)`).
  void define() {
    skip_blanks();
    if (p_ >= s_.size() || !is_ident_start(s_[p_])) return;
    std::string macro(identifier());
    out_->defines.push_back(macro);
    std::vector<std::string> params;
    if (p_ < s_.size() && s_[p_] == '(') {
      ++p_;
      for (;;) {
        skip_blanks();
        if (p_ >= s_.size() || s_[p_] == '\n') break;
        if (s_[p_] == ')') {
          ++p_;
          break;
        }
        if (is_ident_start(s_[p_]))
          params.emplace_back(identifier());
        else
          ++p_; // ',' or '...'
      }
    }
    define_macro_ = std::move(macro);
    define_params_ = std::move(params);
    while (p_ < s_.size() && s_[p_] != '\n') {
      if (is_blank(s_[p_])) {
        ++p_;
      } else if (!skip_comment()) {
        token();
      }
    }
    define_macro_.clear();
    define_params_.clear();
  }

  // Whether an identifier of `text` is a parameter of the #define.
  bool names_a_param(const std::string &text) const {
    for (size_t i = 0; i < text.size();) {
      if (!is_ident_start(text[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && is_ident_char(text[j])) ++j;
      if (is_param(std::string_view(text).substr(i, j - i))) return true;
      i = j;
    }
    return false;
  }

  bool is_param(std::string_view id) const {
    return std::find(define_params_.begin(), define_params_.end(), id) !=
           define_params_.end();
  }

  // After an existence operator or an include-named macro: its operand.
  void operand_of(std::string_view callee) {
    uint32_t line = line_;
    size_t save = p_;
    skip_blanks();
    if (p_ >= s_.size() || s_[p_] != '(') {
      p_ = save; // `defined(__has_include)`, `#ifdef __has_include`
      // `#define ALIAS __has_include`: ALIAS(<x.h>) tests <x.h>.
      if (!define_macro_.empty())
        out_->wrappers.push_back({define_macro_, std::string(callee)});
      return;
    }
    ++p_;
    skip_blanks();
    char delim = 0;
    std::string arg;
    bool named = p_ < s_.size() && (s_[p_] == '"' || s_[p_] == '<') &&
                 header_name(&delim, &arg);
    if (!named) {
      size_t b = p_;
      while (p_ < s_.size() && s_[p_] != ')' && s_[p_] != '\n' && s_[p_] != ',')
        ++p_;
      arg.assign(s_.substr(b, p_ - b));
      while (!arg.empty() && is_blank(arg.back())) arg.pop_back();
      if (!define_macro_.empty() && is_param(arg)) {
        out_->wrappers.push_back({define_macro_, std::string(callee)});
        return;
      }
    }
    if (is_existence_operator(callee)) {
      // In a #define body an angle name is expanded where the macro is
      // used: one naming a parameter (`__has_include(<name.h>)` in
      // `HAS(name)`) is computed.
      bool in_define = delim == '<' && !define_macro_.empty();
      if (in_define && names_a_param(arg)) delim = 0;
      add_include(IncludeKind::HasInclude, delim, std::move(arg), line);
      out_->includes.back().expandable = in_define && delim != 0;
    } else {
      MacroUse u;
      u.macro = std::string(callee);
      u.delim = delim;
      u.arg = std::move(arg);
      u.line = line;
      out_->uses.push_back(std::move(u));
    }
  }

  // A literal prefix (L, u, U, u8, and R forms) right before a quote.
  void literal_after(std::string_view id) {
    char q = s_[p_];
    bool raw = v_.raw_strings && q == '"' && !id.empty() && id.back() == 'R';
    std::string_view base = raw ? id.substr(0, id.size() - 1) : id;
    bool prefix = base.empty() || base == "L" || base == "u" || base == "U" ||
                  base == "u8";
    if (!prefix) return; // an identifier followed by a literal
    if (raw)
      raw_string();
    else
      quoted(q);
  }

  void quoted(char q) {
    ++p_;
    while (p_ < s_.size() && s_[p_] != '\n') {
      char c = s_[p_];
      if (c == '\\' && peek(1) != '\n' && p_ + 1 < s_.size()) {
        p_ += 2;
        continue;
      }
      ++p_;
      if (c == q) return;
    }
  }

  // p_ at the '"' of R"delim( ... )delim".
  void raw_string() {
    size_t b = p_ + 1, e = b;
    while (e < s_.size() && e - b <= 16 && s_[e] != '(' && s_[e] != ')' &&
           s_[e] != '\\' && s_[e] != '"' && !is_blank(s_[e]) && s_[e] != '\n')
      ++e;
    if (e >= s_.size() || s_[e] != '(' || e - b > 16) {
      quoted('"'); // not a raw string's opening: lexed as a plain string
      return;
    }
    std::string end = ")" + std::string(s_.substr(b, e - b)) + "\"";
    size_t close = s_.find(end, e + 1);
    size_t stop =
        close == std::string_view::npos ? s_.size() : close + end.size();
    line_ += static_cast<uint32_t>(
        std::count(s_.begin() + static_cast<long>(p_),
                   s_.begin() + static_cast<long>(stop), '\n'));
    p_ = stop;
  }

  void pp_number() {
    ++p_;
    while (p_ < s_.size()) {
      char c = s_[p_];
      char n = peek(1);
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') &&
          (n == '+' || n == '-')) {
        p_ += 2;
      } else if (is_ident_char(c) || c == '.') {
        ++p_;
      } else if (v_.digit_separators && c == '\'' && is_ident_char(n)) {
        p_ += 2;
      } else {
        break;
      }
    }
  }

  void token() {
    char c = s_[p_];
    if (is_ident_start(c)) {
      std::string_view id = identifier();
      if (p_ < s_.size() && (s_[p_] == '"' || s_[p_] == '\'')) {
        literal_after(id);
      } else if (is_existence_operator(id) || contains_include(id)) {
        operand_of(id);
      }
      if (is_operator_piece(id))
        add_include(IncludeKind::HasInclude, 0,
                    "'" + std::string(id) +
                        "' (a piece of an existence operator's name, "
                        "which token pasting could complete)",
                    line_);
      return;
    }
    if ((c >= '0' && c <= '9') ||
        (c == '.' && peek(1) >= '0' && peek(1) <= '9'))
      return pp_number();
    if (c == '"' || c == '\'') return quoted(c);
    ++p_;
  }

  std::string_view s_;
  const LexVariant &v_;
  ScanResult *out_;
  size_t p_ = 0;
  uint32_t line_ = 1;
  bool at_line_start_ = true;
  std::string define_macro_;
  std::vector<std::string> define_params_;
};

template <typename T>
void append_unique(std::vector<T> *to, std::vector<T> &from) {
  for (T &x : from)
    if (std::find(to->begin(), to->end(), x) == to->end())
      to->push_back(std::move(x));
}

} // namespace

bool names_existence_test(std::string_view identifier) {
  return is_existence_operator(identifier);
}

bool mentions_include(std::string_view identifier) {
  return contains_include(identifier);
}

void scan_includes_variant(std::string_view text, const LexVariant &v,
                           ScanResult *out) {
  std::string logical = logical_text(text, v);
  Lexer(logical, v, out).run();
}

namespace {

// The lexing choices a text gives occasion for: a choice it does not
// lexes it the same either way. Trigraphs need "??" before a trigraph
// character; lax splices a backslash, blanks and a line end; raw strings
// an 'R' before '"' (or a splice between); digit separators an apostrophe
// right after a digit or letter.
struct Occasions {
  bool trigraphs = false, lax = false, raw = false, separators = false;
};

Occasions occasions(std::string_view text) {
  Occasions o;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    char c = text[i], n = text[i + 1];
    if (c == '?' && n == '?' && i + 2 < text.size() && trigraph(text[i + 2]))
      o.trigraphs = true;
    if (c == '\\' && is_blank(n)) {
      size_t j = i + 1;
      while (j < text.size() && is_blank(text[j])) ++j;
      if (j < text.size() && (text[j] == '\n' || text[j] == '\r')) o.lax = true;
    }
    if (c == 'R' && (n == '"' || n == '\\' || n == '?')) o.raw = true;
    if (n == '\'' && (is_ident_char(c) || c == '.' || c == '\n' || c == '\r'))
      o.separators = true; // a line end: a splice may join a number and it
  }
  // "??/" is a backslash once trigraphs are replaced: blanks after it.
  if (o.trigraphs && text.find("?\?/") != std::string_view::npos) o.lax = true;
  return o;
}

} // namespace

ScanResult scan_includes(std::string_view text) {
  ScanResult all;
  // Only the variants of the choices that can matter are run.
  const Occasions o = occasions(text);
  for (unsigned bits = 0; bits < 16; ++bits) {
    if (((bits & 1) != 0 && !o.trigraphs) || ((bits & 2) != 0 && !o.lax) ||
        ((bits & 4) != 0 && !o.raw) || ((bits & 8) != 0 && !o.separators))
      continue;
    LexVariant v;
    v.trigraphs = (bits & 1) != 0;
    v.lax_splices = (bits & 2) != 0;
    v.raw_strings = (bits & 4) == 0;
    v.digit_separators = (bits & 8) == 0;
    ScanResult one;
    scan_includes_variant(text, v, &one);
    append_unique(&all.includes, one.includes);
    append_unique(&all.wrappers, one.wrappers);
    append_unique(&all.uses, one.uses);
    append_unique(&all.defines, one.defines);
  }
  return all;
}

} // namespace t4a::compile
