#include "driver/nvrtc_api.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "driver/library_loader.hpp"

namespace t4a::driver {

NvrtcTable detail::g_nvrtc;

namespace {

NvrtcTable &g_table = detail::g_nvrtc;
bool g_has[static_cast<int>(NvrtcEntry::count_)] = {};

constexpr const char *const *k_names = k_nvrtc_entry_names;
constexpr bool k_required[] = {
#define X(name, required) (required) != 0,
#include "driver/nvrtc_entry_points.def"
#undef X
};

// The libraries tried, in order. One place, one reason per name.
std::vector<LibraryCandidate> nvrtc_candidates() {
  std::string override_path = env_or_empty("T4A_NVRTC_PATH");
  if (!override_path.empty()) return {{override_path, "T4A_NVRTC_PATH"}};
  std::vector<LibraryCandidate> c = {
      // The newest supported major first: CUDA 13's NVRTC.
      {"libnvrtc.so.13", "NVRTC 13 soname"},
      // CUDA 12's NVRTC still compiles for every target t4acuda supports.
      {"libnvrtc.so.12", "NVRTC 12 soname"},
  };
  // Toolkits are often installed outside the loader's search path.
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string home = env_or_empty(var);
    if (home.empty()) continue;
    c.push_back({home + "/lib64/libnvrtc.so.13", std::string(var) + " (13)"});
    c.push_back({home + "/lib64/libnvrtc.so.12", std::string(var) + " (12)"});
  }
  c.push_back({"/usr/local/cuda/lib64/libnvrtc.so.13",
               "default toolkit location (13)"});
  c.push_back({"/usr/local/cuda/lib64/libnvrtc.so.12",
               "default toolkit location (12)"});
  return c;
}

NvrtcState do_load() {
  NvrtcState s;
  LoadedLibrary lib = load_first(nvrtc_candidates());
  if (lib.handle == nullptr) {
    s.reason = "no NVRTC library could be loaded: " + lib.failure +
               ". Install the CUDA toolkit's NVRTC (12 or 13), or set "
               "CUDA_HOME to the toolkit or T4A_NVRTC_PATH to the full path "
               "of libnvrtc.so";
    return s;
  }
  void **slots[] = {
#define X(name, required) reinterpret_cast<void **>(&g_table.name),
#include "driver/nvrtc_entry_points.def"
#undef X
  };
  for (int i = 0; i < static_cast<int>(NvrtcEntry::count_); ++i) {
    void *fn = find_symbol(lib.handle, k_names[i]);
    if (fn != nullptr) {
      *slots[i] = fn;
      g_has[i] = true;
    } else if (k_required[i]) {
      s.reason = "NVRTC '" + lib.path + "' lacks the required entry point " +
                 k_names[i];
      return s;
    }
  }
  if (!nv::version(&s.major, &s.minor)) {
    s.reason = "nvrtcVersion failed in '" + lib.path + "'";
    return s;
  }
  if (s.major < 12) {
    s.reason = "NVRTC '" + lib.path + "' is version " +
               std::to_string(s.major) + "." + std::to_string(s.minor) +
               "; 12 or newer is required";
    return s;
  }
  s.path = lib.path;
  s.file = loaded_file(lib.handle);
  s.ready = true;
  return s;
}

std::atomic<bool> g_loaded{false};

// The NVRTC sections' lock: a process-wide reader-writer lock, read by
// the sections and written only by the fork prepare handler. A raw
// pthread rwlock rather than std::shared_mutex: it must prefer the writer
// (with glibc's default reader preference, overlapping compiles on other
// threads could make a fork wait forever), and the child must
// re-initialize it rather than unlock it (glibc unlocks a write lock only
// for the thread id that took it, and the forking thread has a new id in
// the child). Statically initialized, never destroyed: usable during exit.
pthread_rwlock_t g_section_lock =
    PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
// The NvrtcSections this thread is inside (sections nest; the lock is
// not recursive with a writer waiting, so only the outermost takes it).
thread_local int tl_section_depth = 0;
// Whether the fork prepare handler took g_section_lock (it does not when
// the forking thread is itself inside a section).
bool g_fork_took = false;

// The directories the dynamic loader searches for a library that this
// library dlopens (RPATH/RUNPATH, LD_LIBRARY_PATH as the loader read it at
// start-up, the system directories), in order; the loader cache is
// consulted between them and the system directories.
std::vector<std::string> loader_directories() {
  std::vector<std::string> dirs;
  Dl_info self{};
  void *h = nullptr;
  if (dladdr(reinterpret_cast<void *>(&loader_directories), &self) != 0 &&
      self.dli_fname != nullptr)
    h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen(nullptr, RTLD_LAZY);
  Dl_serinfo size{};
  if (h != nullptr && dlinfo(h, RTLD_DI_SERINFOSIZE, &size) == 0 &&
      size.dls_size >= sizeof(Dl_serinfo)) {
    std::unique_ptr<unsigned char[]> bytes(new unsigned char[size.dls_size]);
    auto *info = reinterpret_cast<Dl_serinfo *>(bytes.get());
    *info = size;
    if (dlinfo(h, RTLD_DI_SERINFO, info) == 0)
      for (unsigned i = 0; i < info->dls_cnt; ++i)
        dirs.emplace_back(info->dls_serpath[i].dls_name);
  }
  if (h != nullptr) dlclose(h);
  return dirs;
}

} // namespace

const NvrtcState &nvrtc_load() {
  static std::once_flag once;
  static NvrtcState *state = nullptr; // never destroyed: usable during exit
  std::call_once(once, [] {
    // dlopen runs libnvrtc's initializers; nvrtcVersion is a call.
    NvrtcSection section;
    state = new NvrtcState(do_load());
    g_loaded.store(true, std::memory_order_release);
  });
  return *state;
}

bool nvrtc_loaded() { return g_loaded.load(std::memory_order_acquire); }

NvrtcSearch nvrtc_search() {
  NvrtcSearch out;
  std::string &m = out.material;
  m = "t4acuda NVRTC search 1\nloader cache " +
      file_identity("/etc/ld.so.cache") + "\n";
  std::vector<std::string> dirs;
  bool have_dirs = false;
  // Some NVRTC already in the process (another library loaded it) may
  // answer a bare name without any search: then be exact and load.
  out.mapped = mapped_library("libnvrtc", "libnvrtc-builtins");
  std::string override_path = env_or_empty("T4A_NVRTC_PATH");
  if (!out.mapped && !override_path.empty()) {
    size_t slash = override_path.rfind('/');
    out.mapped = mapped_library(
        override_path.c_str() + (slash == std::string::npos ? 0 : slash + 1),
        nullptr);
  }
  for (const LibraryCandidate &c : nvrtc_candidates()) {
    m += "candidate " + c.path + "\n";
    if (c.path.find('/') != std::string::npos) {
      m += "  " + file_identity(c.path) + "\n";
      continue;
    }
    if (!have_dirs) {
      dirs = loader_directories();
      have_dirs = true;
    }
    for (const std::string &d : dirs)
      m += "  " + d + " " + file_identity(d + "/" + c.path) + "\n";
  }
  return out;
}

bool nvrtc_has(NvrtcEntry e) { return g_has[static_cast<int>(e)]; }

NvrtcSection::NvrtcSection() {
  // Fails only with EAGAIN (too many readers) or EDEADLK, neither possible
  // here (one read lock per thread, never nested); abort rather than call
  // NVRTC unprotected.
  if (tl_section_depth++ == 0 && pthread_rwlock_rdlock(&g_section_lock) != 0)
    std::abort();
}

NvrtcSection::~NvrtcSection() {
  // Unlocking a lock this thread holds cannot fail.
  if (--tl_section_depth == 0) (void)pthread_rwlock_unlock(&g_section_lock);
}

void nvrtc_fork_prepare() {
  // A thread inside a section cannot wait for itself. User code cannot
  // fork there (NVRTC calls back into nothing of the user's, and a section
  // runs no callback), so this only guards against a library bug: the
  // other threads' sections are then not waited for.
  g_fork_took = tl_section_depth == 0;
  // Cannot fail: this thread holds no read lock of it (EDEADLK).
  if (g_fork_took) (void)pthread_rwlock_wrlock(&g_section_lock);
}

void nvrtc_fork_parent() {
  // This thread took it (see nvrtc_fork_prepare); cannot fail.
  if (g_fork_took) (void)pthread_rwlock_unlock(&g_section_lock);
}

void nvrtc_fork_child() {
  // The only thread, with a new thread id: start from a fresh lock.
  if (!g_fork_took) return;
  pthread_rwlock_t fresh = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
  g_section_lock = fresh;
}

} // namespace t4a::driver
