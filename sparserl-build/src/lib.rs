//! # sparserl-build
//!
//! Build-script helper of SparseRL. A crate declares the sparse matrices it
//! multiplies in its `Cargo.toml`; at build time this crate reads the
//! declarations, picks a kernel variant for each (lock file, measured search
//! on the build machine's GPU, or the policy's pick without a GPU), generates
//! the CUDA source, compiles it to PTX with NVRTC, caches the result by
//! content hash and writes a Rust module with one type per kernel.
//!
//! ## Declaring kernels
//!
//! ```toml
//! [package.metadata.sparserl]
//! arch = ["sm_80", "sm_90"]     # optional
//! budget-seconds = 30           # optional; measured-search budget per kernel
//! objective = "time"            # optional; "time" | "energy" | { time = w1, energy = w2 }
//!
//! [[package.metadata.sparserl.kernel]]
//! name = "laplace2d"            # Rust type `Laplace2d` in the generated module
//! op = "spmv"
//! value = "f32"                 # "f32" | "f64"
//! pattern = { kind = "stencil", grid = [1024, 1024], points = 5 }
//! epilogues = ["dot"]           # optional; fused forms for solvers
//! reorder = "auto"              # optional; "auto" | "none" | "rcm" | "degree"
//! objective = "energy"          # optional; overrides the crate's objective
//! ```
//!
//! ## build.rs
//!
//! `build.rs` calls [`build`] from its `main` (it reports errors and exits
//! non-zero itself):
//!
//! ```no_run
//! sparserl_build::build();
//! ```
//!
//! and in the crate:
//!
//! ```ignore
//! mod kernels {
//!     include!(concat!(env!("OUT_DIR"), "/sparserl_kernels.rs"));
//! }
//! ```
//!
//! ## Environment
//!
//! | variable | effect |
//! | --- | --- |
//! | `SPARSERL_MODE` | `full` (measure), `policy` (no measuring), `off` (lock file or fallback) |
//! | `SPARSERL_BUDGET_SECONDS` | per-kernel search budget, overrides `budget-seconds` |
//! | `SPARSERL_CACHE_DIR` | persistent cache directory (default `<target>/sparserl-cache`) |
//! | `SPARSERL_CACHE` | `off` disables the persistent cache |
//! | `SPARSERL_CUDA_ROOT`, `CUDA_PATH`, `CUDA_HOME` | where to find NVRTC |
//! | `SPARSERL_GPU_LOCK` | the machine-wide lock file held while measuring (default in the temporary directory) |

#![warn(missing_docs)]

// The API of a build script: `build`, `Builder`, the lock file, the
// descriptor and their errors (re-exported below). The other modules stay
// reachable for the repository's own tools (benchmarks, retune, checks) but
// are hidden from the documentation and carry no stability promise; the
// cache is private.
pub mod builder;
mod cache;
#[doc(hidden)]
pub mod codegen;
pub mod descriptor;
#[doc(hidden)]
pub mod emit;
#[doc(hidden)]
pub mod emit_spmm;
#[doc(hidden)]
pub mod entry;
#[doc(hidden)]
pub mod entry_spmm;
#[doc(hidden)]
pub mod gpu;
#[doc(hidden)]
pub mod gpu_energy;
#[doc(hidden)]
pub mod gpu_lock;
pub mod gpu_spmm;
pub mod lock;
pub mod lock_spmm;
pub mod objective;
#[doc(hidden)]
pub mod search;
#[doc(hidden)]
pub mod verify;

pub use builder::{
    BuildError, BuildReport, Builder, CacheStatus, Entry, KernelReport, Mode, Output, build,
    try_build,
};
pub use descriptor::{Descriptor, DescriptorError, KernelDecl, Pattern, read_descriptor};
pub use gpu::{GpuError, GpuTuner};
pub use lock::{LOCK_FILE, LockEntry, LockFile};
pub use objective::{Objective, ObjectiveRecord};
pub use search::{SearchConfig, TuneOutcome, search};
