// NCCL all-reduce over t4acuda runtimes through the raw seam
// (docs/raw-seam.md): one runtime per GPU (1 or 2), ncclCommInitAll, then
// ncclAllReduce on each runtime's stream inside raw scopes (one thread:
// the scopes nest, and the collectives are one NCCL group). While the
// collective is in flight, each runtime allocates and uploads more data
// (ordered after it on the stream; nothing hangs). The sums are checked
// exactly. NCCL is loaded with dlopen (libnccl.so.2): neither this program
// nor t4acuda links it.
//
// Ranks: every visible GPU, at most 2; T4A_NCCL_RANKS=2 asks for exactly
// 2. Exit 0 on success, 1 on a mismatch or an error, 77 (skipped) when the
// GPUs or NCCL are missing and T4A_REQUIRE_GPU does not ask for them.
#include "nccl_dl.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <t4acuda.hpp>

namespace {

using nccl_dl::skip_or_fail;

// Rank r's input element i; the sum over ranks is exact in float.
float input(int rank, size_t i) { return float(i % 1000) + 1000.0f * rank; }

} // namespace

int main() {
  int32_t devices = 0;
  if (t4a::device_count(devices, std::nothrow) != T4A_SUCCESS || devices < 1)
    return skip_or_fail("no CUDA device", 1);
  const char *forced = std::getenv("T4A_NCCL_RANKS");
  int ranks = forced != nullptr ? std::atoi(forced) : (devices >= 2 ? 2 : 1);
  if (ranks < 1 || ranks > 2) {
    std::fprintf(stderr, "FAILED: T4A_NCCL_RANKS=%s; it must be 1 or 2\n",
                 forced);
    return 1;
  }
  if (devices < ranks)
    return skip_or_fail(std::to_string(ranks) + " ranks need " +
                            std::to_string(ranks) + " GPUs; " +
                            std::to_string(devices) + " visible",
                        ranks);
  nccl_dl::Nccl nccl;
  std::string why;
  if (!nccl.load(why)) return skip_or_fail(why, ranks);

  const size_t count = (size_t(1) << 22) + 3; // 16 MiB + 12 bytes per rank
  try {
    std::vector<t4a::Runtime> rt;
    std::vector<t4a::DeviceArray<float>> send, recv, extra;
    std::vector<int> devlist;
    for (int r = 0; r < ranks; ++r) {
      rt.emplace_back(t4a::RuntimeOptions{}.device(r));
      std::vector<float> host(count);
      for (size_t i = 0; i < count; ++i) host[i] = input(r, i);
      send.emplace_back(rt[r], host);
      recv.emplace_back(rt[r], count);
      devlist.push_back(r);
    }
    std::vector<ncclComm_t> comms(size_t(ranks), nullptr);
    if (!nccl.ok(nccl.init_all(comms.data(), ranks, devlist.data()),
                 "ncclCommInitAll"))
      return 1;
    {
      // One scope per runtime, nested on this thread; scopes end in the
      // reverse order of their begin (pop_back, also on an early return).
      // The uploads above are ordered before the collective on each
      // runtime's stream.
      struct Scopes {
        std::vector<t4a::RawScope> v;
        ~Scopes() {
          while (!v.empty()) v.pop_back();
        }
      } scopes;
      scopes.v.reserve(size_t(ranks));
      for (int r = 0; r < ranks; ++r) scopes.v.emplace_back(rt[r]);
      if (!nccl.ok(nccl.group_start(), "ncclGroupStart")) return 1;
      for (int r = 0; r < ranks; ++r) {
        t4a::RawScope &s = scopes.v[size_t(r)];
        if (!nccl.ok(nccl.all_reduce(s.pointer(send[r]), s.pointer(recv[r]),
                                     count, ncclFloat, ncclSum, comms[r],
                                     static_cast<cudaStream_t>(s.stream())),
                     "ncclAllReduce"))
          return 1;
      }
      if (!nccl.ok(nccl.group_end(), "ncclGroupEnd")) return 1;
    } // the scopes end here, last first
    // The collective may still run: allocate and upload on the same
    // runtimes meanwhile (ordered after it on each stream).
    std::vector<float> more(count, 0.5f);
    for (int r = 0; r < ranks; ++r) extra.emplace_back(rt[r], more);

    float base = 0;
    for (int r = 0; r < ranks; ++r) base += 1000.0f * r;
    int bad = 0;
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> got = recv[r].to_vector(rt[r]);
      for (size_t i = 0; i < count; ++i) {
        float want = float(ranks) * float(i % 1000) + base;
        if (got[i] != want && bad++ < 5)
          std::fprintf(stderr, "rank %d: element %zu is %.1f, expected %.1f\n",
                       r, i, double(got[i]), double(want));
      }
      std::vector<float> back = extra[r].to_vector(rt[r]);
      if (back != more && bad++ < 5)
        std::fprintf(stderr,
                     "rank %d: the upload made during the "
                     "collective came back different\n",
                     r);
    }
    for (int r = 0; r < ranks; ++r) {
      t4a::RawScope raw(rt[r]); // NCCL needs the device's context
      if (!nccl.ok(nccl.destroy(comms[r]), "ncclCommDestroy")) return 1;
    }
    if (bad != 0) {
      std::fprintf(stderr, "FAILED: %d mismatches\n", bad);
      return 1;
    }
    std::printf("NCCL all-reduce over %d runtime(s) through the raw seam: "
                "%zu floats per rank, exact\n",
                ranks, count);
    return 0;
  } catch (const t4a::Error &e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
}
