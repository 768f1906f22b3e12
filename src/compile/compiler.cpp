#include "compile/compiler.hpp"

#include <chrono>
#include <new>

#include "compile/compile_stats.hpp"
#include "compile/disk_cache.hpp"
#include "compile/in_flight.hpp"
#include "compile/memory_cache.hpp"
#include "compile/nvrtc_compile.hpp"
#include "compile/nvrtc_facts.hpp"
#include "compile/target.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/registry.hpp"

namespace t4a::compile {

using core::Ref;

namespace {

// The first lines of a log for an error message; the whole log stays
// available through t4a_last_compile_log().
std::string log_excerpt(const std::string &log) {
  constexpr size_t k_max_lines = 10, k_max_bytes = 2000;
  if (log.empty()) return "NVRTC printed no log";
  size_t end = 0, lines = 0;
  while (end < log.size() && lines < k_max_lines && end < k_max_bytes) {
    size_t nl = log.find('\n', end);
    end = nl == std::string::npos ? log.size() : nl + 1;
    ++lines;
  }
  if (end > k_max_bytes) end = k_max_bytes;
  std::string out = "log:\n" + log.substr(0, end);
  if (end < log.size())
    out += "... (" + std::to_string(log.size() - end) +
           " more bytes; t4a_last_compile_log() returns the complete log)";
  return out;
}

// Registers the artifact (the caller's handle reference) and caches it
// with a reference of the cache's own (issue 8, item 11).
t4a_status publish(Ref<Artifact> a, const Request &r, uint64_t *id) {
  uint64_t h =
      core::Registry::instance().insert(core::Ref<core::Object>(a.get()));
  if ((r.flags & T4A_COMPILE_NO_MEMORY_CACHE) == 0) {
    try {
      MemoryCache::instance().insert(a->key(), a, h, a->footprint());
    } catch (const std::bad_alloc &) { // not cached; the artifact is returned
    }
  }
  *id = h;
  return T4A_SUCCESS;
}

} // namespace

// Kept in the thread's last-error record, which (unlike a C++
// thread_local string) survives thread-local destruction at exit.
const std::string &last_compile_log() { return core::last_error().compile_log; }

namespace {

// Target and identity key of a request under the given NVRTC facts.
t4a_status plan(const Request &r, const DeviceTarget &d, const NvrtcFacts &nv,
                Target *target, bool *arch_given, core::Digest *key) {
  *arch_given = arch_from_options(r.options, r.output, target);
  if (!*arch_given) {
    TargetQuery q;
    q.archs = nv.archs;
    q.nvrtc_version = nv.major * 1000 + nv.minor * 10;
    q.driver_version = d.driver_version;
    q.cc_major = d.cc_major;
    q.cc_minor = d.cc_minor;
    q.output = r.output;
    TargetChoice c = select_target(q);
    if (c.status != T4A_SUCCESS)
      return core::fail_message(c.status, "selecting a target for '" +
                                              r.program_name +
                                              "': " + c.message);
    target->output = c.output;
    target->arch = c.arch;
  }
  *key = identity_key(r, *target, nv.major, nv.minor);
  return T4A_SUCCESS;
}

} // namespace

t4a_status compile(const Request &r, const DeviceTarget &d, uint64_t *id) {
  // Everything a compile logs is delivered when it returns, after the
  // compile lead, the call_once of the first NVRTC load and every cache
  // lock are released: a log callback may call t4a_compile (issue 8, items
  // 2 and 3). Declared first, so destroyed last.
  core::LogDefer defer;
  DiskConfig disk = disk_config(r);
  const NvrtcFacts *nv = nullptr;
  if (t4a_status s = nvrtc_facts(disk, &nv); s != T4A_SUCCESS) return s;
  CompileStats &stats = compile_stats();
  bool counted = false;
  Target target;
  bool arch_given = false;
  core::Digest key;
  InFlight::Lead lead;
  // Passes: a second when the facts came from a record and the library
  // loaded for the compile disagrees with it; another after waiting for
  // an identical compile of another thread.
  for (;;) {
    if (t4a_status s = plan(r, d, *nv, &target, &arch_given, &key);
        s != T4A_SUCCESS)
      return s;
    if (!counted) stats.requests.add();
    counted = true;
    if ((r.flags & T4A_COMPILE_NO_MEMORY_CACHE) == 0) {
      if (uint64_t hit = MemoryCache::instance().lookup(key)) {
        stats.memory_hits.add();
        *id = hit;
        return T4A_SUCCESS;
      }
    }
    if (disk.enabled) {
      DiskEntry e;
      std::string why;
      switch (disk_read(disk, key, &e, &why)) {
      case DiskRead::Hit:
        stats.disk_hits.add();
        return publish(
            core::make_ref<Artifact>(key, e.target, std::move(e.image),
                                     std::move(e.log), std::move(e.lowered)),
            r, id);
      case DiskRead::Corrupt:
        stats.disk_corrupt_entries.add();
        core::logf(T4A_LOG_WARN,
                   "compile cache: corrupt entry (%s); compiling again and "
                   "replacing it",
                   why.c_str());
        break;
      case DiskRead::Miss: break;
      }
    }
    if (nv->loaded) {
      // Identical compiles at once run NVRTC once, when a cache can hand
      // the result over.
      if ((r.flags & T4A_COMPILE_NO_MEMORY_CACHE) != 0 && !disk.enabled) break;
      InFlight::Turn turn = InFlight::instance().lead_or_wait(key);
      if (turn == InFlight::Turn::Waited)
        continue; // an identical compile just finished: look again
      if (turn == InFlight::Turn::Lead) lead.start(key);
      break;
    }
    const NvrtcFacts *real = nullptr;
    if (t4a_status s = nvrtc_loaded_facts(&real); s != T4A_SUCCESS) return s;
    bool same = *real == *nv;
    nv = real;
    if (same) break;
    core::logf(T4A_LOG_WARN,
               "compile cache: an NVRTC record was stale (NVRTC %d.%d is "
               "loaded); replacing it and looking the request up again",
               real->major, real->minor);
    nvrtc_remember(disk);
  }

  std::vector<std::string> options = r.options;
  if (!arch_given)
    options.push_back("-arch=" + arch_name(target.output, target.arch));
  const std::string what = "compiling '" + r.program_name + "' for " +
                           (arch_given ? std::string("the -arch option")
                                       : arch_name(target.output, target.arch));
  const auto started = std::chrono::steady_clock::now();
  NvrtcRun run = run_nvrtc(r, options, target.output);
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - started)
                        .count();
  if (run.compiled) stats.nvrtc_invocations.add();
  if (run.compiled && run.failed_call != "nvrtcCompileProgram")
    stats.nvrtc_successes.add();
  if (!run.failed_call.empty()) {
    t4a_status s = run.result == NVRTC_ERROR_OUT_OF_MEMORY
                       ? T4A_ERROR_OUT_OF_HOST_MEMORY
                       : T4A_ERROR_COMPILE;
    if (s == T4A_ERROR_COMPILE) core::set_compile_log(run.log);
    return core::fail_message(s,
                              what + ": " + run.failed_call + " returned " +
                                  nvrtc_error_text(run.result) + "; " +
                                  log_excerpt(run.log),
                              0, static_cast<int32_t>(run.result));
  }
  if (run.image.empty()) {
    core::set_compile_log(run.log);
    return core::fail_message(
        T4A_ERROR_COMPILE,
        what + ": NVRTC produced an empty " +
            (target.output == T4A_COMPILE_PTX ? "PTX" : "CUBIN") +
            " image (a CUBIN needs a real sm_ architecture, not a virtual "
            "compute_ one); nothing was cached; " +
            log_excerpt(run.log));
  }
  core::logf(T4A_LOG_INFO, "%s: %zu-byte %s in %.1f ms (NVRTC)", what.c_str(),
             run.image.size(),
             target.output == T4A_COMPILE_PTX ? "PTX" : "CUBIN", ms);
  Ref<Artifact> a =
      core::make_ref<Artifact>(key, target, std::move(run.image),
                               std::move(run.log), std::move(run.lowered));
  if (disk.enabled) {
    std::string why;
    if (!disk_write(disk, *a, &why))
      core::logf(T4A_LOG_WARN, "compile cache: entry not written: %s",
                 why.c_str());
    else
      nvrtc_remember(disk);
  }
  return publish(std::move(a), r, id);
}

} // namespace t4a::compile
