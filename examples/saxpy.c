#include <stdio.h>
#include <t4acuda.h>

#define N (1 << 20)
#define CHECK(call)                                                            \
  do {                                                                         \
    t4a_status s_ = (call);                                                    \
    if (s_ != T4A_SUCCESS) {                                                   \
      char m[1024];                                                            \
      t4a_last_error_message(m, sizeof m, NULL);                               \
      fprintf(stderr, "%s: %s\n", t4a_status_name(s_), m);                     \
      return 1;                                                                \
    }                                                                          \
  } while (0)

static float x[N], y[N];

int main(void) {
  t4a_runtime_options options = T4A_RUNTIME_OPTIONS_INIT;
  t4a_runtime rt;
  CHECK(t4a_runtime_create(&options, &rt));
  t4a_compile_request req = T4A_COMPILE_REQUEST_INIT;
  req.source = "extern \"C\" __global__ void saxpy(float a, float *x, float *y,"
               " int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
               " if (i < n) y[i] = a * x[i] + y[i]; }";
  req.runtime = rt; /* a CUBIN for this runtime's device */
  t4a_artifact art;
  t4a_module mod;
  t4a_kernel saxpy;
  CHECK(t4a_compile(&req, &art));
  CHECK(t4a_module_load(rt, art, &mod));
  CHECK(t4a_kernel_get(mod, "saxpy", &saxpy));

  for (int i = 0; i < N; ++i) x[i] = 1.0f, y[i] = 2.0f;
  t4a_buffer dx, dy;
  CHECK(t4a_buffer_alloc(rt, sizeof x, 0, &dx));
  CHECK(t4a_buffer_alloc(rt, sizeof y, 0, &dy));
  CHECK(t4a_buffer_upload(rt, dx, 0, x, sizeof x));
  CHECK(t4a_buffer_upload(rt, dy, 0, y, sizeof y));

  float a = 3.0f;
  int n = N;
  t4a_arg args[4] = {T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT, T4A_ARG_INIT};
  args[0].kind = T4A_ARG_SCALAR, args[0].value = &a, args[0].size = sizeof a;
  args[1].kind = T4A_ARG_BUFFER, args[1].buffer = dx;
  args[2].kind = T4A_ARG_BUFFER, args[2].buffer = dy;
  args[3].kind = T4A_ARG_SCALAR, args[3].value = &n, args[3].size = sizeof n;
  t4a_launch_desc d = T4A_LAUNCH_DESC_INIT;
  d.kernel = saxpy;
  d.grid[0] = N / 256, d.grid[1] = 1, d.grid[2] = 1;
  d.block[0] = 256, d.block[1] = 1, d.block[2] = 1;
  d.arg_count = 4;
  d.args = args;
  CHECK(t4a_launch(rt, &d));
  CHECK(t4a_buffer_download_sync(rt, dy, 0, y, sizeof y)); /* waits */

  int bad = 0;
  for (int i = 0; i < N; ++i) bad += y[i] != 5.0f;
  t4a_buffer_release(dx); /* stream-ordered frees: no host wait */
  t4a_buffer_release(dy);
  t4a_kernel_release(saxpy);
  t4a_module_release(mod);
  t4a_artifact_release(art);
  CHECK(t4a_runtime_destroy(rt));
  return bad == 0 ? 0 : 1;
}
