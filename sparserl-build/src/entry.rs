//! What a build produces: one [`Entry`] per kernel (as cached), and the
//! reports a build returns.

use crate::builder::Mode;
use crate::search::Trial;
use serde::{Deserialize, Serialize};
use sparserl_rt::{ValueType, Variant};
use std::path::PathBuf;

/// What became of one cache lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheStatus {
    /// Found in the persistent cache: no generation work.
    Hit,
    /// Not found (or damaged): generated now and stored.
    Miss,
}

/// One generated kernel, as stored in the cache and reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Declared name.
    pub name: String,
    /// Value type.
    pub value: ValueType,
    /// Chosen variant.
    pub variant: Variant,
    /// `measured`, `lock-file`, `policy` or `fallback`.
    pub provenance: String,
    /// One-line human explanation of the choice.
    pub note: String,
    /// Predicted fraction of copy bandwidth (policy picks), an estimate.
    pub predicted: Option<f64>,
    /// Measured GB/s of the winner (measured or locked choices).
    pub measured_gbs: Option<f64>,
    /// Target architectures of the PTX, comma-separated, lowest first.
    pub arch: String,
    /// Entry point.
    pub entry: String,
    /// CUDA source.
    pub source: String,
    /// PTX, when NVRTC was available.
    pub ptx: Option<String>,
    /// Fallback entry point.
    pub fallback_entry: String,
    /// Fallback source.
    pub fallback_source: String,
    /// Fallback PTX.
    pub fallback_ptx: Option<String>,
    /// `(arch, PTX, fallback PTX)` for every target architecture, lowest first.
    #[serde(default)]
    pub ptx_by_arch: Vec<(String, String, String)>,
    /// The GPU a measured or locked variant was measured on.
    #[serde(default)]
    pub tuned_on: Option<String>,
    /// `(arch, cubin, fallback cubin)` for the target architectures `ptxas`
    /// assembled (every one when it was found at build time).
    #[serde(default)]
    pub cubin_by_arch: Vec<(String, Vec<u8>, Vec<u8>)>,
    /// Fused epilogues: (epilogue, entry in the chosen PTX when the variant
    /// fuses, entry in the fallback PTX).
    #[serde(default)]
    pub fused: Vec<(String, Option<String>, String)>,
    /// mean row length, cv, max/mean of the samples.
    pub tuned_for: [f64; 3],
    /// Features of each sample (policy input), in `Features::NAMES` order.
    pub sample_features: Vec<Vec<f64>>,
    /// Every measurement of the search (empty unless measured).
    pub trials: Vec<Trial>,
}

/// Result for one kernel.
#[derive(Debug, Clone)]
pub struct KernelReport {
    /// Declared name.
    pub name: String,
    /// Generated type name.
    pub type_name: String,
    /// Cache hit or miss.
    pub cache: CacheStatus,
    /// The generated entry.
    pub entry: Entry,
    /// CUDA source written to OUT_DIR.
    pub source_path: PathBuf,
    /// PTX written to OUT_DIR, when compiled.
    pub ptx_path: Option<PathBuf>,
    /// Cache key.
    pub key: String,
    /// Wall time of this kernel, seconds.
    pub seconds: f64,
}

/// Result of a build.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The mode used.
    pub mode: Mode,
    /// Per kernel, in declaration order.
    pub kernels: Vec<KernelReport>,
    /// The generated module.
    pub module: PathBuf,
    /// Persistent cache directory, if enabled.
    pub cache_dir: Option<PathBuf>,
}
