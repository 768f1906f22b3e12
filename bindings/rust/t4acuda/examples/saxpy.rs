//! y = a*x + y on the GPU: compile with NVRTC, launch, verify.
//! Run in bindings/rust: T4ACUDA_LIB_DIR=$PWD/../../build/default/src cargo run --example saxpy
use t4acuda::{compile, Runtime};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn main() -> Result<(), t4acuda::Error> {
    let rt = Runtime::new()?;
    let kernel = rt.load(&compile(SAXPY).for_runtime(&rt).build()?)?.kernel("saxpy")?;
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (dx, dy) = (rt.buffer_from(&x)?, rt.buffer_from(&vec![1.0f32; n])?);
    rt.launch(&kernel, (n as u32).div_ceil(256), 256, &[&2.0f32, &dx, &dy, &(n as i32)])?;
    let y: Vec<f32> = rt.to_vec(&dy)?;
    assert!(y.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32 + 1.0));
    println!("saxpy: {n} elements ok");
    Ok(())
}
