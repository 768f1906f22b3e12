#include "capi/graph.hpp"

#include <utility>

#include "core/context_scope.hpp"
#include "core/counters.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/stream_context.hpp"
#include "core/struct_io.hpp"

namespace t4a::capi {

using namespace t4a::core;

using namespace t4a::driver;

namespace {
std::atomic<uint64_t> g_live_graphs{0};
} // namespace

uint64_t Graph::live() { return g_live_graphs.load(std::memory_order_relaxed); }

Graph::Graph(Ref<Runtime> rt) : Object(Kind::Graph), rt_(std::move(rt)) {
  g_live_graphs.fetch_add(1, std::memory_order_relaxed);
}

t4a_status Graph::end_capture(Ref<Runtime> rt, Ref<Graph> *out) {
  auto g = Ref<Graph>::adopt(new Graph(rt)); // may throw: before anything
  Capture::Items keeps;
  {
    Admission adm(rt->admission());
    if (adm.status() != T4A_SUCCESS) return adm.status();
    // A broken runtime still ends its capture (so the stream leaves
    // capture mode); the graph is then not instantiated.
    if (t4a_status s = capture_end_graph(*rt, &g->graph_, &keeps);
        s != T4A_SUCCESS)
      return s; // keeps dropped here: the captured work never ran
  }
  g->keeps_ = std::move(keeps);
  if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
  ContextScope scope;
  if (t4a_status s = scope.enter(rt->context(), "t4a_capture_end");
      s != T4A_SUCCESS)
    return s;
  if (has(Entry::cuGraphGetNodes)) {
    size_t n = 0;
    if (cu::graph_get_nodes(g->graph_, &n)) g->nodes_ = n;
    // else: the count is informational only (t4a_graph_info), left 0.
  }
  if (DrvResult r = cu::graph_instantiate(&g->exec_, g->graph_); !r) {
    g->exec_ = nullptr;
    return rt->fail_op(r, "t4a_capture_end: instantiating the captured graph "
                          "(cuGraphInstantiateWithFlags)");
  }
  *out = std::move(g);
  return T4A_SUCCESS;
}

Graph::~Graph() {
  g_live_graphs.fetch_sub(1, std::memory_order_relaxed);
  if (rt_->completion_unprovable()) {
    // A replay may still run: the executable graph, the graph and what
    // they use are leaked on purpose (counted by each kept object's own
    // teardown path when it is leaked).
    if (exec_ != nullptr || graph_ != nullptr)
      logf(T4A_LOG_WARN,
           "a graph of runtime %#llx is leaked: completion of its replays "
           "cannot be proven",
           static_cast<unsigned long long>(rt_->handle_id()));
    for (Ref<Object> &k : keeps_) (void)k.detach();
    return;
  }
  ContextScope scope;
  // Teardown: a failure to enter is logged, and the destroys below are
  // tried anyway (they name their graph; a context is not required).
  (void)scope.enter(rt_->context(), "destroying a graph", false);
  if (exec_ != nullptr)
    if (DrvResult r = cu::graph_exec_destroy(exec_); !r)
      logf(T4A_LOG_WARN, "destroying a graph: %s returned %s", r.entry,
           describe(r.code).c_str());
  if (graph_ != nullptr)
    if (DrvResult r = cu::graph_destroy(graph_); !r)
      logf(T4A_LOG_WARN, "destroying a graph: %s returned %s", r.entry,
           describe(r.code).c_str());
  // keeps_ go with the members: buffers free in stream order (deferred
  // while their runtime captures), modules unload, host buffers free.
}

t4a_status Graph::launch(Runtime &rt) {
  if (&rt != rt_.get())
    return fail(T4A_ERROR_WRONG_RUNTIME,
                "graph: captured on runtime %#llx, launched on runtime %#llx",
                static_cast<unsigned long long>(rt_->handle_id()),
                static_cast<unsigned long long>(rt.handle_id()));
  Admission adm(rt.admission());
  if (adm.status() != T4A_SUCCESS) return adm.status();
  if (t4a_status s = rt.check_usable(); s != T4A_SUCCESS) return s;
  if (t4a_status s = refuse_capturing(rt, "t4a_graph_launch"); s != T4A_SUCCESS)
    return s;
  auto enqueue = [&] {
    return in_stream_context(
        rt, [&] { return cu::graph_launch(exec_, rt.stream()); });
  };
  // Reserve -> enqueue -> keep, as a launch keeps its module: the graph
  // outlives this replay; a replay right after another adds nothing.
  Epochs &ep = rt.epochs();
  DrvResult r{};
  if (ep.recently_kept(this)) [[likely]] {
    r = enqueue();
  } else {
    Epochs::Reservation keep = ep.reserve_keep(rt);
    if (keep.status() != T4A_SUCCESS) [[unlikely]]
      return keep.status();
    r = enqueue();
    // Kept even when the launch failed: the driver may have queued it.
    ep.keep(std::move(keep), *this);
  }
  if (!r)
    return rt.fail_op(r, "t4a_graph_launch: replaying a graph "
                         "(cuGraphLaunch)");
  launches_.fetch_add(1, std::memory_order_relaxed);
  return T4A_SUCCESS;
}

void Graph::info(t4a_graph_info *out) const {
  t4a_graph_info i{};
  i.struct_size = sizeof i;
  i.node_count = nodes_;
  i.kept_objects = keeps_.size();
  i.launches = launches_.load(std::memory_order_relaxed);
  write_struct(out, i);
}

} // namespace t4a::capi
