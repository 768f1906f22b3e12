// The name expressions of compiled artifacts (issue 23 item 6), for the
// entry points that find a kernel, a global or a lowered name by the
// expression itself.
//
// An artifact (compile/artifact.hpp) keeps the lowered names of its
// request's name expressions, by index, but not the expressions. Its
// identity key covers them (compile::identity_key hashes the list), so
// t4a_compile remembers them here by key, paired with the artifact's
// lowered names, and every artifact with that key finds the same table.
// Process-wide, bounded by k_table_bytes of expressions and lowered
// names, least recently remembered or used dropped first: a table dropped
// while an artifact of its key lives is found again when that artifact's
// request is compiled again (a cache hit). One leaf mutex, taken by the
// fork handlers (capi/fork.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "core/fork.hpp"
#include "core/sha256.hpp"
#include "launch/names.hpp"

namespace t4a::compile {
class Artifact;
} // namespace t4a::compile

namespace t4a::capi {

// Bytes of expressions and lowered names kept at most.
inline constexpr uint64_t k_table_bytes = 16ull << 20;

// After t4a_compile made or found artifact `a` for `expressions` (its
// request's). Nothing when there are none. Without host memory for the
// table nothing is kept (a lookup by expression then says so).
void remember_name_expressions(
    const compile::Artifact &a,
    const std::vector<std::string> &expressions) noexcept;

// The table of `a`: null when it was compiled without name expressions
// or its table was dropped (`*forgotten` says which).
std::shared_ptr<const launch::NameTable>
name_table_of(const compile::Artifact &a, bool *forgotten);

void name_expressions_at_fork(core::ForkPhase phase);

} // namespace t4a::capi
