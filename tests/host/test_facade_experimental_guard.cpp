// Host lane, issue 26: the facade's experimental part has its own include
// guard, outside the main one, so t4acuda.hpp included once without
// T4A_EXPERIMENTAL and again with it still declares t4a::Graph and
// t4a::Capture (before, the first inclusion hid them for good). A third
// inclusion adds nothing twice. Checked at compile time; C++17, pedantic,
// warnings as errors (tests/host/CMakeLists.txt).
// The same holds for t4acuda.h: its experimental section has its own
// guard too (T4ACUDA_H_EXPERIMENTAL), checked first.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "t4acuda.h"
#ifdef T4A_EXPERIMENTAL_REVISION
#error "t4acuda.h declared its experimental section without T4A_EXPERIMENTAL"
#endif
#include "t4acuda.hpp"
#ifdef T4ACUDA_HPP_EXPERIMENTAL
#error "the experimental facade was declared without T4A_EXPERIMENTAL"
#endif

#define T4A_EXPERIMENTAL
#include "t4acuda.h"
#ifndef T4A_EXPERIMENTAL_REVISION
#error "t4acuda.h included again with T4A_EXPERIMENTAL did not declare it"
#endif
#include "t4acuda.hpp"
#ifndef T4ACUDA_HPP_EXPERIMENTAL
#error "a later inclusion with T4A_EXPERIMENTAL did not declare it"
#endif
#include "t4acuda.hpp"

#include <type_traits>

static_assert(std::is_copy_constructible_v<t4a::Graph>);
static_assert(!std::is_copy_constructible_v<t4a::Capture>);
static_assert(std::is_nothrow_move_constructible_v<t4a::Capture>);
static_assert(sizeof(t4a::Capture) == sizeof(t4a_runtime));
static_assert(std::is_same_v<decltype(t4a::Capture::begin(
                                 t4a::RuntimeView(),
                                 std::declval<t4a::Capture &>(), std::nothrow)),
                             t4a_status>);

int main() { return 0; }
