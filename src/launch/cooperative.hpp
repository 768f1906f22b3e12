// Cooperative launches and grid-barrier counters (experimental API).
//
// A launch takes this path (launch_special) only when its descriptor has
// T4A_LAUNCH_COOPERATIVE or its kernel has a declared barrier: launch.cpp
// tests one flag word and one byte of the kernel, nothing more.
//
// Cooperative: the grid's block count is checked against blocks per
// multiprocessor (cuOccupancyMaxActiveBlocksPerMultiprocessor, cached per
// kernel for the last (block threads, dynamic shared bytes) pair) times the
// device's multiprocessors before anything is enqueued; the kernel goes
// through cuLaunchCooperativeKernel.
//
// Barriers: a kernel declares __device__ globals (cuModuleGetGlobal) that
// its blocks use as grid-barrier counters. Every launch of the kernel,
// under its runtime's admission and on its one stream: (1) compares the
// audits already proven complete, (2) resets each counter
// (cuMemsetD32Async), (3) launches, (4) copies each counter into the next
// slot of the barrier's pinned audit ring (cuMemcpyDtoHAsync), (5) keeps
// the kernel (which owns the audit ring and holds the module) and one
// audit ticket in the open completion epoch (reserve -> enqueue -> keep).
// The epoch that kept a ticket retires only after its seal event
// completed, so the ticket's last drop proves every audit copy of its
// launch and before it complete: it raises the kernel's `completed`
// sequence, and audits up to it may be read. A module belongs to one
// runtime whose one stream orders every launch of its kernels, so launches
// sharing a counter never overlap and need no further serialization.
// Under graph capture the resets, the launch and the audit copies become
// graph nodes; a captured launch's ticket and the kept kernel must be kept
// by the graph until it is released and its last replay is complete (what
// the epoch keeps during a capture), and then the audit compares what the
// last replay left.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/object.hpp"
#include "core/runtime.hpp"
#include "launch/attrs_validation.hpp"
#include "launch/kernel.hpp"
#include "launch/launch_validation.hpp"
#include "memory/host_buffer.hpp"

namespace t4a::launch {

// Barriers a kernel may declare, and audit slots per barrier (each 8
// bytes of pinned memory; with all in use a launch first retires epochs,
// waiting for the oldest if it must: counted host waits).
inline constexpr uint32_t k_max_barriers = 8;
inline constexpr uint32_t k_audit_slots = 1024;

// The highest launch sequence number proven complete (raised by tickets).
struct AuditProgress {
  std::atomic<uint64_t> completed{0};
};

// One declared barrier counter. Everything but the declaration's fields is
// read and written under the kernel's runtime's admission.
struct Barrier {
  std::string name;
  CUdeviceptr ptr = 0;
  uint32_t width = 4;
  uint32_t flags = 0;
  uint64_t reset = 0;
  uint64_t expected = 0;
  core::Ref<memory::HostBuffer> slots; // k_audit_slots x 8 bytes
  // Pending audits: a ring parallel to the slots, oldest at `head`.
  struct Pending {
    uint64_t seq;      // the kernel's barrier-launch sequence number
    uint64_t launch;   // this barrier's launch number (1 = first)
    uint64_t expected; // the value this launch must leave
  };
  std::unique_ptr<Pending[]> ring{new Pending[k_audit_slots]};
  uint32_t head = 0, count = 0;
  uint64_t launches = 0, audited = 0, failures = 0;
  uint64_t last_bad_value = 0, last_bad_expected = 0, last_bad_launch = 0;
};

// A kernel's cooperative-launch state (Kernel::coop_state()).
class CoopState {
public:
  // Occupancy cache and device facts, under `mu` (no driver call under it).
  std::mutex mu;
  bool occ_valid = false;
  uint32_t occ_threads = 0;
  uint64_t occ_shared = 0;
  int32_t occ_per_sm = 0;
  int32_t sms = -1;          // multiprocessors; -1: not read yet
  int32_t coop_support = -1; // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH

  // Declared barriers: entries below `barrier_count` are set (under
  // admission, before the count is published) and never change.
  std::atomic<uint32_t> barrier_count{0};
  std::unique_ptr<Barrier> barriers[k_max_barriers];
  uint64_t seq = 0; // barrier launches (under admission)
  std::shared_ptr<AuditProgress> progress = std::make_shared<AuditProgress>();
};

// The co-residency limit of a launch shape.
struct CoopLimit {
  int32_t per_sm = 0;
  int32_t sms = 0;
  uint64_t max_blocks = 0;
};

// t4a_kernel_max_cooperative_blocks (block_size >= 1 checked by the caller).
t4a_status max_cooperative_blocks(Kernel &k, int32_t block_size,
                                  uint64_t dynamic_shared, int32_t *max_blocks);

// t4a_kernel_declare_barrier (desc as given by the caller).
t4a_status declare_barrier(Kernel &k, const t4a_barrier_desc *desc,
                           uint32_t *index);

// t4a_kernel_barrier_audit (the out-struct checked by the caller).
t4a_status barrier_audit(Kernel &k, uint32_t index, t4a_barrier_audit *out);

// Compares the audits still pending when kernel `k` is destroyed (its
// last reference dropped: every launch of it is complete), so that a
// barrier failure in the last launches before a release or teardown is
// still counted and logged (Kernel::~Kernel).
void audit_at_release(Kernel &k, CoopState &st);

// The launch of a validated descriptor with T4A_LAUNCH_COOPERATIVE or of a
// kernel with barriers (launch.cpp's branch): admission, shared-memory
// raise, co-residency check, resets, launch, audit copies, keeps.
// `buffers` are the launch's buffer arguments (kept by a capture in
// progress). During a capture the resets are captured and the audit is
// left out.
// `ex`: launch attributes (launch/attributes.hpp; never with a cooperative
// launch), or NULL.
t4a_status launch_special(core::Runtime &rt, Kernel &k,
                          const t4a_launch_desc &d, const Verdict &v,
                          const LaunchEx *ex, void **params,
                          core::Object *const *buffers, size_t nbuffers);

} // namespace t4a::launch
