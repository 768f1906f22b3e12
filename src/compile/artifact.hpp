// An artifact: the immutable result of one compile (image, full log,
// lowered names, identity key, target). Registered as Kind::Artifact;
// shared by handles, the in-memory cache and (later) modules. Immutable
// after construction, so every reader may use it without a lock.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/artifact_view.hpp"
#include "core/object.hpp"
#include "core/sha256.hpp"
#include "t4acuda.h"

namespace t4a::compile {

struct Target {
  uint32_t output = 0; // T4A_COMPILE_CUBIN or T4A_COMPILE_PTX
  int arch = 0;        // 90 for sm_90 / compute_90
};

class Artifact final : public core::Object {
public:
  Artifact(const core::Digest &key, Target target, std::string image,
           std::string log, std::vector<std::string> lowered_names)
      : Object(core::Kind::Artifact), key_(key), target_(target),
        image_(std::move(image)), log_(std::move(log)),
        lowered_(std::move(lowered_names)) {}

  const core::Digest &key() const { return key_; }
  Target target() const { return target_; }
  const std::string &image() const { return image_; }
  const std::string &log() const { return log_; }
  const std::vector<std::string> &lowered_names() const { return lowered_; }
  // Where the last t4a_compile that returned this artifact got it
  // (T4A_ARTIFACT_FROM_*) and how long that call took; relaxed atomics
  // (facts for a person, ordered with nothing). NVRTC's time when this
  // process compiled it (0 from disk) is set once, before publication.
  void returned(uint32_t origin, uint64_t ns) const {
    origin_.store(origin, std::memory_order_relaxed);
    call_ns_.store(ns, std::memory_order_relaxed);
  }
  uint32_t origin() const { return origin_.load(std::memory_order_relaxed); }
  uint64_t call_ns() const { return call_ns_.load(std::memory_order_relaxed); }
  uint64_t nvrtc_ns = 0;
  // What the launch layer loads (core/artifact_view.hpp).
  core::ArtifactView view() const {
    return {image_,
            target_.output == T4A_COMPILE_PTX ? core::ImageKind::Ptx
                                              : core::ImageKind::Cubin,
            key_};
  }
  // Bytes this artifact holds (what the in-memory cache bounds).
  uint64_t footprint() const {
    uint64_t n = image_.size() + log_.size();
    for (const std::string &s : lowered_) n += s.size();
    return n;
  }

private:
  core::Digest key_;
  Target target_;
  std::string image_;
  std::string log_;
  std::vector<std::string> lowered_;
  mutable std::atomic<uint32_t> origin_{0};
  mutable std::atomic<uint64_t> call_ns_{0};
};

} // namespace t4a::compile
