//! The SpMM entries of the lock file (`[[spmm]]` tables): one tuned variant
//! per declared dense width, validated when the lock file is read.
//!
//! ```toml
//! [[spmm]]
//! name = "gcn"
//! value = "f32"
//! dense = "row-major"
//! descriptor = "<fingerprint of the declaration and its sample bytes>"
//! generator = "<SpMM generator fingerprint: codegen::spmm::spmm_generator_fingerprint>"
//! gpu = "NVIDIA H200"
//! candidates = 61
//!
//! [[spmm.width]]
//! n = 64
//! variant = "nnz-split.b256.i16.v2.c1.u1.ldg"
//! gbs = 1180.4
//! pct-copy = 28.2
//! ```

use serde::{Deserialize, Serialize};
use sparserl_rt::ValueType;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmVariant, SpmmVariantError};

/// What is wrong with an `[[spmm]]` entry that parses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpmmEntryError {
    /// The entry has no widths.
    #[error("no [[spmm.width]] entries")]
    NoWidths,
    /// A width is zero or not above the previous one.
    #[error(
        "width n = {n} is not positive and above the previous one ({last}): widths must be ascending and distinct"
    )]
    WidthOrder {
        /// the width
        n: usize,
        /// the previous width (0 for the first)
        last: usize,
    },
    /// A variant id that does not parse (or is not canonical).
    #[error("width n = {n}: {reason}")]
    BadVariantId {
        /// the width
        n: usize,
        /// why it does not parse
        #[source]
        reason: SpmmVariantError,
    },
    /// A variant that is not valid for the entry's dense layout.
    #[error("width n = {n}: variant `{variant}`: {reason}")]
    InvalidVariant {
        /// the width
        n: usize,
        /// the variant id
        variant: String,
        /// why it is not valid
        #[source]
        reason: SpmmVariantError,
    },
    /// Bandwidth figures that are not finite non-negative numbers.
    #[error("width n = {n}: gbs {gbs} / pct-copy {pct_copy} are not finite non-negative numbers")]
    NotFinite {
        /// the width
        n: usize,
        /// the recorded GB/s
        gbs: f64,
        /// the recorded share of copy bandwidth
        pct_copy: f64,
    },
}

/// One tuned SpMM kernel of the lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SpmmLockEntry {
    /// Kernel name from the descriptor.
    pub name: String,
    /// Value type.
    pub value: ValueType,
    /// Storage order of X and Y the variants were measured with.
    pub dense: DenseLayout,
    /// Fingerprint of the kernel's declaration (widths and layout
    /// included) and sample bytes.
    pub descriptor: String,
    /// Generator fingerprint the variants were measured with.
    pub generator: String,
    /// The GPU it was tuned on.
    pub gpu: String,
    /// Candidates measured by the search over all widths.
    pub candidates: u32,
    /// One entry per declared width, ascending.
    pub width: Vec<SpmmLockWidth>,
}

/// The tuned variant of one width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SpmmLockWidth {
    /// Dense width N.
    pub n: usize,
    /// The variant's id (`SpmmVariant::id`), parsed and checked on read.
    pub variant: String,
    /// Winner's effective bandwidth on the samples at this width, GB/s.
    pub gbs: f64,
    /// Its share of the device's measured copy bandwidth, percent.
    pub pct_copy: f64,
}

impl SpmmLockEntry {
    /// Checks what serde cannot: every variant id parses, is canonical and
    /// valid for the entry's layout; widths are positive, ascending and
    /// distinct; numbers are finite. The error names the width.
    pub fn validate(&self) -> Result<(), SpmmEntryError> {
        if self.width.is_empty() {
            return Err(SpmmEntryError::NoWidths);
        }
        let mut last = 0;
        for w in &self.width {
            if w.n == 0 || w.n <= last {
                return Err(SpmmEntryError::WidthOrder { n: w.n, last });
            }
            last = w.n;
            let v = self.variant_of(w)?;
            v.validate_for(self.dense)
                .map_err(|reason| SpmmEntryError::InvalidVariant {
                    n: w.n,
                    variant: w.variant.clone(),
                    reason,
                })?;
            if !(w.gbs.is_finite() && w.gbs >= 0.0 && w.pct_copy.is_finite()) {
                return Err(SpmmEntryError::NotFinite {
                    n: w.n,
                    gbs: w.gbs,
                    pct_copy: w.pct_copy,
                });
            }
        }
        Ok(())
    }

    fn variant_of(&self, w: &SpmmLockWidth) -> Result<SpmmVariant, SpmmEntryError> {
        SpmmVariant::parse(&w.variant)
            .map_err(|reason| SpmmEntryError::BadVariantId { n: w.n, reason })
    }

    /// The widths and their variants (the entry was validated on read).
    pub fn variants(&self) -> Vec<(usize, SpmmVariant)> {
        self.width
            .iter()
            .filter_map(|w| Some((w.n, self.variant_of(w).ok()?)))
            .collect()
    }

    /// Whether the entry holds exactly the declared `columns`, in `dense`.
    pub fn covers(&self, columns: &[usize], dense: DenseLayout) -> bool {
        self.dense == dense && self.width.iter().map(|w| w.n).eq(columns.iter().copied())
    }
}
