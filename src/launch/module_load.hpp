// Loading a module through its runtime's module cache (launch/module.hpp):
// the module already cached for the image's identity key is returned (a
// cache hit, counted); otherwise the image is loaded and cached, and
// modules evicted to make room are dropped once the open completion epoch
// no longer needs them. Under the runtime's admission.
#pragma once

#include "core/artifact_view.hpp"
#include "core/object.hpp"
#include "core/runtime.hpp"
#include "launch/module.hpp"
#include <cstddef>
#include <memory>

namespace t4a::launch {

// A compiled artifact's image, keyed by its identity digest, with the
// artifact's name expressions (null: none). A cache hit keeps the cached
// module's own: the digest covers the expressions, so they are the same.
t4a_status load_cached(core::Ref<core::Runtime> rt,
                       const core::ArtifactView &artifact,
                       std::shared_ptr<const NameTable> names,
                       core::Ref<Module> *out);

// Caller-supplied image bytes: keyed by their SHA-256 digest, copied only
// on a miss.
t4a_status load_cached_data(core::Ref<core::Runtime> rt, const void *image,
                            size_t bytes, core::Ref<Module> *out);

} // namespace t4a::launch
