#include "core/runtime_options.hpp"

namespace t4a::core {

void resolve_runtime_options(const t4a_runtime_options &given,
                             t4a_runtime_options *out, Check *c) {
  using ull = unsigned long long;
  if (given.reserved0 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "options->reserved0 is %u; it must be 0", given.reserved0);
  if (given.reserved2 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "options->reserved2 is %u; it must be 0", given.reserved2);
  if (given.reserved3 != 0)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "options->reserved3 is %u; it must be 0", given.reserved3);
  if (given.peer_access != T4A_PEER_ACCESS_EXPLICIT &&
      given.peer_access != T4A_PEER_ACCESS_AUTO)
    return c->reject(
        T4A_ERROR_INVALID_ARGUMENT,
        "options->peer_access is %u; it must be T4A_PEER_ACCESS_EXPLICIT "
        "(0) or T4A_PEER_ACCESS_AUTO (1)",
        given.peer_access);
  t4a_runtime_options o = given;
  // The pool keeps everything by default; T4A_POOL_RELEASE_ALL asks the
  // driver for exactly 0. The result is the driver's value
  // (t4a_runtime_info reports it).
  if (o.pool_release_threshold == 0)
    o.pool_release_threshold = T4A_POOL_KEEP_ALL;
  else if (o.pool_release_threshold == T4A_POOL_RELEASE_ALL)
    o.pool_release_threshold = 0;
  if (o.staging_bytes == 0) o.staging_bytes = T4A_DEFAULT_STAGING_BYTES;
  if (o.staging_chunk_bytes == 0)
    o.staging_chunk_bytes = o.staging_bytes < T4A_DEFAULT_STAGING_CHUNK_BYTES
                                ? o.staging_bytes
                                : T4A_DEFAULT_STAGING_CHUNK_BYTES;
  if (o.staging_chunk_bytes < 4096 || o.staging_chunk_bytes > o.staging_bytes)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "options->staging_chunk_bytes is %llu; it must be at "
                     "least 4096 and at most options->staging_bytes (%llu)",
                     static_cast<ull>(o.staging_chunk_bytes),
                     static_cast<ull>(o.staging_bytes));
  if (o.module_cache_entries == 0)
    o.module_cache_entries = T4A_DEFAULT_MODULE_CACHE_ENTRIES;
  if (o.module_cache_bytes == 0)
    o.module_cache_bytes = T4A_DEFAULT_MODULE_CACHE_BYTES;
  if (o.staging_threads < 0 || o.staging_threads > 64)
    return c->reject(T4A_ERROR_INVALID_ARGUMENT,
                     "options->staging_threads is %d; it must be 0 "
                     "(automatic) or 1..64",
                     o.staging_threads);
  *out = o;
}

} // namespace t4a::core
