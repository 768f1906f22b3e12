/* Capture once per shape, replay many: a chain of small launches captured
 * into one graph (t4a_capture_begin / t4a_capture_end) and replayed; the
 * buffers, the module and the kernel are released right after the capture
 * (the graph keeps them). Checks its result; exits 1 on any failure.
 * docs/graphs.md explains the pattern. */
#define T4A_EXPERIMENTAL
#include <stdio.h>
#include <t4acuda.h>

#define N 4096
#define LINKS 8
#define REPLAYS 100
#define CHECK(call)                                                            \
  do {                                                                         \
    t4a_status s_ = (call);                                                    \
    if (s_ != T4A_SUCCESS) {                                                   \
      char m[1024];                                                            \
      t4a_last_error_message(m, sizeof m, NULL);                               \
      fprintf(stderr, "%s: %s: %s\n", #call, t4a_status_name(s_), m);          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  t4a_runtime_options options = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  CHECK(t4a_runtime_create(&options, &rt));
  t4a_compile_request req = T4A_COMPILE_REQUEST_INIT;
  req.source = "extern \"C\" __global__ void step(float *y, float a, int n) {"
               " int i = blockIdx.x * blockDim.x + threadIdx.x;"
               " if (i < n) y[i] = y[i] * a + 1.0f; }";
  req.runtime = rt;
  t4a_artifact art;
  t4a_module mod;
  t4a_kernel step;
  CHECK(t4a_compile(&req, &art));
  CHECK(t4a_module_load(rt, art, &mod));
  CHECK(t4a_kernel_get(mod, "step", &step));
  CHECK(t4a_artifact_release(art));

  /* Everything the chain needs exists before the capture: allocation is
   * refused while capturing (T4A_ERROR_CAPTURING). */
  t4a_buffer y;
  t4a_host_buffer result;
  CHECK(t4a_buffer_alloc(rt, N * sizeof(float), 0, &y));
  CHECK(t4a_host_buffer_alloc(rt, N * sizeof(float), &result));

  /* One shape (N, the block size, the arguments): captured once. */
  int n = N;
  float a = 0.5f;
  t4a_arg args[3] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = T4A_ARG_BUFFER;
  args[0].buffer = y;
  args[1].kind = T4A_ARG_SCALAR;
  args[1].value = &a;
  args[1].size = sizeof a;
  args[2].kind = T4A_ARG_SCALAR;
  args[2].value = &n;
  args[2].size = sizeof n;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = step;
  d.grid[0] = (N + 255) / 256;
  d.block[0] = 256;
  d.args = args;
  d.arg_count = 3;
  t4a_graph chain;
  CHECK(t4a_capture_begin(rt, NULL));
  CHECK(t4a_buffer_fill(rt, y, 0, N * sizeof(float), 0)); /* y = 0 */
  for (int i = 0; i < LINKS; ++i) CHECK(t4a_launch(rt, &d));
  CHECK(t4a_buffer_download_host(rt, y, 0, result, 0, N * sizeof(float)));
  CHECK(t4a_capture_end(rt, &chain));
  /* The graph keeps the buffer, the module and the host buffer. */
  CHECK(t4a_kernel_release(step));
  CHECK(t4a_module_release(mod));
  CHECK(t4a_buffer_release(y));

  for (int r = 0; r < REPLAYS; ++r) CHECK(t4a_graph_launch(rt, chain));
  CHECK(t4a_graph_release(chain));
  CHECK(t4a_runtime_synchronize(rt));

  void *p;
  CHECK(t4a_host_buffer_pointer(result, &p, NULL));
  float want = 0.0f;
  for (int i = 0; i < LINKS; ++i) want = want * 0.5f + 1.0f;
  const float *h = p;
  for (int i = 0; i < N; ++i)
    if (h[i] != want) {
      fprintf(stderr, "y[%d] = %g, expected %g\n", i, h[i], want);
      return 1;
    }
  printf("graph_chain: %d replays of %d launches: y = %g\n", REPLAYS, LINKS,
         want);
  CHECK(t4a_host_buffer_release(result));
  CHECK(t4a_runtime_destroy(rt));
  return 0;
}
