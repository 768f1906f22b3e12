#include "launch/occupancy.hpp"

#include "core/context_scope.hpp"

namespace t4a::launch {

namespace {

// The kernel's runtime usable and its context current.
t4a_status enter_kernel(Kernel &k, core::ContextScope *scope,
                        const char *what) {
  core::Runtime &rt = k.module().runtime();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  return scope->enter(rt.context(), what);
}

} // namespace

t4a_status occupancy(Kernel &k, int32_t block_size, uint64_t dynamic_shared,
                     int32_t *blocks_per_sm) {
  const char *what = "computing occupancy";
  core::ContextScope scope;
  if (t4a_status s = enter_kernel(k, &scope, what); s != T4A_SUCCESS) return s;
  int n = 0;
  if (auto r = driver::cu::occupancy_max_active_blocks(
          &n, k.function(), block_size, static_cast<size_t>(dynamic_shared));
      !r)
    return k.module().runtime().fail_op(r, what);
  *blocks_per_sm = n;
  return T4A_SUCCESS;
}

t4a_status suggest_block_size(Kernel &k, uint64_t dynamic_shared,
                              int32_t *block_size, int32_t *min_grid_size) {
  const char *what = "suggesting a block size";
  core::ContextScope scope;
  if (t4a_status s = enter_kernel(k, &scope, what); s != T4A_SUCCESS) return s;
  int grid = 0, block = 0;
  if (auto r = driver::cu::occupancy_max_potential_block_size(
          &grid, &block, k.function(), static_cast<size_t>(dynamic_shared));
      !r)
    return k.module().runtime().fail_op(r, what);
  *block_size = block;
  if (min_grid_size != nullptr) *min_grid_size = grid;
  return T4A_SUCCESS;
}

} // namespace t4a::launch
