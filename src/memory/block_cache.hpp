// A per-thread cache of fixed-size memory blocks for objects made and
// destroyed on hot paths (a buffer per allocation). Up to 64 freed blocks
// per thread are kept and reused; a block freed on another thread joins
// that thread's cache. A thread's cached blocks are freed at its exit
// (a pthread key destructor, registered the first time it caches one).
// The per-thread list is trivially destructible and uses the initial-exec
// TLS model: reaching it is one instruction, with no __tls_get_addr call
// and no TLS guard (its few bytes come from the static TLS surplus glibc
// keeps for dlopen'ed libraries).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <new>

namespace t4a::memory {

template <size_t Size> class BlockCache {
  struct Node {
    Node *next;
  };
  struct List {
    Node *head;
    unsigned count;
    bool registered;
  };
  static_assert(Size >= sizeof(Node), "block too small");

  static inline thread_local List list_
      __attribute__((tls_model("initial-exec"))) = {nullptr, 0, false};

  static void drain(void *p) {
    auto *l = static_cast<List *>(p);
    while (Node *n = l->head) {
      l->head = n->next;
      ::operator delete(n);
    }
    l->count = 0;
  }
  static pthread_key_t key() {
    static pthread_key_t k = [] {
      pthread_key_t made;
      pthread_key_create(&made, &BlockCache::drain);
      return made;
    }();
    return k;
  }

public:
  static void *take() {
    List &l = list_;
    if (Node *n = l.head) {
      l.head = n->next;
      --l.count;
      return n;
    }
    return ::operator new(Size);
  }
  static void give(void *p) noexcept {
    List &l = list_;
    if (l.count >= 64) {
      ::operator delete(p);
      return;
    }
    if (!l.registered) {
      l.registered = true;
      pthread_setspecific(key(), &l);
    }
    auto *n = static_cast<Node *>(p);
    n->next = l.head;
    l.head = n;
    ++l.count;
  }
};

} // namespace t4a::memory
