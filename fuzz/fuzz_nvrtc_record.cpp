// libFuzzer target: the NVRTC record parser (issue 8), over arbitrary
// text as the content of a record file. It must never crash or read out
// of bounds; whatever it accepts is written back by nvrtc_record_text as
// a record that parses to the same facts.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "compile/nvrtc_facts.hpp"

using namespace t4a::compile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string file, identity;
  NvrtcFacts f;
  if (!nvrtc_record_parse(text, &file, &identity, &f)) return 0;
  if (file.empty() || file[0] != '/' || identity.empty() || f.major < 12)
    std::abort();
  std::string file2, identity2;
  NvrtcFacts f2;
  if (!nvrtc_record_parse(nvrtc_record_text(file, identity, f), &file2,
                          &identity2, &f2) ||
      file2 != file || identity2 != identity || !(f2 == f))
    std::abort();
  return 0;
}
