#include "compile/compiler.hpp"

#include <chrono>
#include <new>

#include "compile/compile_stats.hpp"
#include "compile/disk_cache.hpp"
#include "compile/in_flight.hpp"
#include "compile/key_plan.hpp"
#include "compile/memory_cache.hpp"
#include "compile/nvrtc_compile.hpp"
#include "compile/nvrtc_facts.hpp"
#include "compile/target.hpp"
#include "compile/toolkit.hpp"
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

// Registers the artifact (the caller's handle reference) and, when the
// compile is cacheable, caches it with a reference of the cache's own
// (issue 8, item 11).
t4a_status publish(Ref<Artifact> a, const Request &r, bool cacheable,
                   uint64_t *id) {
  uint64_t h =
      core::Registry::instance().insert(core::Ref<core::Object>(a.get()));
  if (cacheable && (r.flags & T4A_COMPILE_NO_MEMORY_CACHE) == 0) {
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

using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t)
          .count());
}

// Target and base identity key of a request under the given NVRTC facts.
t4a_status plan(const Request &r, const std::vector<std::string> &options,
                const DeviceTarget &d, const NvrtcFacts &nv, Target *target,
                bool *arch_given, core::Digest *key) {
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
  *key = identity_key(r, options, *target, nv.major, nv.minor);
  return T4A_SUCCESS;
}

// The caller's options, then the toolkit's include options
// (compile/toolkit.hpp) unless the request opts out.
t4a_status effective_options(const Request &r, const NvrtcFacts &nv,
                             Toolkit *tk, std::vector<std::string> *out) {
  *out = r.options;
  *tk = Toolkit();
  if ((r.flags & T4A_COMPILE_NO_TOOLKIT_HEADERS) != 0) return T4A_SUCCESS;
  if (t4a_status s = find_toolkit(
          r.toolkit_include.empty() ? nullptr : r.toolkit_include.c_str(),
          nv.major, nv.minor, nv.file, tk);
      s != T4A_SUCCESS)
    return s;
  for (const std::string &dir : tk->dirs)
    out->push_back("--include-path=" + dir);
  return T4A_SUCCESS;
}

// What a failed compile's message adds about the toolkit headers.
std::string toolkit_note(const Request &r, const Toolkit &tk) {
  if ((r.flags & T4A_COMPILE_NO_TOOLKIT_HEADERS) != 0)
    return " (toolkit headers not added: T4A_COMPILE_NO_TOOLKIT_HEADERS)";
  if (tk.found) return "";
  return " (no CUDA toolkit headers matching NVRTC were found" +
         (tk.passed_over.empty() ? std::string()
                                 : ": passed over " + tk.passed_over) +
         "; set T4A_CUDA_INCLUDE or t4a_compile_request::toolkit_include)";
}

struct Looked {
  bool done = false; // *id is set
  t4a_status status = T4A_SUCCESS;
};

// The caches, for a cacheable plan: a memory hit, else a disk hit.
Looked look_up(const Request &r, const KeyPlan &kp, LazyDiskConfig &lazy,
               Clock::time_point started, uint64_t *id) {
  CompileStats &stats = compile_stats();
  Looked out;
  if (!kp.cacheable) return out;
  if ((r.flags & T4A_COMPILE_NO_MEMORY_CACHE) == 0) {
    if (uint64_t hit =
            MemoryCache::instance().lookup(kp.key, ns_since(started))) {
      stats.memory_hits.add();
      *id = hit;
      out.done = true;
      return out;
    }
  }
  const DiskConfig &disk = lazy.get();
  if (!disk.enabled) return out;
  DiskEntry e;
  std::string why;
  switch (disk_read(disk, kp.key, &e, &why)) {
  case DiskRead::Hit: {
    stats.disk_hits.add();
    Ref<Artifact> a =
        core::make_ref<Artifact>(kp.key, e.target, std::move(e.image),
                                 std::move(e.log), std::move(e.lowered));
    a->returned(T4A_ARTIFACT_FROM_DISK, ns_since(started));
    out.done = true;
    out.status = publish(std::move(a), r, true, id);
    return out;
  }
  case DiskRead::Corrupt:
    stats.disk_corrupt_entries.add();
    core::logf(T4A_LOG_WARN,
               "compile cache: corrupt entry (%s); compiling again and "
               "replacing it",
               why.c_str());
    break;
  case DiskRead::Miss: break;
  }
  return out;
}

// Whether NVRTC runs with automatic precompiled headers (-pch, NVRTC
// 12.8+): only for a compile whose every dependency is a toolkit file or
// directory, and that has no given headers. NVRTC 13.0 reuses a PCH
// without checking a given header's content (a changed "v.h" of the same
// name compiled to the old value) and checks files by timestamp only, so
// a PCH is allowed only over files taken as unchanging for the process
// (the toolkit's). It checks the options itself. Not part of the key: it
// changes how fast NVRTC is, not what it makes (test_pch_same_output).
bool use_pch(const Request &r, const KeyPlan &kp, const Toolkit &tk,
             const NvrtcFacts &nv) {
  if ((r.flags & T4A_COMPILE_NO_PCH) != 0 || !tk.found || !kp.cacheable ||
      !kp.has_files || !r.header_names.empty())
    return false;
  if (nv.major * 100 + nv.minor < 1208) return false;
  bool toolkit_file = false;
  for (const Dependency &d : kp.deps.deps) {
    if (d.state != Dependency::Toolkit && d.state != Dependency::ToolkitDir)
      return false;
    toolkit_file = toolkit_file || d.state == Dependency::Toolkit;
  }
  return toolkit_file;
}

// NVRTC's failure as the call's error.
t4a_status nvrtc_failed(const NvrtcRun &run, const std::string &what,
                        const std::string &note) {
  t4a_status s = run.result == NVRTC_ERROR_OUT_OF_MEMORY
                     ? T4A_ERROR_OUT_OF_HOST_MEMORY
                     : T4A_ERROR_COMPILE;
  if (s == T4A_ERROR_COMPILE) core::set_compile_log(run.log);
  return core::fail_message(s,
                            what + ": " + run.failed_call + " returned " +
                                nvrtc_error_text(run.result) + note + "; " +
                                log_excerpt(run.log),
                            0, static_cast<int32_t>(run.result));
}

// Runs NVRTC for the planned compile, then caches and returns the result.
t4a_status run_and_publish(const Request &r, const KeyPlan &kp,
                           const core::Digest &base,
                           std::vector<std::string> options,
                           const Target &target, bool arch_given,
                           const Toolkit &tk, const NvrtcFacts &nv,
                           const DiskConfig &disk, Clock::time_point started,
                           uint64_t *id) {
  CompileStats &stats = compile_stats();
  if (!arch_given)
    options.push_back("-arch=" + arch_name(target.output, target.arch));
  if (use_pch(r, kp, tk, nv)) {
    options.push_back("-pch");
    // "the command line options do not match those used when precompiled
    // header file ... was created": NVRTC then makes another; not the
    // caller's concern, so not in the artifact's log.
    options.push_back("--diag-suppress=629");
  }
  const std::string what = "compiling '" + r.program_name + "' for " +
                           (arch_given ? std::string("the -arch option")
                                       : arch_name(target.output, target.arch));
  const Clock::time_point nvrtc_started = Clock::now();
  NvrtcRun run = run_nvrtc(r, options, target.output);
  const uint64_t nvrtc_ns = ns_since(nvrtc_started);
  if (run.compiled) stats.nvrtc_invocations.add();
  if (run.compiled && run.failed_call != "nvrtcCompileProgram")
    stats.nvrtc_successes.add();
  if (!run.failed_call.empty())
    return nvrtc_failed(run, what, toolkit_note(r, tk));
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
             target.output == T4A_COMPILE_PTX ? "PTX" : "CUBIN",
             static_cast<double>(nvrtc_ns) / 1e6);
  Ref<Artifact> a =
      core::make_ref<Artifact>(kp.key, target, std::move(run.image),
                               std::move(run.log), std::move(run.lowered));
  a->nvrtc_ns = nvrtc_ns;
  bool cacheable = kp.cacheable;
  if (cacheable) {
    std::string why;
    if (!record_key(base, kp, disk, &why)) {
      cacheable = false;
      core::logf(T4A_LOG_WARN, "compile cache: '%s' not cached: %s",
                 r.program_name.c_str(), why.c_str());
    }
  }
  if (cacheable && disk.enabled) {
    std::string why;
    if (!disk_write(disk, *a, &why))
      core::logf(T4A_LOG_WARN, "compile cache: entry not written: %s",
                 why.c_str());
    else
      nvrtc_remember(disk);
  }
  a->returned(T4A_ARTIFACT_FROM_NVRTC, ns_since(started));
  return publish(std::move(a), r, cacheable, id);
}

} // namespace

t4a_status compile(const Request &r, const DeviceTarget &d, uint64_t *id) {
  // Everything a compile logs is delivered when it returns, after the
  // compile lead, the call_once of the first NVRTC load and every cache
  // lock are released: a log callback may call t4a_compile (issue 8, items
  // 2 and 3). Declared first, so destroyed last.
  core::LogDefer defer;
  const Clock::time_point started = Clock::now();
  LazyDiskConfig disk(r); // a memory hit never reads it
  const NvrtcFacts *nv = nullptr;
  if (t4a_status s = nvrtc_facts(disk, &nv); s != T4A_SUCCESS) return s;
  CompileStats &stats = compile_stats();
  bool counted = false;
  Target target;
  bool arch_given = false;
  core::Digest base;
  KeyPlan kp;
  Toolkit tk;
  std::vector<std::string> options;
  InFlight::Lead lead;
  // Passes: a second when the facts came from a record and the library
  // loaded for the compile disagrees with it; another after waiting for
  // an identical compile of another thread.
  for (;;) {
    if (t4a_status s = effective_options(r, *nv, &tk, &options);
        s != T4A_SUCCESS)
      return s;
    if (t4a_status s = plan(r, options, d, *nv, &target, &arch_given, &base);
        s != T4A_SUCCESS)
      return s;
    if (!counted) stats.requests.add();
    counted = true;
    kp = plan_key(base, r, options, tk.dirs, disk);
    Looked l = look_up(r, kp, disk, started, id);
    if (l.done) return l.status;
    if (nv->loaded) {
      // Identical compiles at once run NVRTC once, when a cache can hand
      // the result over.
      if (!kp.cacheable ||
          ((r.flags & T4A_COMPILE_NO_MEMORY_CACHE) != 0 && !disk.get().enabled))
        break;
      InFlight::Turn turn = InFlight::instance().lead_or_wait(kp.key);
      if (turn == InFlight::Turn::Waited)
        continue; // an identical compile just finished: look again
      if (turn == InFlight::Turn::Lead) lead.start(kp.key);
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
    nvrtc_remember(disk.get());
  }
  return run_and_publish(r, kp, base, options, target, arch_given, tk, *nv,
                         disk.get(), started, id);
}

t4a_status describe_toolkit(std::string *out) {
  core::LogDefer defer; // the first NVRTC load logs past its call_once
  const NvrtcFacts *nv = nullptr;
  if (t4a_status s = nvrtc_loaded_facts(&nv); s != T4A_SUCCESS) return s;
  Toolkit tk;
  if (t4a_status s = find_toolkit(nullptr, nv->major, nv->minor, nv->file, &tk);
      s != T4A_SUCCESS)
    return s;
  std::string text = "nvrtc " + std::to_string(nv->major) + "." +
                     std::to_string(nv->minor) + " " + nv->file + "\n";
  for (const std::string &d : tk.dirs) text += "include " + d + "\n";
  if (tk.found)
    text += "version " + std::to_string(tk.major) + "." +
            std::to_string(tk.minor) + "\nfrom " + tk.from + "\n";
  if (!tk.passed_over.empty()) text += "passed-over " + tk.passed_over + "\n";
  *out = std::move(text);
  return T4A_SUCCESS;
}

} // namespace t4a::compile
