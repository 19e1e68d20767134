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
//!   measurement harness `measure`).

#![warn(missing_docs)]

pub mod csr;
pub mod dense;
pub mod variant;

pub use csr::{Csr, CsrError};
pub use variant::{Strategy, ValueType, Variant, core_space, full_space, layout_space};
pub mod binned;
pub mod dia;
pub mod features;
pub mod kernel;
#[cfg(feature = "tools")]
pub mod mtx;
pub mod narrow;
pub mod sell;
#[cfg(feature = "tools")]
pub mod synth;
pub mod tiled;
pub use features::Features;
pub use kernel::{ArchPtx, Image, KernelSpec, Provenance, TunedFor, arch_number};
pub mod device;
pub mod epilogue;
pub mod error;
pub mod graph;
pub mod launch;
pub mod layouts;
#[cfg(feature = "tools")]
pub mod measure;
#[cfg(feature = "jit")]
pub mod nvrtc;
pub mod ops;
pub mod renumber;
pub mod reorder;
pub mod scalar;
pub mod solvers;
#[cfg(feature = "tools")]
#[doc(hidden)]
pub mod sources;
pub mod spmm;
pub use dense::{DenseLayout, DeviceDense};
pub use device::{
    DeviceBinned, DeviceCsr, DeviceDia, DeviceTiled, DeviceVec, Gpu, Layouts, Scalar, validate_raw,
};
pub use epilogue::{Epilogue, FusedEntry};
pub use error::RtError;
pub use graph::Graph;
pub use launch::{Dispatch, Fused, SpmvKernel, dispatch, launch_variant};
#[cfg(feature = "tools")]
pub use measure::{Bench, MeasureOptions, Measurement, copy_bandwidth_gbs, tolerance};
pub use renumber::{Internal, Numbering, Operand};
pub use scalar::{Coef, DeviceCoefs, DeviceScalar};
pub use spmm::{SpmmEpilogue, SpmmKernel, SpmmSpec, SpmmStrategy, SpmmVariant, spmm_space};
