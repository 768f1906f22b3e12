#include "driver/fault_injection.hpp"

#if defined(T4A_TESTING)

#include <cstring>
#include <mutex>

#include "driver/cuda_api.hpp"
#include "driver/nvrtc_api.hpp"

namespace t4a::driver::fault {

std::atomic<bool> g_active{false};

namespace {
// Driver entry points first, then NVRTC's: one table, one name space.
constexpr int k_cuda_entries = static_cast<int>(Entry::count_);
constexpr int k_entries = k_cuda_entries + static_cast<int>(NvrtcEntry::count_);

const char *entry_name(int i) {
  return i < k_cuda_entries ? k_entry_names[i]
                            : k_nvrtc_entry_names[i - k_cuda_entries];
}

struct Rule {
  bool armed = false;
  uint64_t nth = 0; // 1-based call number that fails
  int32_t result = 0;
  Mode mode = Mode::None;
};

struct Table {
  std::mutex mu;
  bool counting = false;
  Rule rules[k_entries];
  int64_t calls[k_entries] = {};
};

Table &table() {
  static Table *t = new Table();
  return *t;
}

int index_of(const char *name) {
  if (name == nullptr) return -1;
  for (int i = 0; i < k_entries; ++i)
    if (std::strcmp(entry_name(i), name) == 0) return i;
  return -1;
}

void update_active(Table &t) {
  bool any = t.counting;
  for (const Rule &r : t.rules) any = any || r.armed;
  g_active.store(any, std::memory_order_relaxed);
}
} // namespace

Decision on_call(int entry) {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  int64_t n = ++t.calls[entry];
  Rule &r = t.rules[entry];
  if (r.armed && static_cast<uint64_t>(n) == r.nth) {
    r.armed = false;
    update_active(t);
    return {r.mode, r.result};
  }
  return {};
}

Decision on_nvrtc_call(int nvrtc_entry) {
  return on_call(k_cuda_entries + nvrtc_entry);
}

bool arm(const char *entry_name, uint64_t nth, int32_t result, Mode mode) {
  int i = index_of(entry_name);
  if (i < 0 || nth == 0 || mode == Mode::None) return false;
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  // nth counts from now: calls already made do not count.
  t.rules[i] =
      Rule{true, static_cast<uint64_t>(t.calls[i]) + nth, result, mode};
  update_active(t);
  return true;
}

void reset() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (auto &r : t.rules) r = Rule{};
  for (auto &c : t.calls) c = 0;
  t.counting = false;
  update_active(t);
}

void set_counting(bool on) {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.counting = on;
  update_active(t);
}

int64_t call_count(const char *entry_name) {
  int i = index_of(entry_name);
  if (i < 0) return -1;
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.calls[i];
}

} // namespace t4a::driver::fault

#endif
