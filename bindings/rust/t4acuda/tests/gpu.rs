//! GPU tests: skip (with a line saying so) when there is no driver or no
//! device, unless T4A_REQUIRE_GPU is set, when they fail instead. Built on
//! the developer machine (`cargo test --no-run`) and run on the GPU
//! machine by scripts/gpu-lane (phase `rust`).

use t4acuda::{compile, Buffer, Download, Kernel, LaunchConfig, Runtime, RuntimeOptions, Status};

fn runtime(test: &str) -> Option<Runtime> {
    match Runtime::new() {
        Ok(rt) => Some(rt),
        Err(e)
            if std::env::var_os("T4A_REQUIRE_GPU").is_none()
                && matches!(e.status, Status::NoDriver | Status::NoDevice) =>
        {
            eprintln!("{test}: SKIPPED (no GPU: {e})");
            None
        }
        Err(e) => panic!("{test}: no runtime with T4A_REQUIRE_GPU set: {e}"),
    }
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T> __global__ void add_scalar(T *x, T v, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}
"#;

fn kernels(rt: &Runtime) -> (Kernel, Kernel) {
    let art = compile(SAXPY)
        .option("-std=c++17")
        .name_expression("&add_scalar<double>")
        .for_runtime(rt)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let m = rt.load(&art).unwrap();
    let add = m.kernel(&art.lowered_name(0).unwrap()).unwrap();
    (m.kernel("saxpy").unwrap(), add)
}

#[test]
fn round_trips() {
    let Some(rt) = runtime("round_trips") else {
        return;
    };
    // f32, u8, f64 and odd sizes through upload/download.
    for n in [1usize, 3, 1000, 1 << 20] {
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let b = rt.buffer_from(&x).unwrap();
        assert_eq!(b.bytes(), 4 * n as u64);
        assert_eq!(rt.to_vec::<f32>(&b).unwrap(), x);
        let mut back = vec![0f32; n];
        rt.download(&b, 0, &mut back).unwrap();
        assert_eq!(back, x);
    }
    let bytes: Vec<u8> = (0..=255).collect();
    let b = rt.buffer_from(&bytes).unwrap();
    assert_eq!(rt.to_vec::<u8>(&b).unwrap(), bytes);
    // Offsets, fill and device copies.
    let d = rt.alloc_zeroed(64 * 8).unwrap();
    assert_eq!(rt.to_vec::<f64>(&d).unwrap(), vec![0.0; 64]);
    rt.upload(&d, 8 * 10, &[1.5f64, 2.5]).unwrap();
    let mut two = [0f64; 2];
    rt.download(&d, 80, &mut two).unwrap();
    assert_eq!(two, [1.5, 2.5]);
    rt.fill(&d, 0, 8, 0xff).unwrap();
    let e = rt.alloc(64 * 8).unwrap();
    rt.copy(&e, 0, &d, 0, 64 * 8).unwrap();
    let v = rt.to_vec::<u64>(&e).unwrap();
    assert_eq!(v[0], u64::MAX);
    assert_eq!(f64::from_bits(v[10]), 1.5);
    // Asynchronous download: consuming wait.
    let x: Vec<i32> = (0..4096).collect();
    let b = rt.buffer_from(&x).unwrap();
    let pending: Download<i32> = rt.download_async(&b, 0, x.len()).unwrap();
    rt.fill(&b, 0, b.bytes(), 0).unwrap(); // after the snapshot
    assert_eq!(pending.wait().unwrap(), x);
    let pending = rt.download_async::<i32>(&b, 4, 2).unwrap();
    let mut wrong = [0i32; 3];
    let e = pending.wait_into(&mut wrong).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    // Pinned host buffers.
    let mut h = rt.host_alloc(16).unwrap();
    unsafe { h.as_mut_slice() }.copy_from_slice(&[7u8; 16]);
    let dev = rt.alloc(16).unwrap();
    rt.upload_host(&dev, 0, &h, 0, 16).unwrap();
    rt.fill(&dev, 0, 4, 1).unwrap();
    rt.download_host(&dev, 0, &h, 0, 16).unwrap();
    rt.synchronize().unwrap();
    assert_eq!(unsafe { h.as_slice() }, &[1, 1, 1, 1, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]);
    // A download past the end: INVALID_ARGUMENT naming the ranges.
    let mut big = vec![0u8; 17];
    let e = rt.download(&dev, 0, &mut big).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(!e.message.is_empty());
}

#[test]
fn compile_launch_verify() {
    let Some(rt) = runtime("compile_launch_verify") else {
        return;
    };
    let (saxpy, add) = kernels(&rt);
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let (dx, dy) = (rt.buffer_from(&x).unwrap(), rt.buffer_from(&y).unwrap());
    let grid = (n as u32).div_ceil(256);
    rt.launch(&saxpy, grid, 256, &[&3.0f32, &dx, &dy, &(n as i32)]).unwrap();
    let got: Vec<f32> = rt.to_vec(&dy).unwrap();
    for i in 0..n {
        assert_eq!(got[i], 3.0 * x[i] + y[i], "element {i}");
    }
    // A slice argument: the kernel sees the buffer from the offset on.
    let d = rt.buffer_from(&vec![1.0f64; 1024]).unwrap();
    rt.launch(&add, 2, 256, &[&d.slice(8 * 512..8 * 1024), &0.5f64, &512u64]).unwrap();
    let v: Vec<f64> = rt.to_vec(&d).unwrap();
    assert!(v[..512].iter().all(|&a| a == 1.0));
    assert!(v[512..].iter().all(|&a| a == 1.5));
    // Completions, and launches from several threads on one runtime.
    let c = rt.record().unwrap();
    c.wait().unwrap();
    assert!(c.is_done().unwrap());
    let counter = rt.buffer_from(&[0.0f64; 1]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    rt.launch(&add, 1, 1, &[&counter, &1.0f64, &1u64]).unwrap();
                }
            });
        }
    });
    assert_eq!(rt.to_vec::<f64>(&counter).unwrap(), vec![100.0]);
    assert!(rt.stats().unwrap().launches >= 102);
}

#[test]
fn launch_errors() {
    let Some(rt) = runtime("launch_errors") else {
        return;
    };
    let (saxpy, _) = kernels(&rt);
    let b = rt.alloc(4 * 256).unwrap();
    // A double for the float parameter: the C size check refuses it.
    let e = rt.launch(&saxpy, 1, 256, &[&3.0f64, &b, &b, &256i32]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert_eq!(e.entry_point, "t4a_launch");
    assert!(
        e.message.contains("argument 0") || e.message.contains("args[0]"),
        "names the argument: {e}"
    );
    // An i64 for the int n.
    let e = rt.launch(&saxpy, 1, 256, &[&3.0f32, &b, &b, &256i64]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    // Too few arguments; a zero grid.
    let e = rt.launch(&saxpy, 1, 256, &[&3.0f32, &b]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    let e = rt.launch(&saxpy, 0, 256, &[&3.0f32, &b, &b, &256i32]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("grid[0]"), "{e}");
    // A kernel that does not exist.
    let m = rt.load(&compile(SAXPY).for_runtime(&rt).build().unwrap()).unwrap();
    assert!(m.kernel("nope").is_err());
    // A buffer of another runtime: WRONG_RUNTIME.
    let rt2 = Runtime::new().unwrap();
    let other: Buffer = rt2.alloc(1024).unwrap();
    let e = rt.launch(&saxpy, 1, 256, &[&3.0f32, &other, &b, &256i32]).unwrap_err();
    assert_eq!(e.status, Status::WrongRuntime, "{e}");
    // Nothing ran: the stream is healthy.
    rt.synchronize().unwrap();
}

#[test]
fn raw_scope_guard() {
    let Some(rt) = runtime("raw_scope_guard") else {
        return;
    };
    let b = rt.alloc(256).unwrap();
    {
        let scope = rt.raw_scope().unwrap();
        assert!(!scope.stream().is_null());
        assert!(!scope.context().is_null());
        let p = scope.device_pointer(&b).unwrap();
        assert_eq!(p, b.info().unwrap().device_pointer);
        // A second scope of the same runtime on this thread: REENTRANT.
        assert_eq!(rt.raw_scope().unwrap_err().status, Status::Reentrant);
    } // Drop ends the scope
    rt.fill(&b, 0, 256, 3).unwrap();
    let scope = rt.raw_scope().unwrap();
    scope.end().unwrap();
    assert_eq!(rt.to_vec::<u8>(&b).unwrap(), vec![3u8; 256]);
}

#[test]
fn handles_cross_threads() {
    let Some(rt) = runtime("handles_cross_threads") else {
        return;
    };
    let b = rt.buffer_from(&[1u32, 2, 3]).unwrap();
    let b2 = b.clone();
    let pending = rt.download_async::<u32>(&b, 0, 3).unwrap();
    let got = std::thread::spawn(move || {
        drop(b2); // released on another thread
        pending.wait().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(got, vec![1, 2, 3]);
    // A runtime moved to another thread and destroyed there.
    let rt2 = Runtime::new().unwrap();
    std::thread::spawn(move || rt2.destroy().unwrap()).join().unwrap();
    drop(b);
    rt.destroy().unwrap();
}

#[test]
fn raw_scopes_dropped_out_of_order_still_end() {
    let Some(rt) = runtime("raw_scopes_dropped_out_of_order_still_end") else {
        return;
    };
    let rt2 = Runtime::new().unwrap();
    let outer = rt.raw_scope().unwrap();
    let inner = rt2.raw_scope().unwrap();
    // Safe code may drop the outer guard first: the C layer refuses that
    // end (LIFO), so the guard must end it once the inner scope has ended
    // rather than leave the scope (and the runtime's admission) open.
    drop(outer);
    drop(inner);
    // Both scopes are over: each runtime admits a new scope on this thread
    // (an open one would answer REENTRANT) and is destroyed cleanly.
    rt.raw_scope().unwrap().end().unwrap();
    rt2.raw_scope().unwrap().end().unwrap();
    // An explicit out-of-order end reports the refusal and is ended later.
    let outer = rt.raw_scope().unwrap();
    let inner = rt2.raw_scope().unwrap();
    assert_eq!(outer.end().unwrap_err().status, Status::InvalidArgument);
    inner.end().unwrap();
    rt.raw_scope().unwrap().end().unwrap();
    rt2.destroy().unwrap();
    rt.destroy().unwrap();
}

// Thread block clusters (experimental launch attributes): each block
// writes a value into its shared memory, the cluster synchronizes, and
// thread 0 of each block reads its neighbour's value (the next rank of the
// cluster) through distributed shared memory; the second cluster.sync()
// keeps every block's shared memory alive until its neighbour has read it.
const CLUSTER: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void neighbour(unsigned *out, unsigned *ranks) {
  __shared__ unsigned value;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) value = 1000u + 7u * blockIdx.x;
  cluster.sync();
  unsigned peer = (rank + 1) % cluster.num_blocks();
  unsigned *theirs = cluster.map_shared_rank(&value, peer);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = *theirs;
    ranks[blockIdx.x] = rank * 100u + cluster.num_blocks();
  }
  cluster.sync();
}
"#;

#[test]
fn cluster_launch_reads_the_neighbours_shared_memory() {
    let Some(rt) = runtime("cluster_launch_reads_the_neighbours_shared_memory") else {
        return;
    };
    let dev = t4acuda::device_info(rt.info().unwrap().device_ordinal).unwrap();
    if dev.cc_major < 9 {
        // Clusters need compute capability 9.0: refused, naming it.
        eprintln!(
            "cluster_launch_reads_the_neighbours_shared_memory: SKIPPED (compute capability \
             {}.{}, clusters need 9.0)",
            dev.cc_major, dev.cc_minor
        );
        return;
    }
    let art = compile(CLUSTER).for_runtime(&rt).build().unwrap_or_else(|e| panic!("{e}"));
    let m = rt.load(&art).unwrap();
    let k = m.kernel("neighbour").unwrap();
    let blocks = 64u32;
    let out = rt.alloc_zeroed(4 * blocks as u64).unwrap();
    let ranks = rt.alloc_zeroed(4 * blocks as u64).unwrap();
    let cfg = LaunchConfig::new(blocks, 128).cluster(2);
    // The device fits clusters of 2 of this shape, and clusters of up to 8.
    let occ = k.cluster_occupancy(&cfg).unwrap_or_else(|e| panic!("{e}"));
    assert!(occ.max_active_clusters >= 1, "{occ:?}");
    assert!(occ.max_cluster_size >= 2 && occ.max_cluster_size <= 8, "{occ:?}");
    rt.launch_with(&k, &cfg, &[&out, &ranks]).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<u32> = rt.to_vec(&out).unwrap();
    let got_ranks: Vec<u32> = rt.to_vec(&ranks).unwrap();
    for b in 0..blocks {
        // 1-D clusters of 2 along x: block b has rank b % 2, its neighbour
        // is the other block of its pair.
        assert_eq!(got_ranks[b as usize], (b % 2) * 100 + 2, "block {b}: rank, cluster size");
        assert_eq!(got[b as usize], 1000 + 7 * (b ^ 1), "block {b} read its neighbour's value");
    }
    assert!(rt.stats().unwrap().launches >= 1);
    // A cluster that does not divide the grid: refused before anything is
    // enqueued, naming the grid.
    let e = rt.launch_with(&k, &LaunchConfig::new(3, 128).cluster(2), &[&out, &ranks]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("grid[0]"), "names the grid: {e}");
    rt.synchronize().unwrap();
}

#[test]
fn stream_priority_is_reported() {
    let Some(rt) = runtime("stream_priority_is_reported") else {
        return;
    };
    assert_eq!(rt.stream_priority().unwrap(), 0);
    drop(rt);
    // -1 is within every device's range (Hopper: 0 down to -5).
    let mut o = RuntimeOptions::init();
    o.stream_priority = -1;
    let rt = Runtime::with_options(&o).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rt.stream_priority().unwrap(), -1);
    // Above the default (the lowest priority): refused.
    o.stream_priority = 1;
    let e = Runtime::with_options(&o).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    rt.destroy().unwrap();
}
