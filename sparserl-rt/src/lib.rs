//! # sparserl-rt
//!
//! Runtime half of SparseRL. Host-side pieces shared with the build helper
//! (CSR matrices, Matrix Market reading, synthetic pattern generators, the
//! feature vector, kernel variants) plus the device side (context, uploads,
//! module loading, typed launches, measurement).

#![warn(missing_docs)]

pub mod csr;
pub mod variant;

pub use csr::{Csr, CsrError};
pub use variant::{Strategy, ValueType, Variant, core_space, full_space, layout_space};
pub mod binned;
pub mod dia;
pub mod features;
pub mod kernel;
pub mod mtx;
pub mod narrow;
pub mod synth;
pub mod tiled;
pub use features::Features;
pub use kernel::{ArchPtx, Image, KernelSpec, Provenance, TunedFor, arch_number};
pub mod device;
pub mod epilogue;
pub mod error;
pub mod graph;
pub mod launch;
pub mod measure;
pub mod nvrtc;
pub mod ops;
pub mod scalar;
pub mod solvers;
pub use device::{
    DeviceBinned, DeviceCsr, DeviceDia, DeviceTiled, DeviceVec, Gpu, Layouts, Scalar, validate_raw,
};
pub use epilogue::{Epilogue, FusedEntry};
pub use error::RtError;
pub use graph::Graph;
pub use launch::{Dispatch, Fused, SpmvKernel, dispatch, launch_variant};
pub use measure::{Bench, MeasureOptions, Measurement, copy_bandwidth_gbs, tolerance};
pub use scalar::{Coef, DeviceCoefs, DeviceScalar};
