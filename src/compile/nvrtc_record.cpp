// The NVRTC record's text and its parser: pure (fuzzed,
// fuzz/fuzz_nvrtc_record.cpp).
#include <string_view>

#include "compile/nvrtc_facts.hpp"

namespace t4a::compile {

namespace {
constexpr char k_record_tag[] = "t4acuda NVRTC record 1";
} // namespace

bool operator==(const NvrtcFacts &a, const NvrtcFacts &b) {
  return a.major == b.major && a.minor == b.minor && a.archs == b.archs;
}

std::string nvrtc_record_text(const std::string &file,
                              const std::string &identity,
                              const NvrtcFacts &f) {
  std::string t = std::string(k_record_tag) + "\nfile " + file + "\nidentity " +
                  identity + "\nversion " + std::to_string(f.major) + " " +
                  std::to_string(f.minor) + "\narchs";
  for (int a : f.archs) t += " " + std::to_string(a);
  return t + "\n";
}

namespace {

// Parses a decimal int from [p, end) up to a space or the end; strict.
bool parse_int(const char *&p, const char *end, int *out) {
  long long v = 0;
  const char *start = p;
  while (p < end && *p >= '0' && *p <= '9' && v < 1000000)
    v = v * 10 + (*p++ - '0');
  if (p == start || (p < end && *p != ' ')) return false;
  *out = static_cast<int>(v);
  return true;
}

} // namespace

bool nvrtc_record_parse(const std::string &text, std::string *file,
                        std::string *identity, NvrtcFacts *f) {
  // Exactly five lines, each ending with a newline.
  std::string_view lines[5];
  size_t at = 0;
  for (std::string_view &l : lines) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) return false;
    l = std::string_view(text).substr(at, nl - at);
    at = nl + 1;
  }
  if (at != text.size() || lines[0] != k_record_tag) return false;
  auto value = [](std::string_view line, std::string_view name,
                  std::string_view *out) {
    if (line.size() < name.size() || line.substr(0, name.size()) != name)
      return false;
    *out = line.substr(name.size());
    return true;
  };
  std::string_view v_file, v_identity, v_version, v_archs;
  if (!value(lines[1], "file /", &v_file) ||
      !value(lines[2], "identity ", &v_identity) || v_identity.empty() ||
      !value(lines[3], "version ", &v_version) ||
      !value(lines[4], "archs", &v_archs))
    return false;
  NvrtcFacts out;
  const char *p = v_version.data(), *end = p + v_version.size();
  if (!parse_int(p, end, &out.major) || p == end || *p++ != ' ' ||
      !parse_int(p, end, &out.minor) || p != end || out.major < 12)
    return false;
  p = v_archs.data();
  end = p + v_archs.size();
  while (p < end) {
    int arch = 0;
    if (*p++ != ' ' || !parse_int(p, end, &arch) || arch <= 0) return false;
    out.archs.push_back(arch);
  }
  *file = "/" + std::string(v_file);
  *identity = std::string(v_identity);
  *f = std::move(out);
  return true;
}

} // namespace t4a::compile
