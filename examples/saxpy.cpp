#include <t4acuda.hpp>
#include <vector>
int main() {
  const char *src = R"(extern "C" __global__ void saxpy(float a, float *x,
    float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i]; })";
  t4a::Runtime rt(t4a::RuntimeOptions{});
  t4a::Module m(rt, t4a::compile(t4a::CompileRequest(src).for_runtime(rt)));
  const int n = 1 << 20;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  t4a::DeviceArray<float> dx(rt, x), dy(rt, y);
  m.kernel("saxpy").launch(rt, n / 256, 256, 3.0f, dx, dy, n);
  dy.download(rt, y);
  return y == std::vector<float>(n, 5.0f) ? 0 : 1;
}
