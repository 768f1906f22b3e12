#include "compile/nvrtc_compile.hpp"

#include <mutex>

#include "driver/nvrtc_api.hpp"

namespace t4a::compile {

namespace {

// Destroys the program on every path. The result is ignored: the compile
// already has its outcome, and a failed destroy leaves nothing we could
// free (counted, and injectable, like every NVRTC call).
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p != nullptr) (void)driver::nv::destroy_program(&p);
  }
};

} // namespace

std::string nvrtc_error_text(nvrtcResult r) {
  driver::NvrtcSection section; // see driver/nvrtc_api.hpp
  const char *s = driver::nv::error_string(r);
  return s != nullptr ? s : "NVRTC result " + std::to_string(r);
}

NvrtcRun run_nvrtc(const Request &r, const std::vector<std::string> &options,
                   uint32_t output) {
  namespace nv = driver::nv;
  NvrtcRun out;
  auto failed = [&out](driver::NvrtcResult res) {
    out.result = res.code;
    out.failed_call = res.entry;
    return out;
  };
  std::vector<const char *> names, sources, opts;
  for (size_t i = 0; i < r.header_names.size(); ++i) {
    names.push_back(r.header_names[i].c_str());
    sources.push_back(r.header_sources[i].c_str());
  }
  for (const std::string &o : options) opts.push_back(o.c_str());

  // Fork safety: from create to destroy (prog is destroyed first). The
  // section logs nothing and takes no other lock (driver/nvrtc_api.hpp).
  driver::NvrtcSection section;
  Program prog;
  if (auto res = nv::create_program(
          &prog.p, r.source.c_str(), r.program_name.c_str(),
          static_cast<int>(names.size()), sources.data(), names.data());
      !res)
    return failed(res);
  for (const std::string &e : r.name_expressions)
    if (auto res = nv::add_name_expression(prog.p, e.c_str()); !res)
      return failed(res);

  out.compiled = true;
  driver::NvrtcResult compiled =
      nv::compile_program(prog.p, static_cast<int>(opts.size()), opts.data());
  // The log is best effort: a compile whose log cannot be read still
  // reports its own outcome.
  size_t log_size = 0;
  if (nv::get_program_log_size(prog.p, &log_size) && log_size > 1) {
    std::string log(log_size, '\0');
    if (nv::get_program_log(prog.p, log.data())) {
      log.resize(log_size - 1); // without the NUL
      out.log = std::move(log);
    }
  }
  if (!compiled) return failed(compiled);

  size_t size = 0;
  if (output == T4A_COMPILE_PTX) {
    if (auto res = nv::get_ptx_size(prog.p, &size); !res) return failed(res);
    if (size > 0) {
      out.image.assign(size, '\0');
      if (auto res = nv::get_ptx(prog.p, out.image.data()); !res)
        return failed(res);
    }
  } else {
    if (auto res = nv::get_cubin_size(prog.p, &size); !res) return failed(res);
    if (size > 0) {
      out.image.assign(size, '\0');
      if (auto res = nv::get_cubin(prog.p, out.image.data()); !res)
        return failed(res);
    }
  }
  for (const std::string &e : r.name_expressions) {
    const char *lowered = nullptr;
    if (auto res = nv::get_lowered_name(prog.p, e.c_str(), &lowered); !res)
      return failed(res);
    out.lowered.emplace_back(lowered != nullptr ? lowered : "");
  }
  return out;
}

const std::vector<int> &nvrtc_supported_archs() {
  static std::once_flag once;
  static std::vector<int> *archs = nullptr; // never destroyed
  std::call_once(once, [] {
    archs = new std::vector<int>();
    driver::NvrtcSection section; // see driver/nvrtc_api.hpp
    if (!driver::nvrtc_has(driver::NvrtcEntry::nvrtcGetNumSupportedArchs) ||
        !driver::nvrtc_has(driver::NvrtcEntry::nvrtcGetSupportedArchs))
      return;
    int count = 0;
    if (!driver::nv::get_num_supported_archs(&count) || count <= 0) return;
    std::vector<int> v(static_cast<size_t>(count));
    if (driver::nv::get_supported_archs(v.data())) *archs = std::move(v);
  });
  return *archs;
}

} // namespace t4a::compile
