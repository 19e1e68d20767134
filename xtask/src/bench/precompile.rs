//! Compiling the whole design space up front: every variant for every value
//! type with NVRTC in parallel threads, then the modules loaded once.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The loaded function of every variant and value type, or why not.
pub(super) type Compiled = HashMap<(Variant, ValueType), Result<CudaFunction, String>>;

/// `(entry, ptx)` or why compiling failed.
type CompiledPtx = Result<(String, String), String>;

/// Compiles every variant for every value type with NVRTC in parallel
/// threads, then loads the modules.
pub(super) fn precompile(gpu: &Gpu, space: &[Variant], values: &[ValueType]) -> Compiled {
    let jobs: Vec<(Variant, ValueType)> = values
        .iter()
        .flat_map(|&t| space.iter().map(move |&v| (v, t)))
        .collect();
    let arch = gpu.arch();
    let opts: Vec<String> = sparserl_build::builder::COMPILE_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 16);
    let compiled: Vec<(usize, CompiledPtx)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(v, t)) = jobs.get(i) else { break };
                        let r = sparserl_build::codegen::generate(&v, t)
                            .map_err(|e| e.to_string())
                            .and_then(|src| {
                                sparserl_rt::nvrtc::compile_ptx(&src.source, &arch, &opts)
                                    .map(|ptx| (src.entry, ptx))
                                    .map_err(|e| e.to_string())
                            });
                        out.push((i, r));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut map = Compiled::new();
    for (i, r) in compiled {
        // SAFETY: generated entries are named after their variant, value type and
        // epilogue (one code per name); launched through Bench's unsafe methods.
        let load = |(entry, ptx): (String, String)| unsafe { gpu.load_ptx(&entry, &ptx) };
        let f = r.and_then(|c| load(c).map_err(|e| e.to_string()));
        map.insert(jobs[i], f);
    }
    for job in jobs {
        map.entry(job)
            .or_insert_with(|| Err("compile worker failed".to_string()));
    }
    map
}
