#include "compile/toolkit.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "driver/env.hpp"

namespace t4a::compile {

namespace {

bool is_dir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent(const std::string &p) {
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

struct Candidate {
  std::string dir, from;
  bool named; // by the caller: a mismatch is an error, not passed over
};

std::vector<Candidate> candidates(const char *requested,
                                  const std::string &nvrtc_file) {
  std::vector<Candidate> c;
  if (requested != nullptr && requested[0] != '\0')
    c.push_back({requested, "t4a_compile_request::toolkit_include", true});
  // driver/env.hpp (secure_getenv: the toolkit chooses code that is
  // compiled and loaded, so a set-user-ID or set-group-ID process ignores
  // these variables).
  if (std::string e = env::text(env::Var::cuda_include); !e.empty())
    c.push_back({e, "T4A_CUDA_INCLUDE", true});
  for (env::Var root : {env::Var::cuda_home, env::Var::cuda_path})
    if (std::string e = env::text(root); !e.empty())
      c.push_back({e + "/include", env::name(root), false});
  if (!nvrtc_file.empty()) {
    std::string lib = parent(nvrtc_file);
    c.push_back({parent(lib) + "/include", "the NVRTC in use", false});
    c.push_back({parent(parent(lib)) + "/include", "the NVRTC in use", false});
  }
  c.push_back({"/usr/local/cuda/include", "/usr/local/cuda", false});
  // Relative names are taken against the current directory now: the memo
  // below and the dependencies' toolkit memo are keyed by the path, and a
  // later chdir must not let "tk" mean another directory's toolkit.
  // (getcwd only when a name is relative: it is a system call on every
  // compile, memory hits included.)
  char cwd[4096];
  int have_cwd = -1; // not asked yet
  for (Candidate &x : c) {
    if (x.dir.empty() || x.dir[0] == '/') continue;
    if (have_cwd < 0) have_cwd = ::getcwd(cwd, sizeof cwd) != nullptr;
    if (have_cwd == 1) x.dir = std::string(cwd) + "/" + x.dir;
  }
  return c;
}

// One candidate: SUCCESS with *out filled, SUCCESS with *why set (passed
// over), or an error (a named directory that is not the right one).
t4a_status try_candidate(const Candidate &c, int major, int minor, Toolkit *out,
                         std::string *why) {
  std::string dir = c.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  int v = is_dir(dir) ? cuda_version_of(dir + "/cuda.h") : 0;
  const int want = major * 1000 + minor * 10;
  if (v == 0) {
    *why = dir + " (" + c.from + "): " +
           (is_dir(dir) ? "no cuda.h with a CUDA_VERSION" : "not a directory");
    if (c.named)
      return core::fail_message(
          T4A_ERROR_INVALID_ARGUMENT,
          "the CUDA include directory " + *why +
              "; name a toolkit's include directory (the one holding cuda.h "
              "and cuda_fp16.h), or set T4A_COMPILE_NO_TOOLKIT_HEADERS");
    return T4A_SUCCESS;
  }
  if (v / 1000 != major || (v % 1000) / 10 != minor) {
    *why = dir + " (" + c.from + ") holds CUDA " + version_text(v) +
           " headers, but NVRTC is " + version_text(want);
    if (c.named)
      return core::fail_message(
          T4A_ERROR_VERSION_MISMATCH,
          "toolkit headers and NVRTC differ: " + *why +
              "; headers of another version can build a wrong kernel. Name "
              "the CUDA " +
              version_text(want) +
              " include directory, or set T4A_COMPILE_NO_TOOLKIT_HEADERS");
    return T4A_SUCCESS;
  }
  out->found = true;
  out->dirs = {dir};
  if (is_dir(dir + "/cccl")) out->dirs.push_back(dir + "/cccl");
  out->major = v / 1000;
  out->minor = (v % 1000) / 10;
  out->from = c.from;
  return T4A_SUCCESS;
}

struct Memo {
  std::string inputs;
  Toolkit result;
};

std::mutex g_memo_mu; // a leaf lock: nothing is called while it is held
std::vector<Memo> *g_memo = new std::vector<Memo>(); // never destroyed

} // namespace

int cuda_version_of(const std::string &cuda_h) {
  int fd = ::open(cuda_h.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  static const char k_define[] = "#define CUDA_VERSION";
  constexpr size_t k_chunk = 16 * 1024, k_limit = 256 * 1024;
  struct stat st;
  std::string text;
  size_t at = std::string::npos;
  // In chunks until the definition's line is complete: CUDA 13.0's is at
  // byte 14,324 of 1.1 MB, and a fresh process reads this file on every
  // first compile.
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    while (text.size() < k_limit) {
      size_t had = text.size();
      text.resize(had + k_chunk);
      ssize_t n = ::read(fd, text.data() + had, k_chunk);
      if (n < 0 && errno == EINTR) {
        text.resize(had);
        continue;
      }
      text.resize(had + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n <= 0) break;
      if (at == std::string::npos)
        at = text.find(k_define,
                       had >= sizeof k_define ? had - sizeof k_define : 0);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos)
        break;
    }
  }
  ::close(fd);
  if (at == std::string::npos) return 0;
  const char *p = text.c_str() + at + sizeof k_define - 1;
  while (*p == ' ' || *p == '\t') ++p;
  int v = 0, digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 6; ++p, ++digits)
    v = v * 10 + (*p - '0');
  return digits >= 4 ? v : 0;
}

t4a_status find_toolkit(const char *requested, int nvrtc_major, int nvrtc_minor,
                        const std::string &nvrtc_file, Toolkit *out) {
  std::vector<Candidate> list = candidates(requested, nvrtc_file);
  std::string inputs =
      std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor) + "\n";
  for (const Candidate &c : list) inputs += c.dir + "\n";
  {
    std::lock_guard<std::mutex> lock(g_memo_mu);
    for (const Memo &m : *g_memo)
      if (m.inputs == inputs) {
        *out = m.result;
        return T4A_SUCCESS;
      }
  }
  Toolkit t;
  for (const Candidate &c : list) {
    std::string why;
    if (t4a_status s = try_candidate(c, nvrtc_major, nvrtc_minor, &t, &why);
        s != T4A_SUCCESS)
      return s; // not memoized: the caller may fix it and try again
    if (t.found) break;
    if (!why.empty())
      t.passed_over += (t.passed_over.empty() ? "" : "; ") + why;
  }
  {
    std::lock_guard<std::mutex> lock(g_memo_mu);
    if (g_memo->size() >= 16) g_memo->clear();
    g_memo->push_back({inputs, t});
  }
  *out = std::move(t);
  return T4A_SUCCESS;
}

void toolkit_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    g_memo_mu.lock();
  else // the child's only thread is the one that locked it
    g_memo_mu.unlock();
}

} // namespace t4a::compile
