// Identical compiles at once run NVRTC once: the first thread to miss both
// caches for a key leads (compiles); the others wait for it to finish and
// then look the key up again (a memory or disk hit, or, when the leader
// failed or cached nothing, a compile of their own). Process-wide, created
// on first use, never destroyed. A thread that already leads the key (a
// log callback of its compile compiling the same source) is not made to
// wait for itself: it compiles without leading.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/fork.hpp"
#include "core/sha256.hpp"

namespace t4a::compile {

class InFlight {
public:
  static InFlight &instance();

  enum class Turn { Lead, Waited, Nested };
  // Lead: the caller leads the compile of `key` and must end it with a
  // Lead's destruction. Waited: another thread led it and has finished.
  // Nested: the calling thread already leads it.
  Turn lead_or_wait(const core::Digest &key);
  // Fork safety (core/fork.hpp): the child forgets the leads of threads
  // that do not exist there and gets a fresh condition variable.
  void at_fork(core::ForkPhase phase);

  // Ends a lead: wakes the threads waiting for the key. While held, what
  // the thread logs is deferred (core::LogDefer) and delivered after the
  // lead ends: a log callback compiling another thread's key while this
  // thread leads a key that thread waits for would hang both.
  class Lead {
  public:
    Lead() = default;
    Lead(const Lead &) = delete;
    Lead &operator=(const Lead &) = delete;
    ~Lead();
    void start(const core::Digest &key);

  private:
    bool held_ = false;
    core::Digest key_{};
  };

private:
  friend class Lead;
  void end(const core::Digest &key);

  std::mutex mu_;
  std::condition_variable done_;
  std::map<core::Digest, std::thread::id> leading_;
};

} // namespace t4a::compile
