#include "compile/dependencies.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "compile/include_lexer.hpp"

namespace t4a::compile {

namespace {

constexpr uint64_t k_max_files = 20000;
constexpr uint64_t k_max_bytes = uint64_t{256} << 20;

FileStamp stamp_of(const struct stat &st) {
  FileStamp s;
  s.dev = static_cast<uint64_t>(st.st_dev);
  s.ino = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.ctime_ns =
      static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return s;
}

// Whether `path` is a regular file now (stat follows links, as NVRTC's
// open does); *stamp when it is.
bool regular_file(const std::string &path, FileStamp *stamp) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *stamp = stamp_of(st);
  return true;
}

// Reads a regular file whole; false with *why when it cannot be read.
bool read_file(const std::string &path, std::string *out, FileStamp *stamp,
               std::string *why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // Read to the end, one byte past the size the file claims: a file whose
  // content is not its size (procfs, or one growing meanwhile) cannot be
  // identified by what was read.
  if (ok) {
    *stamp = stamp_of(st);
    out->resize(static_cast<size_t>(st.st_size) + 1);
    size_t done = 0;
    for (;;) {
      ssize_t n = ::read(fd, out->data() + done, out->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) ok = false;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
      if (done == out->size()) break; // more than its size: refused below
    }
    ok = ok && done == static_cast<size_t>(st.st_size);
    out->resize(done);
  }
  ::close(fd);
  if (!ok)
    *why = "'" + path + "' cannot be read in full, or holds other than its " +
           "size (" + std::to_string(st.st_size) + " bytes) says";
  return ok;
}

// Lexical normalization ("a/./b/../c" -> "a/c"), for the toolkit prefix
// test only; dependencies keep the path as NVRTC would build it.
std::string normalized(const std::string &p) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string part = p.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else
        parts.push_back(part);
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out = p.size() > 0 && p[0] == '/' ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k)
    out += (k == 0 ? "" : "/") + parts[k];
  return out;
}

// No "." or ".." component and no doubled slash: the path names what its
// text says, component by component.
bool lexically_plain(const std::string &p) {
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string part = p.substr(i, j - i);
    if (part == "." || part == ".." || (part.empty() && i != 0)) return false;
    i = j + 1;
  }
  return p.empty() || p.back() != '/'; // "d/" names no file
}

std::string dirname_of(const std::string &p) {
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string join(const std::string &dir, const std::string &name) {
  if (!name.empty() && name[0] == '/') return name;
  if (dir == ".") return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// The toolkit's identity, taken once per process: the first state seen
// of every path under a toolkit directory, and the lexing of its files.
struct ToolkitMemo {
  std::mutex mu; // a leaf lock
  std::unordered_map<std::string, std::pair<bool, FileStamp>> state;
  std::unordered_map<std::string, ScanResult> scans;
};
ToolkitMemo &toolkit_memo() {
  static ToolkitMemo *m = new ToolkitMemo(); // never destroyed
  return *m;
}

// Directories opened for one walk or one validation (never longer: a
// directory renamed or replaced meanwhile is seen by the next call), so
// that the stats of the hundreds of toolkit files a program can include
// look up one component each instead of the whole path (measured on the
// GPU machine: 271 cooperative-groups dependencies, 0.32-0.60 ms by
// absolute path, 0.13-0.24 ms relative to an open directory).
class DirFds {
public:
  DirFds() = default;
  DirFds(const DirFds &) = delete;
  DirFds &operator=(const DirFds &) = delete;
  ~DirFds() {
    for (Slot &s : slots_)
      if (s.fd >= 0) ::close(s.fd); // O_PATH: close has nothing to flush
  }

  // stat(path): through path's directory. At most k_slots directories are
  // open at once (the oldest is closed for a new one): validation visits
  // the paths sorted, so a directory's files come together, and the
  // process's descriptors are never crowded.
  int stat(const std::string &path, struct stat *st) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == path.size())
      return ::stat(path.c_str(), st);
    std::string_view dir(path.data(), slash);
    Slot *hit = nullptr;
    for (Slot &s : slots_)
      if (s.fd >= 0 && s.dir == dir) hit = &s;
    if (hit == nullptr) {
      int fd =
          ::open(std::string(dir).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return ::stat(path.c_str(), st); // says why it fails
      Slot &s = slots_[next_++ % k_slots];
      if (s.fd >= 0) ::close(s.fd);
      s.fd = fd;
      s.dir = std::string(dir);
      hit = &s;
    }
    return ::fstatat(hit->fd, path.c_str() + slash + 1, st, 0);
  }

private:
  struct Slot {
    std::string dir;
    int fd = -1;
  };
  static constexpr size_t k_slots = 4;
  Slot slots_[k_slots];
  size_t next_ = 0;
};

// Whether `path` is a directory now (`dir`) or a regular file; *stamp
// when it is.
bool present_as(const std::string &path, bool dir, FileStamp *stamp,
                DirFds *fds) {
  struct stat st;
  if (fds->stat(path, &st) != 0) return false;
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return false;
  *stamp = stamp_of(st);
  return true;
}

// The process's state of a toolkit path: a regular file (`dir` false) or
// a directory (`dir` true) and its stamp, or not.
bool toolkit_state(const std::string &path, bool dir, FileStamp *stamp,
                   DirFds *fds) {
  ToolkitMemo &m = toolkit_memo();
  // The kind first: "d/" as a file and "d" as a directory never share a
  // key.
  const std::string key = (dir ? "d:" : "f:") + path;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (auto it = m.state.find(key); it != m.state.end()) {
      *stamp = it->second.second;
      return it->second.first;
    }
  }
  FileStamp s;
  bool present = present_as(path, dir, &s, fds);
  std::lock_guard<std::mutex> lock(m.mu);
  auto [it, inserted] = m.state.emplace(key, std::make_pair(present, s));
  *stamp = it->second.second;
  return it->second.first;
}

struct FileScan {
  std::string where;                   // for messages
  std::vector<std::string> quote_dirs; // searched first for "name"
  ScanResult result;
};

class Walker {
public:
  Walker(const Request &r, const std::vector<std::string> &options,
         const std::vector<std::string> &toolkit_dirs)
      : r_(r) {
    include_options(options, &dirs_, &pre_includes_);
    for (const std::string &d : toolkit_dirs)
      if (std::string n = normalized(d); !n.empty() && n[0] == '/' && n != "/")
        toolkit_prefixes_.push_back(n + "/"); // absolute (toolkit.cpp)
    std::string program_dir = dirname_of(r.program_name);
    memory_dirs_ = {program_dir};
    if (program_dir != ".") memory_dirs_.push_back(".");
  }

  ScanOutcome run() {
    for (const std::string &v : dirs_) // how NVRTC reads these is unknown
      if (v.find_first_of("\v\f\r") != std::string::npos)
        return unprovable("the include directory '" + v +
                          "' holds a form feed or vertical tab");
    add_text("the source ('" + r_.program_name + "')", memory_dirs_, r_.source);
    for (size_t i = 0; i < r_.header_sources.size(); ++i) {
      // NVRTC resolves a given header's quoted includes in the directory
      // of its name ("sub/h.h": sub/, from the current directory).
      std::vector<std::string> dirs = memory_dirs_;
      std::string own = dirname_of(r_.header_names[i]);
      if (std::find(dirs.begin(), dirs.end(), own) == dirs.end())
        dirs.push_back(own);
      add_text("the header '" + r_.header_names[i] + "'", std::move(dirs),
               r_.header_sources[i]);
    }
    for (const std::string &f : pre_includes_)
      resolve(f, '"', IncludeKind::Include, memory_dirs_);
    for (size_t i = 0; i < scans_.size() && out_.provable; ++i) {
      // scans_ grows while it is walked: index, not iterators.
      std::vector<IncludeRef> includes = scans_[i].result.includes;
      std::vector<std::string> qd = scans_[i].quote_dirs;
      for (const IncludeRef &inc : includes) {
        if (inc.delim == 0)
          return unprovable(scans_[i].where + " line " +
                            std::to_string(inc.line) + ": an include named " +
                            "by a macro (" + inc.name.substr(0, 80) +
                            ") cannot be followed without preprocessing");
        resolve(inc.name, inc.delim, inc.kind, qd);
        if (!out_.provable) return out_;
      }
    }
    if (out_.provable) follow_wrappers();
    if (!out_.provable) return out_;
    for (auto &[path, dep] : deps_) out_.set.deps.push_back(dep);
    return out_;
  }

private:
  ScanOutcome &unprovable(const std::string &why) {
    if (out_.provable) {
      out_.provable = false;
      out_.why = why;
    }
    return out_;
  }

  void add_text(std::string where, std::vector<std::string> quote_dirs,
                const std::string &text) {
    FileScan f{std::move(where), std::move(quote_dirs), scan_includes(text)};
    scans_.push_back(std::move(f));
  }

  // A path under a toolkit directory that the kernel resolves as its text
  // reads: no "." or "..", and no symbolic link (dangling or not) below
  // the toolkit directory, whose target could be anywhere. Only such a
  // path is a toolkit dependency (checked once per process); any other is
  // checked on every lookup like a user's.
  bool is_toolkit(const std::string &path) const {
    if (!lexically_plain(path)) return false;
    for (const std::string &p : toolkit_prefixes_) {
      if (path.compare(0, p.size(), p) != 0) continue;
      for (size_t at = path.find('/', p.size());; at = path.find('/', at + 1)) {
        std::string part = path.substr(0, at);
        struct stat st;
        if (::lstat(part.c_str(), &st) != 0)
          return errno == ENOENT; // absent: no link beyond it either
        if (S_ISLNK(st.st_mode)) return false;
        if (at == std::string::npos) break;
      }
      return true;
    }
    return false;
  }

  bool given(const std::string &name) const {
    return std::find(r_.header_names.begin(), r_.header_names.end(), name) !=
           r_.header_names.end();
  }

  void resolve(const std::string &name, char delim, IncludeKind kind,
               const std::vector<std::string> &quote_dirs) {
    // A given header is taken before any file of that name (checked
    // against NVRTC 13.0); it is scanned as a root.
    if (given(name)) return;
    bool read = kind != IncludeKind::HasInclude;
    if (!name.empty() && name[0] == '/') return record(name, read);
    // Every directory that could be searched, in any order: every
    // candidate is a dependency, so the search order cannot matter.
    if (delim == '"')
      for (const std::string &d : quote_dirs) record(join(d, name), read);
    for (const std::string &d : dirs_) record(join(d, name), read);
  }

  // An absent toolkit path: a dependency on the nearest directory above
  // it that exists (the toolkit's own directory at the latest).
  // Only where the kernel resolves the path as its text reads: a ".."
  // or a symbolic link on the way (even a dangling one, whose target may
  // appear anywhere) makes it a plain absent path, checked on every lookup.
  void record_toolkit_absent(const std::string &path) {
    if (!absent_toolkit_.insert(path).second) return;
    Dependency d;
    d.path = path;
    d.state = Dependency::Absent;
    if (!lexically_plain(path)) {
      deps_.emplace(path, d);
      return;
    }
    std::string dir = path;
    struct stat st;
    do {
      if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        deps_.emplace(path, d);
        return;
      }
      dir = dirname_of(dir);
    } while (dir.size() > 1 && !toolkit_state(dir, true, &d.stamp, &fds_));
    d.path = dir;
    d.state = Dependency::ToolkitDir;
    deps_.emplace(dir, d); // kept when already there
  }

  void record(const std::string &path, bool read) {
    if (!out_.provable) return;
    if (absent_toolkit_.count(path) != 0) return;
    auto it = deps_.find(path);
    if (it != deps_.end()) {
      if (read && !scanned_.count(path) &&
          (it->second.state == Dependency::Content ||
           it->second.state == Dependency::Toolkit))
        scan_file(path, it->second.state == Dependency::Toolkit);
      return;
    }
    Dependency d;
    d.path = path;
    bool toolkit = is_toolkit(path);
    if (toolkit) {
      if (!toolkit_state(path, false, &d.stamp, &fds_))
        return record_toolkit_absent(path);
      d.state = Dependency::Toolkit;
    } else if (!regular_file(path, &d.stamp)) {
      d.state = Dependency::Absent;
    } else {
      std::string text, why;
      if (!read_file(path, &text, &d.stamp, &why)) {
        unprovable(why);
        return;
      }
      d.state = Dependency::Content;
      d.digest = core::Sha256::of(text.data(), text.size());
    }
    deps_.emplace(path, d);
    if (read && d.state != Dependency::Absent) scan_file(path, toolkit);
  }

  void scan_file(const std::string &path, bool toolkit) {
    scanned_.insert(path);
    if (++out_.files > k_max_files) {
      unprovable("more than " + std::to_string(k_max_files) +
                 " files can be included");
      return;
    }
    FileScan f;
    f.where = "'" + path + "'";
    f.quote_dirs = {dirname_of(path)};
    ToolkitMemo &m = toolkit_memo();
    if (toolkit) {
      std::lock_guard<std::mutex> lock(m.mu);
      if (auto it = m.scans.find(path); it != m.scans.end()) {
        f.result = it->second;
        scans_.push_back(std::move(f));
        return;
      }
    }
    std::string text, why;
    FileStamp st;
    if (!read_file(path, &text, &st, &why)) {
      unprovable(why);
      return;
    }
    out_.bytes += text.size();
    if (out_.bytes > k_max_bytes) {
      unprovable("the files that can be included exceed " +
                 std::to_string(k_max_bytes >> 20) + " MiB");
      return;
    }
    f.result = scan_includes(text);
    if (toolkit) {
      std::lock_guard<std::mutex> lock(m.mu);
      m.scans.emplace(path, f.result);
    }
    scans_.push_back(std::move(f));
  }

  // Wrappers of existence tests (`#define HAS(x) __has_include(x)`) and
  // wrappers of those: their uses' header names are dependencies.
  void follow_wrappers() {
    std::set<std::string> tracked;
    for (bool grew = true; grew;) {
      grew = false;
      for (const FileScan &f : scans_)
        for (const WrapperDef &w : f.result.wrappers)
          if ((names_existence_test(w.callee) || tracked.count(w.callee)) &&
              tracked.insert(w.macro).second) {
            grew = true;
            if (!mentions_include(w.macro)) {
              unprovable(f.where + ": the macro '" + w.macro +
                         "' forwards to an existence test (through '" +
                         w.callee + "') under a name without \"include\", " +
                         "whose uses are not followed");
              return;
            }
          }
    }
    for (size_t i = 0; i < scans_.size() && out_.provable; ++i)
      for (const MacroUse &u : scans_[i].result.uses) {
        if (!tracked.count(u.macro)) continue;
        if (u.delim == 0) {
          unprovable(scans_[i].where + " line " + std::to_string(u.line) +
                     ": '" + u.macro + "(" + u.arg.substr(0, 80) +
                     ")' tests a header named by a macro");
          return;
        }
        if (u.delim == '<' &&
            !stable_angle_name(u.arg, scans_[i].where, u.line))
          return;
        resolve(u.arg, u.delim, IncludeKind::HasInclude, scans_[i].quote_dirs);
      }
    for (size_t i = 0; i < scans_.size() && out_.provable; ++i)
      for (const IncludeRef &inc : scans_[i].result.includes)
        if (inc.expandable &&
            !stable_angle_name(inc.name, scans_[i].where, inc.line))
          return;
  }

  // Every name a macro may have: #defined in a scanned file, -D of the
  // options, or reserved for the implementation's own ("__x", "_X") and
  // the old unreserved "linux", "unix", "i386".
  bool may_be_macro(const std::string &id) {
    if (defined_.empty()) {
      defined_.insert({"linux", "unix", "i386"});
      for (const FileScan &f : scans_)
        defined_.insert(f.result.defines.begin(), f.result.defines.end());
      for (size_t i = 0; i < r_.options.size(); ++i) {
        const std::string &o = r_.options[i];
        std::string d;
        if (o.compare(0, 2, "-D") == 0)
          d = o.size() > 2
                  ? o.substr(2)
                  : (i + 1 < r_.options.size() ? r_.options[i + 1] : "");
        else if (o.compare(0, 15, "--define-macro=") == 0)
          d = o.substr(15);
        d = d.substr(0, d.find_first_of("=("));
        size_t b = d.find_first_not_of(" \t");
        if (b != std::string::npos) defined_.insert(d.substr(b));
      }
    }
    if (id.size() >= 2 && id[0] == '_' &&
        (id[1] == '_' || std::isupper(static_cast<unsigned char>(id[1]))))
      return true;
    return defined_.count(id) != 0;
  }

  // An angle-bracket name that macro expansion reaches (an existence test
  // in a #define body, or a wrapper's argument): usable as written only
  // when none of its identifiers may be a macro.
  bool stable_angle_name(const std::string &name, const std::string &where,
                         uint32_t line) {
    for (size_t i = 0; i < name.size();) {
      unsigned char c = static_cast<unsigned char>(name[i]);
      if (!(std::isalpha(c) || c == '_')) {
        ++i;
        continue;
      }
      size_t j = i;
      while (
          j < name.size() &&
          (std::isalnum(static_cast<unsigned char>(name[j])) || name[j] == '_'))
        ++j;
      std::string id = name.substr(i, j - i);
      if (may_be_macro(id)) {
        unprovable(where + " line " + std::to_string(line) + ": <" + name +
                   "> is macro-expanded where it is tested, and '" + id +
                   "' may be a macro");
        return false;
      }
      i = j;
    }
    return true;
  }

  const Request &r_;
  std::vector<std::string> dirs_, pre_includes_, toolkit_prefixes_,
      memory_dirs_;
  std::deque<FileScan> scans_;
  std::map<std::string, Dependency> deps_; // sorted by path
  std::set<std::string> scanned_, absent_toolkit_, defined_;
  DirFds fds_; // for this walk's toolkit stats
  ScanOutcome out_;
};

void put_u64(std::string *s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

void put_stamp(std::string *s, const FileStamp &t) {
  put_u64(s, t.dev);
  put_u64(s, t.ino);
  put_u64(s, t.size);
  put_u64(s, static_cast<uint64_t>(t.mtime_ns));
  put_u64(s, static_cast<uint64_t>(t.ctime_ns));
}

struct Reader {
  const std::string &s;
  size_t p = 0;
  bool u64(uint64_t *v) {
    if (s.size() - p < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= static_cast<uint64_t>(static_cast<uint8_t>(s[p + i])) << (8 * i);
    p += 8;
    return true;
  }
  bool bytes(size_t n, std::string *out) {
    if (s.size() - p < n) return false;
    out->assign(s, p, n);
    p += n;
    return true;
  }
  bool stamp(FileStamp *t) {
    uint64_t m = 0, c = 0;
    if (!u64(&t->dev) || !u64(&t->ino) || !u64(&t->size) || !u64(&m) ||
        !u64(&c))
      return false;
    t->mtime_ns = static_cast<int64_t>(m);
    t->ctime_ns = static_cast<int64_t>(c);
    return true;
  }
};

constexpr char k_manifest_magic[] = "t4acuda manifest 1";
constexpr uint64_t k_max_path = 4096, k_max_deps = 1000000;

bool parse_dep(Reader &rd, Dependency *d) {
  uint64_t state = 0, len = 0;
  if (!rd.u64(&state) || state > Dependency::ToolkitDir || !rd.u64(&len) ||
      len == 0 || len > k_max_path || !rd.bytes(len, &d->path) ||
      d->path.find('\0') != std::string::npos)
    return false;
  d->state = static_cast<Dependency::State>(state);
  if (d->state == Dependency::Content) {
    std::string dg;
    if (!rd.bytes(d->digest.size(), &dg)) return false;
    std::memcpy(d->digest.data(), dg.data(), d->digest.size());
  }
  if (d->state != Dependency::Absent) return rd.stamp(&d->stamp);
  return true;
}

} // namespace

void include_options(const std::vector<std::string> &options,
                     std::vector<std::string> *dirs,
                     std::vector<std::string> *pre_includes) {
  static const char *const k_dir[] = {"--include-path", "--system-include",
                                      "-isystem", "-I"};
  static const char *const k_pre[] = {"--pre-include", "-include"};
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string &o = options[i];
    auto take = [&](const char *const *names, size_t count,
                    std::vector<std::string> *to) {
      for (size_t k = 0; k < count; ++k) {
        size_t n = std::strlen(names[k]);
        if (o.compare(0, n, names[k]) != 0) continue;
        std::string v = o.substr(n);
        if (!v.empty() && v[0] == '=') v.erase(0, 1);
        if (v.empty() && o.size() == n && i + 1 < options.size())
          v = options[++i];
        // NVRTC takes the value without the blanks around it ("-I inc").
        size_t b = v.find_first_not_of(" \t");
        size_t e = v.find_last_not_of(" \t");
        v = b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
        if (!v.empty()) to->push_back(v);
        return true;
      }
      return false;
    };
    if (!take(k_dir, 4, dirs)) take(k_pre, 2, pre_includes);
  }
}

ScanOutcome scan_dependencies(const Request &r,
                              const std::vector<std::string> &options,
                              const std::vector<std::string> &toolkit_dirs) {
  return Walker(r, options, toolkit_dirs).run();
}

bool validate(const DependencySet &s, std::string *changed) {
  DirFds fds;
  for (const Dependency &d : s.deps) {
    FileStamp now;
    bool same = true;
    switch (d.state) {
    case Dependency::Absent: same = !regular_file(d.path, &now); break;
    case Dependency::ToolkitDir:
      same = toolkit_state(d.path, true, &now, &fds) && now == d.stamp;
      break;
    case Dependency::Toolkit:
      same = toolkit_state(d.path, false, &now, &fds) && now == d.stamp;
      break;
    case Dependency::Content: {
      std::string text, why;
      same = read_file(d.path, &text, &now, &why) &&
             core::Sha256::of(text.data(), text.size()) == d.digest;
      break;
    }
    }
    if (!same) {
      *changed = d.path;
      return false;
    }
  }
  return true;
}

bool unchanged_since_scan(const DependencySet &s, std::string *changed) {
  for (const Dependency &d : s.deps) {
    FileStamp now;
    bool same = true;
    if (d.state == Dependency::Absent)
      same = !regular_file(d.path, &now);
    else if (d.state == Dependency::Content)
      same = regular_file(d.path, &now) && now == d.stamp;
    if (!same) {
      *changed = d.path;
      return false;
    }
  }
  return true;
}

core::Digest final_key(const core::Digest &base, const DependencySet &s) {
  std::string b = "t4acuda dependency key v1";
  b.append(reinterpret_cast<const char *>(base.data()), base.size());
  put_u64(&b, s.deps.size());
  for (const Dependency &d : s.deps) {
    put_u64(&b, d.state);
    put_u64(&b, d.path.size());
    b += d.path;
    // Content by its bytes (a touched, unchanged file still hits); a
    // toolkit file by its stamp.
    if (d.state == Dependency::Content)
      b.append(reinterpret_cast<const char *>(d.digest.data()),
               d.digest.size());
    if (d.state == Dependency::Toolkit || d.state == Dependency::ToolkitDir)
      put_stamp(&b, d.stamp);
  }
  return core::Sha256::of(b.data(), b.size());
}

std::string encode_manifest(const std::vector<DependencySet> &sets) {
  std::string b = k_manifest_magic;
  put_u64(&b, sets.size());
  for (const DependencySet &s : sets) {
    put_u64(&b, s.deps.size());
    for (const Dependency &d : s.deps) {
      put_u64(&b, d.state);
      put_u64(&b, d.path.size());
      b += d.path;
      if (d.state == Dependency::Content)
        b.append(reinterpret_cast<const char *>(d.digest.data()),
                 d.digest.size());
      if (d.state != Dependency::Absent) put_stamp(&b, d.stamp);
    }
  }
  return b;
}

bool parse_manifest(const std::string &bytes, std::vector<DependencySet> *out) {
  Reader rd{bytes};
  std::string magic;
  uint64_t nsets = 0;
  if (!rd.bytes(sizeof k_manifest_magic - 1, &magic) ||
      magic != k_manifest_magic || !rd.u64(&nsets) || nsets > k_max_sets)
    return false;
  std::vector<DependencySet> sets(static_cast<size_t>(nsets));
  for (DependencySet &s : sets) {
    uint64_t n = 0;
    if (!rd.u64(&n) || n > k_max_deps || n > (bytes.size() - rd.p) / 17)
      return false;
    s.deps.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < s.deps.size(); ++i) {
      if (!parse_dep(rd, &s.deps[i])) return false;
      if (i > 0 && !(s.deps[i - 1].path < s.deps[i].path)) return false;
    }
  }
  if (rd.p != bytes.size()) return false;
  *out = std::move(sets);
  return true;
}

void dependencies_at_fork(core::ForkPhase phase) {
  if (phase == core::ForkPhase::Prepare)
    toolkit_memo().mu.lock();
  else // the child's only thread is the one that locked it
    toolkit_memo().mu.unlock();
}

} // namespace t4a::compile
