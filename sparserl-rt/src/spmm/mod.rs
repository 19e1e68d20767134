//! SpMM, `Y = alpha A X + beta Y` with a dense `X` of `N` columns: the
//! design space ([`SpmmVariant`], [`spmm_space`]), the float64 reference
//! (the `reference` module, [`Csr::spmm_f64`](crate::Csr::spmm_f64)), the typed
//! launches ([`SpmmKernel`], [`SpmmSpec`]) and, with the `tools` feature,
//! the measurement harness (`measure`) and the GPU check (`check`).

#[cfg(feature = "tools")]
pub mod check;
pub mod launch;
#[cfg(feature = "tools")]
pub mod measure;
pub mod reference;
pub mod variant;
pub(crate) mod workspace;

pub use launch::{SpmmEntryNames, SpmmFunctions, SpmmImage, SpmmKernel, SpmmModule, SpmmSpec};
#[cfg(feature = "tools")]
pub use measure::{SpmmBench, SpmmMeasurement};
pub use reference::{SpmmCase, max_row_rel_err, spmm_reference};
pub use variant::{
    SpmmEpilogue, SpmmShape, SpmmStrategy, SpmmVariant, SpmmVariantError, spmm_bytes, spmm_space,
};

#[cfg(test)]
mod tests;
