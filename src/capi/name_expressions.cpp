#include "capi/name_expressions.hpp"

#include <cstring>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>

#include "compile/artifact.hpp"

namespace t4a::capi {

namespace {

struct KeyHash {
  size_t operator()(const core::Digest &d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof h); // a SHA-256 prefix is a good hash
    return h;
  }
};

struct Entry {
  core::Digest key;
  std::shared_ptr<const launch::NameTable> table;
  uint64_t bytes;
};

class Tables {
public:
  static Tables &instance() {
    static Tables *t = new Tables(); // never destroyed: used at exit too
    return *t;
  }

  void remember(const core::Digest &key,
                std::shared_ptr<const launch::NameTable> table,
                uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second); // the same expressions
      return;
    }
    index_.reserve(index_.size() + 1);
    lru_.push_front(Entry{key, std::move(table), bytes});
    index_[key] = lru_.begin();
    bytes_ += bytes;
    while (lru_.size() > 1 && bytes_ > k_table_bytes) {
      bytes_ -= lru_.back().bytes;
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  std::shared_ptr<const launch::NameTable> find(const core::Digest &key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->table;
  }

  void at_fork(core::ForkPhase phase) {
    if (phase == core::ForkPhase::Prepare)
      mu_.lock();
    else
      mu_.unlock(); // in the child: the only thread, which locked it
  }

private:
  std::mutex mu_; // a leaf: nothing else is taken, nothing logged under it
  std::list<Entry> lru_; // front: most recently remembered or used
  std::unordered_map<core::Digest, std::list<Entry>::iterator, KeyHash> index_;
  uint64_t bytes_ = 0;
};

void remember(const compile::Artifact &a,
              const std::vector<std::string> &expressions,
              const std::vector<std::string> &lowered) {
  auto table = std::make_shared<launch::NameTable>();
  table->reserve(expressions.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < expressions.size(); ++i) {
    table->push_back(launch::NameExpression{expressions[i], lowered[i]});
    bytes +=
        expressions[i].size() + lowered[i].size() + 2 * sizeof(std::string);
  }
  Tables::instance().remember(a.key(), std::move(table), bytes);
}

} // namespace

void remember_name_expressions(
    const compile::Artifact &a,
    const std::vector<std::string> &expressions) noexcept {
  const std::vector<std::string> &lowered = a.lowered_names();
  // The key covers the expressions, one lowered name each; a mismatch
  // cannot happen, and would pair the wrong names: nothing is kept then.
  if (expressions.empty() || expressions.size() != lowered.size()) return;
  try {
    remember(a, expressions, lowered);
  } catch (const std::bad_alloc &) {
    // The compile succeeded; its expressions are not known (a lookup by
    // expression says so, naming the way back: compile again).
  }
}

std::shared_ptr<const launch::NameTable>
name_table_of(const compile::Artifact &a, bool *forgotten) {
  *forgotten = false;
  if (a.lowered_names().empty()) return nullptr;
  std::shared_ptr<const launch::NameTable> t = Tables::instance().find(a.key());
  *forgotten = !t;
  return t;
}

void name_expressions_at_fork(core::ForkPhase phase) {
  Tables::instance().at_fork(phase);
}

} // namespace t4a::capi
