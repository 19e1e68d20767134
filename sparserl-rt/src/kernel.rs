//! What the generated module hands to the runtime: one [`KernelSpec`] per declared kernel.

use crate::variant::{ValueType, Variant};

/// Where a kernel's code came from at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Measured search on the build machine's GPU.
    Measured,
    /// Read from a fresh lock file (`SparseRL.lock`).
    LockFile,
    /// Picked by the policy without measuring (no GPU at build time).
    Policy,
    /// The safe fallback variant (search disabled and no lock file).
    Fallback,
}

/// A few statistics of the pattern a kernel was tuned for, used by runtime
/// dispatch to notice a matrix far from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TunedFor {
    /// Mean nonzeros per row of the tuning samples.
    pub mean_row: f64,
    /// Coefficient of variation of row lengths (std / mean).
    pub cv_row: f64,
    /// Longest row divided by the mean row length.
    pub max_over_mean: f64,
}

/// Everything the runtime needs to launch one declared kernel.
///
/// Generated code builds these as `static` items; user code does not normally
/// construct them by hand.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    /// Declared kernel name (`name` in the descriptor).
    pub name: &'static str,
    /// Value type.
    pub value: ValueType,
    /// The chosen variant.
    pub variant: Variant,
    /// How the variant was chosen.
    pub provenance: Provenance,
    /// Entry point of the chosen variant in `ptx`.
    pub entry: &'static str,
    /// CUDA C++ source of the chosen variant.
    pub source: &'static str,
    /// PTX of the chosen variant (`None` when NVRTC was unavailable at build time;
    /// the runtime then compiles `source` with NVRTC on first use).
    pub ptx: Option<&'static str>,
    /// Entry point of the nnz-balanced fallback.
    pub fallback_entry: &'static str,
    /// CUDA C++ source of the fallback.
    pub fallback_source: &'static str,
    /// PTX of the fallback, like `ptx`.
    pub fallback_ptx: Option<&'static str>,
    /// Statistics of the tuning samples.
    pub tuned_for: TunedFor,
}
