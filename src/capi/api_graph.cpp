// Graph capture and replay entry points (experimental section of
// t4acuda.h): t4a_capture_begin / t4a_capture_end, t4a_graph_launch,
// retain, release and info. See core/capture.hpp and capi/graph.hpp.
#include <cstddef>

#include "capi/entry.hpp"
#include "capi/graph.hpp"
#include "capi/handles.hpp"
#include "core/capture.hpp"
#include "core/capture_options.hpp"
#include "core/raw_scope.hpp"
#include "core/section_admission.hpp"
#include "core/struct_io.hpp"

using namespace t4a;
using capi::in;
using core::Ref;

extern "C" {

T4A_API t4a_status t4a_capture_begin(t4a_runtime runtime,
                                     const t4a_capture_options *options) {
  return T4A_ENTRY({
    return capi::call(
        in(runtime, "runtime"), [&](Ref<core::Runtime> &rt) -> t4a_status {
          t4a_capture_options o = T4A_CAPTURE_OPTIONS_INIT;
          if (options != nullptr)
            if (t4a_status s = core::read_struct(options, &o, "options");
                s != T4A_SUCCESS)
              return s;
          core::Check check; // core/capture_options.hpp
          core::check_capture_options(o, &check);
          if (!check.ok()) return core::fail(check.status, "%s", check.message);
          // A raw scope of this thread holds the admission below.
          if (core::raw_scope_open_here(*rt))
            return core::fail(T4A_ERROR_REENTRANT,
                              "this thread holds a raw scope of the runtime "
                              "(t4a_raw_begin); end it before capturing");
          core::Admission adm(rt->admission());
          if (adm.status() != T4A_SUCCESS) return adm.status();
          if (t4a_status s = rt->check_usable(); s != T4A_SUCCESS) return s;
          return core::capture_begin(*rt, o.mode);
        });
  });
}

T4A_API t4a_status t4a_capture_end(t4a_runtime runtime, t4a_graph *graph) {
  return T4A_ENTRY({
    return capi::call(in(runtime, "runtime"), capi::not_null(graph, "graph"),
                      [&](Ref<core::Runtime> &rt) -> t4a_status {
                        Ref<capi::Graph> g;
                        if (t4a_status s =
                                capi::Graph::end_capture(std::move(rt), &g);
                            s != T4A_SUCCESS)
                          return s;
                        return capi::publish(std::move(g), graph);
                      });
  });
}

T4A_API t4a_status t4a_graph_launch(t4a_runtime runtime, t4a_graph graph) {
  return T4A_ENTRY({
    // Both handles are borrowed, as t4a_launch's are (core/borrow.hpp);
    // failures in argument order. The replay waits for admission: it runs
    // outside the section, holding references (core::run_outside).
    return capi::call_borrowed(
        in(runtime, "runtime"), in(graph, "graph"),
        [&](core::BorrowSection &section, core::Runtime &rt,
            capi::Graph &g) -> t4a_status {
          core::Borrowed held({&rt, &g}, nullptr, 0);
          return core::run_outside(section, held, [&] { return g.launch(rt); });
        });
  });
}

T4A_API t4a_status t4a_graph_retain(t4a_graph graph) {
  return T4A_ENTRY({ return capi::retain(graph, "graph"); });
}

T4A_API t4a_status t4a_graph_release(t4a_graph graph) {
  return T4A_ENTRY({ return capi::release(graph, "graph"); });
}

T4A_API t4a_status t4a_graph_info_get(t4a_graph graph, t4a_graph_info *info) {
  return T4A_ENTRY({
    return capi::call(in(graph, "graph"), capi::out_struct(info, "info"),
                      [&](Ref<capi::Graph> &g) -> t4a_status {
                        g->info(info);
                        return T4A_SUCCESS;
                      });
  });
}

} // extern "C"
