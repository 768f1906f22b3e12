// The forked-child state of core/fork.hpp (the handlers themselves are in
// capi/fork.cpp).
#include "core/fork.hpp"

#include <atomic>

namespace t4a::core {

const char k_fork_message[] =
    "CUDA cannot be used in a child process forked after the parent "
    "initialized the driver; use t4acuda's CUDA functions in the parent, or "
    "exec a new program in the child (fork then exec, or posix_spawn)";

namespace {
std::atomic<bool> g_forked_child{false};
} // namespace

bool in_forked_child() {
  return g_forked_child.load(std::memory_order_relaxed);
}
void set_forked_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
}

} // namespace t4a::core
