// What the launch layer may know of a compiled artifact: its image bytes,
// their kind and the identity digest. The compile layer produces it
// (compile::Artifact::view()); the launch layer loads modules from it and
// keys its module cache by the digest, without including anything of the
// compile layer. A view borrows: the image must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "core/sha256.hpp"

namespace t4a::core {

enum class ImageKind : uint8_t {
  Cubin, // compiled for one architecture
  Ptx,   // text, JIT-compiled by the driver when loaded
  Data,  // user-supplied bytes (cubin, fatbinary or PTX: the driver decides)
};

// "CUBIN", "PTX" or "module image": for messages.
constexpr const char *image_kind_name(ImageKind k) {
  return k == ImageKind::Cubin ? "CUBIN"
         : k == ImageKind::Ptx ? "PTX"
                               : "module image";
}

struct ArtifactView {
  // The bytes; std::string keeps a NUL after them, so PTX text is
  // terminated as cuModuleLoadData needs.
  const std::string &image;
  ImageKind kind;
  const Digest &key;
};

} // namespace t4a::core
