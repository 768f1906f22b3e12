#include "compile/nvrtc_compile.hpp"

#include <mutex>

#include "driver/nvrtc_api.hpp"

namespace t4a::compile {

namespace {

// Destroys the program on every path.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p != nullptr) (void)driver::nvrtc().nvrtcDestroyProgram(&p);
  }
};

} // namespace

std::string nvrtc_error_text(nvrtcResult r) {
  driver::NvrtcSection section; // see driver/nvrtc_api.hpp
  const char *s = driver::nvrtc().nvrtcGetErrorString(r);
  return s != nullptr ? s : "NVRTC result " + std::to_string(r);
}

NvrtcRun run_nvrtc(const Request &r, const std::vector<std::string> &options,
                   uint32_t output) {
  const driver::NvrtcTable &n = driver::nvrtc();
  NvrtcRun out;
  auto failed = [&out](nvrtcResult res, const char *call) {
    out.result = res;
    out.failed_call = call;
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
  if (nvrtcResult res = n.nvrtcCreateProgram(
          &prog.p, r.source.c_str(), r.program_name.c_str(),
          static_cast<int>(names.size()), sources.data(), names.data());
      res != NVRTC_SUCCESS)
    return failed(res, "nvrtcCreateProgram");
  for (const std::string &e : r.name_expressions)
    if (nvrtcResult res = n.nvrtcAddNameExpression(prog.p, e.c_str());
        res != NVRTC_SUCCESS)
      return failed(res, "nvrtcAddNameExpression");

  out.compiled = true;
  nvrtcResult compiled =
      n.nvrtcCompileProgram(prog.p, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  if (n.nvrtcGetProgramLogSize(prog.p, &log_size) == NVRTC_SUCCESS &&
      log_size > 1) {
    std::string log(log_size, '\0');
    if (n.nvrtcGetProgramLog(prog.p, log.data()) == NVRTC_SUCCESS) {
      log.resize(log_size - 1); // without the NUL
      out.log = std::move(log);
    }
  }
  if (compiled != NVRTC_SUCCESS) return failed(compiled, "nvrtcCompileProgram");

  size_t size = 0;
  if (output == T4A_COMPILE_PTX) {
    if (nvrtcResult res = n.nvrtcGetPTXSize(prog.p, &size);
        res != NVRTC_SUCCESS)
      return failed(res, "nvrtcGetPTXSize");
    if (size > 0) {
      out.image.assign(size, '\0');
      if (nvrtcResult res = n.nvrtcGetPTX(prog.p, out.image.data());
          res != NVRTC_SUCCESS)
        return failed(res, "nvrtcGetPTX");
    }
  } else {
    if (nvrtcResult res = n.nvrtcGetCUBINSize(prog.p, &size);
        res != NVRTC_SUCCESS)
      return failed(res, "nvrtcGetCUBINSize");
    if (size > 0) {
      out.image.assign(size, '\0');
      if (nvrtcResult res = n.nvrtcGetCUBIN(prog.p, out.image.data());
          res != NVRTC_SUCCESS)
        return failed(res, "nvrtcGetCUBIN");
    }
  }
  for (const std::string &e : r.name_expressions) {
    const char *lowered = nullptr;
    if (nvrtcResult res = n.nvrtcGetLoweredName(prog.p, e.c_str(), &lowered);
        res != NVRTC_SUCCESS)
      return failed(res, "nvrtcGetLoweredName");
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
    if (driver::nvrtc().nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS ||
        count <= 0)
      return;
    std::vector<int> v(static_cast<size_t>(count));
    if (driver::nvrtc().nvrtcGetSupportedArchs(v.data()) == NVRTC_SUCCESS)
      *archs = std::move(v);
  });
  return *archs;
}

} // namespace t4a::compile
