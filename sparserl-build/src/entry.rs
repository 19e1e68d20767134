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
    /// How the variant was chosen.
    pub provenance: sparserl_rt::Provenance,
    /// One-line human explanation of the choice.
    pub note: String,
    /// Predicted fraction of copy bandwidth (policy picks), an estimate.
    pub predicted: Option<f64>,
    /// Measured GB/s of the winner (measured or locked choices).
    pub measured_gbs: Option<f64>,
    /// Target architectures of the images, lowest first.
    pub arch: Vec<String>,
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
    /// The compiled images for every target architecture, lowest first.
    #[serde(default)]
    pub images: Vec<ArchImages>,
    /// The GPU a measured or locked variant was measured on.
    #[serde(default)]
    pub tuned_on: Option<String>,
    /// The fused epilogues' entry points.
    #[serde(default)]
    pub fused: Vec<FusedImage>,
    /// Row statistics of the samples (runtime dispatch compares with them).
    pub tuned_for: sparserl_rt::TunedFor,
    /// Features of each sample (policy input), in `Features::NAMES` order.
    pub sample_features: Vec<Vec<f64>>,
    /// Every measurement of the search (empty unless measured).
    pub trials: Vec<Trial>,
    /// The device its shipped images were checked on against float64
    /// (`name (sm_XY)`, [`crate::verify`]); `None`: built without a GPU.
    #[serde(default)]
    pub checked_on: Option<String>,
    /// What an objective other than time did (energy of the finalists, the
    /// Pareto front, the pick); `None` for the time objective and for
    /// entries that were not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<crate::objective::ObjectiveRecord>,
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
    /// Per SpMV kernel, in declaration order.
    pub kernels: Vec<KernelReport>,
    /// Per SpMM kernel, in declaration order.
    pub spmm_kernels: Vec<crate::entry_spmm::SpmmKernelReport>,
    /// The generated module.
    pub module: PathBuf,
    /// Persistent cache directory, if enabled.
    pub cache_dir: Option<PathBuf>,
}

/// The images of one kernel for one target architecture.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArchImages {
    /// Target, e.g. `sm_90`.
    pub arch: String,
    /// PTX of the chosen variant.
    pub ptx: String,
    /// PTX of the fallback.
    pub fallback_ptx: String,
    /// Cubins (chosen, fallback) when `ptxas` was found at build time.
    pub cubins: Option<(Vec<u8>, Vec<u8>)>,
}

/// The entry points of one declared fused epilogue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FusedImage {
    /// The epilogue.
    pub epilogue: sparserl_rt::Epilogue,
    /// Its entry in the chosen PTX, `None` when the variant cannot fuse.
    pub entry: Option<String>,
    /// Its entry in the fallback PTX.
    pub fallback_entry: String,
}
