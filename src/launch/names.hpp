// Name expressions (issue 23 item 6): the name expressions an artifact was
// compiled with (t4a_compile_request::name_expressions), each with its
// lowered name, and how a name given by a caller finds one of them.
//
// Matching, in this order, each stage over every expression before the
// next: (1) the exact string; (2) the same tokens, whitespace ignored
// ("reduce<128,true>" finds "reduce<128, true>"; a space still separates
// two words, "unsigned int", and two characters that would otherwise
// make another token, "- -"); (3) as (2) with one leading '&' ignored on
// either side ("counter" finds "&counter", "&k<float>" finds "k<float>").
// Two expressions that match at the same stage with different lowered
// names make the name ambiguous. A name that matches none is the caller's
// raw (lowered or extern "C") name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "t4acuda.h"

namespace t4a::launch {

struct NameExpression {
  std::string expression; // as the request spelled it
  std::string lowered;    // NVRTC's lowered (mangled) name
};
// In request order. Immutable once made (shared by modules).
using NameTable = std::vector<NameExpression>;

// The tokens of `s` with whitespace dropped, but for one space between
// two word characters and between two characters that would join into
// another token ("+ +", "- -", "& &", "| |", "< <").
std::string normalize_expression(std::string_view s);

// The expression of `table` that `name` names (see above) in *out, or
// null when none does. INVALID_ARGUMENT naming `arg`, the name and both
// expressions when two match at one stage with different lowered names.
t4a_status find_expression(const NameTable &table, const char *name,
                           const char *arg, const NameExpression **out);

} // namespace t4a::launch
