// NCCL all-reduce with one process per GPU
// (docs/multi-gpu.md#one-process-per-gpu), started by a launcher the user
// already has, e.g.
//
//   torchrun --standalone --nproc_per_node=2 --no_python
//            t4acuda-allreduce-nccl-ranks /tmp/job-dir      (one line)
//
// Each process reads RANK, WORLD_SIZE and LOCAL_RANK from the launcher's
// environment (all three unset: one process, rank 0 of 1), makes one
// runtime on device LOCAL_RANK and uploads its input through t4acuda.
// Rank 0 writes the NCCL unique id to a file in the directory named on the
// command line (or by T4A_NCCL_ID_DIR), written under a temporary name and
// renamed, so that a reader sees all of it or nothing; the others wait for
// it (at most 120 s). The file is named after the launcher's run
// (TORCHELASTIC_RUN_ID, else MASTER_PORT), and rank 0 refuses to start if
// it already exists: an id left by an earlier job would join the wrong
// ranks. Rank 0 removes it once every rank has joined (ncclCommInitRank
// returns only then).
//
// ncclCommInitRank and ncclAllReduce run inside a raw scope of the runtime
// (docs/raw-seam.md): its context is current and the collective goes on
// the runtime's stream. While it runs, the process uploads more data on
// the same runtime (ordered after it on the stream). The sums are checked
// exactly. NCCL is loaded with dlopen (nccl_dl.hpp).
//
// Exit 0 on success, 1 on a mismatch or an error, 77 (skipped) when the
// GPU or NCCL is missing and T4A_REQUIRE_GPU does not ask for them. Under a
// launcher a skip is a failure of the job: examples/launch_ranks.py checks
// the GPUs first.
#include "nccl_dl.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <t4acuda.hpp>

namespace {

// An environment variable holding a whole non-negative decimal integer;
// `fallback` when unset. A malformed value is an error naming it.
bool env_int(const char *name, int fallback, int &out) {
  const char *v = std::getenv(name);
  if (v == nullptr) {
    out = fallback;
    return true;
  }
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (*v == '\0' || errno != 0 || *end != '\0' || n < 0 || n > 1 << 20) {
    std::fprintf(stderr, "FAILED: %s=\"%s\" is not a non-negative integer\n",
                 name, v);
    return false;
  }
  out = int(n);
  return true;
}

std::string id_file_name(const std::string &dir) {
  const char *run = std::getenv("TORCHELASTIC_RUN_ID");
  if (run == nullptr || *run == '\0') run = std::getenv("MASTER_PORT");
  if (run == nullptr || *run == '\0') run = "default";
  std::string name(run);
  for (char &c : name)
    if (c == '/' || c == '\0') c = '_';
  return dir + "/t4acuda-nccl-id." + name;
}

bool write_id(const std::string &path, const ncclUniqueId &id) {
  if (access(path.c_str(), F_OK) == 0) {
    std::fprintf(stderr,
                 "FAILED: %s already exists: an NCCL id left by an earlier "
                 "job; remove it or give a fresh directory\n",
                 path.c_str());
    return false;
  }
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(id.internal, sizeof id.internal);
    if (!f.flush()) {
      std::fprintf(stderr, "FAILED: cannot write %s\n", tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "FAILED: cannot rename %s to %s: %s\n", tmp.c_str(),
                 path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool read_id(const std::string &path, ncclUniqueId &id) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::seconds(120);
  for (;;) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(id.internal, sizeof id.internal) &&
        f.gcount() == std::streamsize(sizeof id.internal))
      return true;
    if (clock::now() > deadline) {
      std::fprintf(stderr,
                   "FAILED: no NCCL id in %s after 120 s (rank 0 writes it)\n",
                   path.c_str());
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Rank r's input element i; the sum over ranks is exact in float.
float input(int rank, size_t i) { return float(i % 1000) + 1000.0f * rank; }

int run(const nccl_dl::Nccl &nccl, int rank, int world, int local,
        const std::string &id_path) {
  const size_t count = (size_t(1) << 22) + 3; // 16 MiB + 12 bytes
  t4a::Runtime rt(t4a::RuntimeOptions{}.device(local));
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = input(rank, i);
  t4a::DeviceArray<float> send(rt, host), recv(rt, count);

  ncclUniqueId id{};
  if (rank == 0 && !nccl.ok(nccl.get_unique_id(&id), "ncclGetUniqueId"))
    return 1;
  if (world > 1 && !(rank == 0 ? write_id(id_path, id) : read_id(id_path, id)))
    return 1;
  ncclComm_t comm = nullptr;
  {
    // The runtime's context current: NCCL takes the device from it.
    t4a::RawScope raw(rt);
    if (!nccl.ok(nccl.init_rank(&comm, world, id, rank), "ncclCommInitRank")) {
      if (rank == 0 && world > 1) std::remove(id_path.c_str());
      return 1;
    }
  }
  // Every rank has joined: the id is spent.
  if (rank == 0 && world > 1 && std::remove(id_path.c_str()) != 0)
    std::fprintf(stderr, "warning: cannot remove %s: %s\n", id_path.c_str(),
                 std::strerror(errno));
  {
    // The uploads above are ordered before the collective on the stream.
    t4a::RawScope s(rt);
    if (!nccl.ok(nccl.all_reduce(s.pointer(send), s.pointer(recv), count,
                                 ncclFloat, ncclSum, comm,
                                 static_cast<cudaStream_t>(s.stream())),
                 "ncclAllReduce"))
      return 1;
  }
  // The collective may still run: upload on the same runtime meanwhile.
  std::vector<float> more(count, 0.5f + float(rank));
  t4a::DeviceArray<float> extra(rt, more);

  float base = 1000.0f * float(world) * float(world - 1) / 2.0f;
  int bad = 0;
  std::vector<float> got = recv.to_vector(rt);
  for (size_t i = 0; i < count; ++i) {
    float want = float(world) * float(i % 1000) + base;
    if (got[i] != want && bad++ < 5)
      std::fprintf(stderr, "rank %d: element %zu is %.1f, expected %.1f\n",
                   rank, i, double(got[i]), double(want));
  }
  if (extra.to_vector(rt) != more && bad++ < 5)
    std::fprintf(stderr,
                 "rank %d: the upload made during the collective came back "
                 "different\n",
                 rank);
  {
    t4a::RawScope raw(rt);
    if (!nccl.ok(nccl.destroy(comm), "ncclCommDestroy")) return 1;
  }
  if (bad != 0) {
    std::fprintf(stderr, "FAILED: rank %d: %d mismatches\n", rank, bad);
    return 1;
  }
  std::printf("rank %d of %d (device %d): NCCL all-reduce of %zu floats "
              "through the raw seam, exact\n",
              rank, world, local, count);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int rank = 0, world = 1, local = 0;
  if (!env_int("RANK", 0, rank) || !env_int("WORLD_SIZE", 1, world) ||
      !env_int("LOCAL_RANK", rank, local))
    return 1;
  if (world < 1 || rank >= world) {
    std::fprintf(stderr,
                 "FAILED: RANK=%d and WORLD_SIZE=%d: need 0 <= RANK "
                 "< WORLD_SIZE\n",
                 rank, world);
    return 1;
  }
  const char *dir = argc > 1 ? argv[1] : std::getenv("T4A_NCCL_ID_DIR");
  if (argc > 2 || (world > 1 && (dir == nullptr || *dir == '\0'))) {
    std::fprintf(stderr,
                 "usage: %s ID_DIR (or T4A_NCCL_ID_DIR): the directory where "
                 "rank 0 leaves the NCCL id for the %d ranks\n",
                 argv[0], world);
    return 1;
  }
  int32_t devices = 0;
  if (t4a::device_count(devices, std::nothrow) != T4A_SUCCESS || devices < 1)
    return nccl_dl::skip_or_fail("no CUDA device", 1);
  if (local >= devices) {
    std::fprintf(stderr, "FAILED: LOCAL_RANK=%d but %d device(s) visible\n",
                 local, int(devices));
    return 1;
  }
  nccl_dl::Nccl nccl;
  std::string why;
  if (!nccl.load(why)) return nccl_dl::skip_or_fail(why, 1);
  try {
    return run(nccl, rank, world, local,
               dir != nullptr ? id_file_name(dir) : std::string());
  } catch (const t4a::Error &e) {
    std::fprintf(stderr, "FAILED: rank %d: %s\n", rank, e.what());
    return 1;
  }
}
