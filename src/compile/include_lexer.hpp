// The include lexer: every file a piece of CUDA C++ text could make the
// preprocessor read, found with the preprocessor's own lexing rules rather
// than a text search (issue 23 item 2). It is the source of the disk
// cache's dependency tracking (compile/dependencies.hpp), so it must never
// miss a directive: where compilers differ (trigraphs, C++14 digit
// separators, C++11 raw strings, a backslash followed by blanks before the
// newline) the text is lexed under every combination of those choices and
// the results are united. Over-approximation (a directive inside `#if 0`
// or inside a comment that one variant does not see as a comment) is fine:
// it can only make the cache key depend on more files.
//
// Lexing follows translation phases 1 to 3: LF, CR LF and a lone CR end a
// line; a backslash (or the trigraph ??/) before a line end splices the
// lines; comments, string and character literals (with their prefixes),
// raw strings and pp-numbers are tokens; a directive starts with `#`, the
// digraph `%:` or the trigraph `??=` as the first token of a line (blanks
// and comments before it are allowed). Directives read: include,
// include_next, import, embed; and, anywhere in the text, the operators
// __has_include, __has_include_next and __has_embed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace t4a::compile {

enum class IncludeKind : uint8_t {
  Include,     // #include, #import, #embed: the file is read
  IncludeNext, // #include_next: read, searched from after the includer's dir
  HasInclude,  // __has_include, __has_include_next, __has_embed: existence
};

struct IncludeRef {
  IncludeKind kind = IncludeKind::Include;
  // '"' or '<' for a header name; 0 for a computed operand (a macro): the
  // file cannot be known without preprocessing, so the compile cannot be
  // proven cacheable.
  char delim = 0;
  std::string name;  // the header name, or the operand's text when computed
  uint32_t line = 0; // 1-based line of the directive (for messages)
  // An angle-bracket name that macro expansion may rewrite: an existence
  // test inside a #define body is expanded where the macro is used, so an
  // identifier of `<name.h>` that is a macro changes the file tested.
  bool expandable = false;

  bool operator==(const IncludeRef &o) const {
    return kind == o.kind && delim == o.delim && name == o.name &&
           expandable == o.expandable;
  }
};

// A function-like macro that forwards one of its parameters to an
// existence test: `#define HAS(x) __has_include(x)` gives {"HAS",
// "__has_include"}; `#define HAS2(x) HAS(x)` gives {"HAS2", "HAS"}.
struct WrapperDef {
  std::string macro, callee;
  bool operator==(const WrapperDef &) const = default;
};

// A use `NAME(<a.h>)`, `NAME("a.h")` or `NAME(other)` of a macro whose name
// contains "include" (any case): a header name passed to a wrapper. The
// dependency scan keeps the uses of the wrappers it found.
struct MacroUse {
  std::string macro;
  char delim = 0; // '"', '<', or 0 when the argument is not a header name
  std::string arg;
  uint32_t line = 0;
  // A macro's arguments are expanded before they replace its parameters:
  // an angle-bracket argument is always expandable (IncludeRef).
  bool operator==(const MacroUse &o) const {
    return macro == o.macro && delim == o.delim && arg == o.arg;
  }
};

struct ScanResult {
  std::vector<IncludeRef> includes;
  std::vector<WrapperDef> wrappers;
  std::vector<std::string> defines; // every macro name #defined
  std::vector<MacroUse> uses;
};

// Every include, wrapper and wrapper use of `text` under every lexing
// variant, without duplicates, in order of first appearance.
ScanResult scan_includes(std::string_view text);

// `__has_include`, `__has_include_next` or `__has_embed`.
bool names_existence_test(std::string_view identifier);
// Whether `identifier` contains "include" in any case (a wrapper's uses are
// followed only under such a name).
bool mentions_include(std::string_view identifier);

// One lexing variant (exposed for the fuzz target and the tests).
struct LexVariant {
  bool trigraphs = false;       // ??= ??/ ... are replaced (C++14 and older)
  bool lax_splices = false;     // backslash, blanks, newline is a splice
  bool raw_strings = true;      // R"d(...)d" (C++11 and newer)
  bool digit_separators = true; // 1'000 (C++14 and newer)
};
void scan_includes_variant(std::string_view text, const LexVariant &v,
                           ScanResult *out);

} // namespace t4a::compile
