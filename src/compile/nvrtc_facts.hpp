// What a compile must know about NVRTC before it may consult a cache: the
// version (part of every identity key) and the supported targets (target
// selection). Known from the loaded library or, in a process that has not
// loaded NVRTC, from the record that a process which loaded the same file
// left in the disk cache directory ("nvrtc-<search digest>.id"), so that a
// disk-cache hit in a fresh process never loads NVRTC (loading it takes
// milliseconds). A record is believed only when the loader search state
// (driver::nvrtc_search) hashes to its name and the library file it names
// is unchanged; a compile that has to run NVRTC loads it and starts over
// should the loaded library disagree with a record.
#pragma once

#include <string>
#include <vector>

#include "compile/disk_cache.hpp"

namespace t4a::compile {

struct NvrtcFacts {
  int major = 0;
  int minor = 0;
  std::vector<int> archs; // empty: NVRTC cannot list them (all taken)
  bool loaded = false;    // from the loaded library, not a record
  std::string file;       // the library's file ("" when unknown)
};

bool operator==(const NvrtcFacts &a, const NvrtcFacts &b);

// The facts for a compile with disk cache `disk`: the process's current
// ones, else a verified record in disk.dir, else the loaded library's.
// Fails with NO_COMPILER when NVRTC cannot be loaded.
t4a_status nvrtc_facts(LazyDiskConfig &disk, const NvrtcFacts **out);

// The loaded library's facts (loads NVRTC); from now on they replace any
// facts believed from a record.
t4a_status nvrtc_loaded_facts(const NvrtcFacts **out);

// Leaves (or refreshes) the record of the loaded NVRTC in disk.dir, for
// processes to come. NVRTC must be loaded.
void nvrtc_remember(const DiskConfig &disk);

// The text of a record, and its parser (pure; exposed for tests).
std::string nvrtc_record_text(const std::string &file,
                              const std::string &identity, const NvrtcFacts &f);
bool nvrtc_record_parse(const std::string &text, std::string *file,
                        std::string *identity, NvrtcFacts *f);

} // namespace t4a::compile
