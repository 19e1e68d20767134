//! What a build produces for an `op = "spmm"` kernel: [`SpmmEntry`] (as
//! cached) and [`SpmmKernelReport`].

use crate::entry::CacheStatus;
use crate::search::spmm::SpmmTrial;
use serde::{Deserialize, Serialize};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmEpilogue, SpmmVariant};
use sparserl_rt::{Provenance, ValueType};
use std::path::PathBuf;

/// One generated SpMM kernel, as stored in the cache and reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpmmEntry {
    /// Declared name.
    pub name: String,
    /// Value type.
    pub value: ValueType,
    /// Layout of X and Y.
    pub layout: DenseLayout,
    /// Declared fused epilogues (entries in every module).
    pub epilogues: Vec<SpmmEpilogue>,
    /// How the variants were chosen.
    pub provenance: Provenance,
    /// One-line human explanation of the choice.
    pub note: String,
    /// Target architectures of the images, lowest first.
    pub arch: Vec<String>,
    /// The GPU the variants were measured on (measured or locked choices).
    pub tuned_on: Option<String>,
    /// One module per declared width, ascending (its compile-time entry
    /// plus the generic one).
    pub widths: Vec<SpmmModuleEntry>,
    /// The generic-width `SpmmVariant::FALLBACK` module.
    pub fallback: SpmmModuleEntry,
    /// Every measurement of the search (empty unless measured).
    pub trials: Vec<SpmmTrial>,
}

/// One translation unit of an SpMM kernel and its images.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpmmModuleEntry {
    /// The variant.
    pub variant: SpmmVariant,
    /// Compile-time width of the tuned entry (`None`: generic only).
    pub width: Option<usize>,
    /// Measured GB/s at this width (measured or locked choices).
    pub measured_gbs: Option<f64>,
    /// The prior's predicted fraction of copy bandwidth (policy picks).
    pub predicted: Option<f64>,
    /// CUDA source.
    pub source: String,
    /// Images per target architecture, lowest first (empty without NVRTC).
    pub images: Vec<SpmmArchImage>,
}

/// The image of one module for one architecture.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpmmArchImage {
    /// Target, e.g. `sm_90`.
    pub arch: String,
    /// PTX text.
    pub ptx: String,
    /// Cubin, when `ptxas` was found at build time.
    pub cubin: Option<Vec<u8>>,
}

impl SpmmModuleEntry {
    /// File stem of this module inside the kernel directory:
    /// `<kernel>.spmm.n<width>` or `<kernel>.spmm.fallback`.
    pub fn stem(&self, kernel: &str) -> String {
        match self.width {
            Some(n) => format!("{kernel}.spmm.n{n}"),
            None => format!("{kernel}.spmm.fallback"),
        }
    }
}

/// Result for one SpMM kernel.
#[derive(Debug, Clone)]
pub struct SpmmKernelReport {
    /// Declared name.
    pub name: String,
    /// Generated type name.
    pub type_name: String,
    /// Cache hit or miss.
    pub cache: CacheStatus,
    /// The generated entry.
    pub entry: SpmmEntry,
    /// CUDA sources written to OUT_DIR, one per module (widths, then fallback).
    pub source_paths: Vec<PathBuf>,
    /// Cache key.
    pub key: String,
    /// Wall time of this kernel, seconds.
    pub seconds: f64,
}
