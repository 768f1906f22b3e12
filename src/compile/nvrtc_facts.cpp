#include "compile/nvrtc_facts.hpp"

#include <atomic>
#include <mutex>
#include <string_view>

#include "compile/nvrtc_compile.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/sha256.hpp"
#include "driver/library_loader.hpp"
#include "driver/nvrtc_api.hpp"

namespace t4a::compile {

namespace {

constexpr size_t k_record_max_bytes = 64 * 1024;

// The process's facts: set once from a record or the loaded library, then
// replaced at most once by the loaded library's. The record's facts stay
// reachable from g_record; neither is freed (usable during exit).
std::atomic<const NvrtcFacts *> g_facts{nullptr};
std::atomic<const NvrtcFacts *> g_record{nullptr};

std::string record_name(const std::string &material) {
  std::string hex =
      core::to_hex(core::Sha256::of(material.data(), material.size()));
  return "nvrtc-" + hex.substr(0, 32) + ".id";
}

const NvrtcFacts *believe_record(const DiskConfig &disk) {
  driver::NvrtcSearch s = driver::nvrtc_search();
  if (s.mapped) return nullptr; // loading it costs nothing: be exact
  std::string text, file, identity;
  NvrtcFacts f;
  if (!disk_get_file(disk, record_name(s.material), k_record_max_bytes,
                     &text) ||
      !nvrtc_record_parse(text, &file, &identity, &f) ||
      driver::file_identity(file) != identity)
    return nullptr;
  core::logf(T4A_LOG_INFO,
             "NVRTC %d.%d (%s) identified from its record in '%s', not "
             "loaded",
             f.major, f.minor, file.c_str(), disk.dir.c_str());
  f.file = file;
  const NvrtcFacts *mine = new NvrtcFacts(f);
  const NvrtcFacts *first = nullptr;
  if (!g_record.compare_exchange_strong(first, mine,
                                        std::memory_order_acq_rel)) {
    delete mine; // another thread was first
    mine = first;
  }
  const NvrtcFacts *expected = nullptr;
  if (g_facts.compare_exchange_strong(expected, mine,
                                      std::memory_order_acq_rel))
    return mine;
  return expected; // set meanwhile (a record, or the loaded library)
}

} // namespace

t4a_status nvrtc_loaded_facts(const NvrtcFacts **out) {
  const driver::NvrtcState &nv = driver::nvrtc_load();
  if (!nv.ready) return core::fail_message(T4A_ERROR_NO_COMPILER, nv.reason);
  static std::once_flag once;
  static const NvrtcFacts *loaded = nullptr;
  // The INFO below is delivered after call_once returns: a log callback
  // calling t4a_compile would otherwise re-enter this call_once on the
  // same thread and hang (issue 8, item 2).
  core::LogDefer defer_past_once;
  std::call_once(once, [&] {
    NvrtcFacts *f = new NvrtcFacts();
    f->major = nv.major;
    f->minor = nv.minor;
    f->archs = nvrtc_supported_archs();
    f->loaded = true;
    f->file = nv.file;
    loaded = f;
    core::logf(T4A_LOG_INFO, "NVRTC %d.%d loaded from '%s' (%s)", nv.major,
               nv.minor, nv.file.empty() ? nv.path.c_str() : nv.file.c_str(),
               nv.path.c_str());
  });
  g_facts.store(loaded, std::memory_order_release);
  *out = loaded;
  return T4A_SUCCESS;
}

t4a_status nvrtc_facts(LazyDiskConfig &lazy, const NvrtcFacts **out) {
  if (const NvrtcFacts *f = g_facts.load(std::memory_order_acquire)) {
    *out = f;
    return T4A_SUCCESS;
  }
  const DiskConfig &disk = lazy.get();
  if (disk.enabled && !driver::nvrtc_loaded()) {
    if (const NvrtcFacts *f = believe_record(disk)) {
      *out = f;
      return T4A_SUCCESS;
    }
  }
  if (t4a_status s = nvrtc_loaded_facts(out); s != T4A_SUCCESS) return s;
  // No record was believed: leave one for the processes to come.
  if (disk.enabled) nvrtc_remember(disk);
  return T4A_SUCCESS;
}

void nvrtc_remember(const DiskConfig &disk) {
  if (!disk.enabled) return;
  const driver::NvrtcState &nv = driver::nvrtc_load();
  const NvrtcFacts *f = nullptr;
  if (!nv.ready || nv.file.empty() || nvrtc_loaded_facts(&f) != T4A_SUCCESS)
    return;
  std::string name = record_name(driver::nvrtc_search().material);
  std::string text =
      nvrtc_record_text(nv.file, driver::file_identity(nv.file), *f);
  std::string old, why;
  if (disk_get_file(disk, name, k_record_max_bytes, &old) && old == text)
    return;
  if (!disk_put_file(disk, name, text, &why))
    core::logf(T4A_LOG_WARN, "compile cache: NVRTC record not written: %s",
               why.c_str());
}

} // namespace t4a::compile
