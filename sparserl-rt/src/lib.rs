//! # sparserl-rt
//!
//! Runtime half of SparseRL: what a binary that launches its generated
//! kernels needs (the CSR host type, the layouts, the feature vector that
//! runtime dispatch reads, kernel variants, the device context, uploads,
//! module loading, typed and fused launches, device vector operations, CUDA
//! graphs and solvers).
//!
//! Features (none by default):
//! - `jit`: NVRTC inside the binary, to compile a kernel's source at first
//!   use when the build embedded no image;
//! - `sprs`: conversions from and to sprs matrices;
//! - `tools`: what the build side and the benchmarks use (`jit`, `sprs`, the
//!   Matrix Market reader `mtx`, the synthetic generators `synth`, the
//!   measurement harness `measure`);
//! - `nvml`: energy per call through NVML (`energy`; implies `tools`).
//!
//! # The API
//!
//! A user calls what the crate root re-exports ([`Gpu`], [`Csr`],
//! [`DeviceCsr`], [`DeviceVec`], [`DeviceDense`], [`DeviceScalar`], the
//! kernel traits [`SpmvKernel`] and [`SpmmKernel`] that the generated module
//! implements, [`Graph`], [`RtError`]) and five modules: [`ops`] (BLAS-1 on
//! the device), [`solvers`] (CG, PageRank), [`layouts`] (which layouts an
//! upload builds), [`renumber`] (working in a renumbered matrix's order) and
//! [`large`] (matrices past 2^31 nonzeros: [`LargeCsr`] over the caller's
//! arrays, 64-bit row pointers, [`DeviceLargeCsr`] and its SpMV kernels).
//! The other modules are public for the generated code, the build helper and
//! the repository's tools, and hidden from these docs: they are not a stable
//! interface.

#![warn(missing_docs)]

// The user API.
pub mod large;
pub mod layouts;
pub mod ops;
pub mod renumber;
pub mod solvers;

// Implementation modules: used by the generated module, sparserl-build and
// the repository's tools; not part of the documented interface.
#[doc(hidden)]
pub mod binned;
mod capture;
#[doc(hidden)]
pub mod csr;
#[doc(hidden)]
pub mod dense;
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod dia;
#[cfg(feature = "nvml")]
#[doc(hidden)]
pub mod energy;
#[doc(hidden)]
pub mod epilogue;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod features;
#[doc(hidden)]
pub mod graph;
#[doc(hidden)]
pub mod kernel;
#[doc(hidden)]
pub mod launch;
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod measure;
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod mtx;
#[doc(hidden)]
pub mod narrow;
#[cfg(feature = "jit")]
#[doc(hidden)]
pub mod nvrtc;
mod pin;
mod raw;
#[doc(hidden)]
pub mod reorder;
#[doc(hidden)]
pub mod scalar;
#[doc(hidden)]
pub mod sell;
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod sources;
#[doc(hidden)]
pub mod spmm;
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod synth;
#[doc(hidden)]
pub mod tiled;
#[doc(hidden)]
pub mod variant;

pub use csr::{Csr, CsrError};
pub use dense::{DenseLayout, DeviceDense};
pub use device::{DeviceCsr, DeviceVec, Gpu, Scalar};
pub use epilogue::Epilogue;
pub use error::RtError;
pub use graph::Graph;
pub use kernel::{KernelSpec, Provenance};
pub use large::{DeviceLargeCsr, LargeCsr, OffsetWidth};
pub use launch::{Fused, SpmvKernel};
pub use layouts::Layouts;
pub use renumber::{Internal, Numbering, Operand};
pub use scalar::{Coef, DeviceCoefs, DeviceScalar};
pub use spmm::{SpmmEpilogue, SpmmKernel, SpmmSpec};
pub use variant::ValueType;

// Implementation re-exports kept for the generated module and the tools.
#[doc(hidden)]
pub use device::{DeviceBinned, DeviceDia, DeviceTiled, validate_raw};
#[doc(hidden)]
pub use epilogue::FusedEntry;
#[doc(hidden)]
pub use features::Features;
#[doc(hidden)]
pub use kernel::{ArchPtx, Image, TunedFor, arch_number};
#[doc(hidden)]
pub use launch::{Dispatch, dispatch, launch_variant};
#[cfg(feature = "tools")]
#[doc(hidden)]
pub use measure::{Bench, MeasureOptions, Measurement, copy_bandwidth_gbs, tolerance};
#[doc(hidden)]
pub use spmm::{SpmmStrategy, SpmmVariant, spmm_space};
#[doc(hidden)]
pub use variant::{Strategy, Variant, VariantError, core_space, full_space, layout_space};
