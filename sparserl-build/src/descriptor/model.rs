//! The serde model of a descriptor: the shape of `[package.metadata.sparserl]`
//! as written, before validation.
//!
//! serde decides the shape: which keys each table may hold (every table of
//! the descriptor denies unknown keys) and which `kind` a pattern is (an
//! internally tagged enum). What a value means is the validation pass's
//! business (`validate`, `validate_pattern`): a leaf whose message depends on
//! the value as written (numbers and their ranges, arrays, names from a
//! list, required keys) is kept as an optional [`toml::Value`], so that every
//! message keeps its wording and the first problem of a table is reported
//! first whatever the order of its keys: its unknown keys, then its keys in
//! documented order (a typed leaf would let serde report a wrong type before
//! an unknown key that sorts after it).
//!
//! Read these types with [`super::path_de::deserialize_at`], whose errors
//! carry the key path (`toml`'s own deserializer's do not).

use serde::Deserialize;
use toml::Value;

/// A `Cargo.toml` document; only `[package]` is read, every other key belongs
/// to Cargo.
#[derive(Debug, Deserialize)]
pub(super) struct RawManifest {
    /// `[package]`.
    pub(super) package: Option<RawPackage>,
}

/// The `[package]` table; only `metadata` is read.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a table")]
pub(super) struct RawPackage {
    /// `[package.metadata]`.
    pub(super) metadata: Option<RawMetadata>,
}

/// The `[package.metadata]` table; only `sparserl` is read (other tools own
/// the other keys).
#[derive(Debug, Deserialize)]
#[serde(expecting = "a table")]
pub(super) struct RawMetadata {
    /// `[package.metadata.sparserl]`: the descriptor.
    pub(super) sparserl: Option<RawSparserl>,
}

/// The descriptor table, `[package.metadata.sparserl]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table")]
pub(super) struct RawSparserl {
    /// `arch = ["sm_80", "sm_90"]`: an array of architecture names.
    pub(super) arch: Option<Value>,
    /// `budget-seconds = 30`: a positive number.
    pub(super) budget_seconds: Option<Value>,
    /// `objective = "time" | "energy" | { time = w1, energy = w2 }`: the
    /// crate's objective (kernels may override it).
    pub(super) objective: Option<Value>,
    /// `[[package.metadata.sparserl.kernel]]`: the array of kernel tables.
    /// Kept loose so that a single table, an empty array or another type is
    /// reported as such; validation reads each entry as a [`RawKernel`]
    /// after the keys above, one kernel after the other.
    pub(super) kernel: Option<Value>,
}

/// One `[[package.metadata.sparserl.kernel]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a kernel table")]
pub(super) struct RawKernel {
    /// `name = "laplace2d"`: the kernel's Rust name.
    pub(super) name: Option<Value>,
    /// `op = "spmv"` or `"spmm"`.
    pub(super) op: Option<Value>,
    /// `value = "f32"` or `"f64"`.
    pub(super) value: Option<Value>,
    /// `pattern = { kind = "...", ... }`. Validation checks it is a table,
    /// then reads it as a [`RawPattern`]: serde's internally tagged enums
    /// would also take an array whose first element is the kind.
    pub(super) pattern: Option<Value>,
    /// `columns = 64` or `columns = [32, 64, 128]` (spmm kernels only).
    pub(super) columns: Option<Value>,
    /// `dense = "row-major" | "col-major"` (spmm kernels only).
    pub(super) dense: Option<Value>,
    /// `epilogues = ["axpby", "dot", "axpby-dot"]` (spmv) or
    /// `["bias-relu"]` (spmm).
    pub(super) epilogues: Option<Value>,
    /// `reorder = "auto" | "none" | "rcm" | "degree"`.
    pub(super) reorder: Option<Value>,
    /// `objective = "time" | "energy" | { time = w1, energy = w2 }`.
    pub(super) objective: Option<Value>,
}

/// A kernel's `pattern` table, tagged by its `kind` key.
///
/// The fields of a variant are buffered by serde before they are read, so
/// a type error in one of them could not name its key: they are all
/// [`toml::Value`]s, checked (and required) by `validate_pattern`.
#[derive(Debug, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case",
    deny_unknown_fields
)]
pub(super) enum RawPattern {
    /// `kind = "matrix-market"`.
    MatrixMarket {
        /// `path`: a `.mtx` / `.mtx.gz` file relative to the manifest.
        path: Option<Value>,
    },
    /// `kind = "samples"`.
    Samples {
        /// `dir`: a directory of Matrix Market files relative to the manifest.
        dir: Option<Value>,
    },
    /// `kind = "stencil"`.
    Stencil {
        /// `grid = [nx, ny]` or `[nx, ny, nz]`.
        grid: Option<Value>,
        /// `points`: 5 / 9 in 2-D, 7 / 27 in 3-D.
        points: Option<Value>,
        /// `seed` (no effect: stencils are deterministic).
        seed: Option<Value>,
        /// `samples` (must be 1).
        samples: Option<Value>,
    },
    /// `kind = "banded"`.
    Banded {
        /// `rows`.
        rows: Option<Value>,
        /// `bandwidth`.
        bandwidth: Option<Value>,
        /// `avg-degree`.
        avg_degree: Option<Value>,
        /// `seed`.
        seed: Option<Value>,
        /// `samples`.
        samples: Option<Value>,
    },
    /// `kind = "power-law"`.
    PowerLaw {
        /// `rows`.
        rows: Option<Value>,
        /// `avg-degree`.
        avg_degree: Option<Value>,
        /// `exponent`.
        exponent: Option<Value>,
        /// `seed`.
        seed: Option<Value>,
        /// `samples`.
        samples: Option<Value>,
    },
    /// `kind = "uniform"`.
    Uniform {
        /// `rows`.
        rows: Option<Value>,
        /// `cols`.
        cols: Option<Value>,
        /// `avg-degree`.
        avg_degree: Option<Value>,
        /// `seed`.
        seed: Option<Value>,
        /// `samples`.
        samples: Option<Value>,
    },
    /// `kind = "block"`.
    Block {
        /// `rows`.
        rows: Option<Value>,
        /// `block = [r, c]`.
        block: Option<Value>,
        /// `blocks-per-row`.
        blocks_per_row: Option<Value>,
        /// `seed`.
        seed: Option<Value>,
        /// `samples`.
        samples: Option<Value>,
    },
}
