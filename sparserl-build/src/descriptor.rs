//! Kernel descriptors: what a crate declares in its `Cargo.toml`.
//!
//! A crate that wants tuned sparse kernels lists them under
//! `[package.metadata.sparserl]`:
//!
//! ```toml
//! [package.metadata.sparserl]
//! arch = ["sm_80", "sm_90"]     # optional; default: the build GPU's arch if any, else sm_80 + sm_90
//! budget-seconds = 30           # optional; measured-search budget per kernel (positive number)
//! objective = "time"            # optional; "time" (default) | "energy" | { time = w1, energy = w2 }
//!
//! [[package.metadata.sparserl.kernel]]
//! name = "laplace2d"            # becomes Rust type `Laplace2d` in the generated module
//! op = "spmv"                   # "spmv" | "spmm"
//! value = "f32"                 # "f32" | "f64"
//! pattern = { kind = "stencil", grid = [1024, 1024], points = 5 }
//!
//! [[package.metadata.sparserl.kernel]]
//! name = "gcn_adjacency"
//! op = "spmm"                   # Y = A X, X dense with N columns
//! value = "f32"
//! columns = [64, 128]           # spmm only, required: the widths N tuned for
//! dense = "row-major"           # spmm only, optional: "row-major" (default) | "col-major"
//! epilogues = ["bias-relu"]     # optional: Y = relu(alpha A X + beta Y + bias[col])
//! pattern = { kind = "power-law", rows = 100000, avg-degree = 16, exponent = 2.1 }
//!
//! [[package.metadata.sparserl.kernel]]
//! name = "web_graph"
//! op = "spmv"
//! value = "f64"
//! pattern = { kind = "power-law", rows = 100000, avg-degree = 12, exponent = 2.1, seed = 7, samples = 3 }
//! ```
//!
//! Pattern kinds and their keys:
//!
//! | `kind`          | required keys                        | optional keys       |
//! |-----------------|--------------------------------------|---------------------|
//! | `matrix-market` | `path` (`.mtx` / `.mtx.gz`)          |                     |
//! | `samples`       | `dir`                                |                     |
//! | `stencil`       | `grid` (2 or 3 sizes), `points`      | `seed`, `samples`   |
//! | `banded`        | `rows`, `bandwidth`, `avg-degree`    | `seed`, `samples`   |
//! | `power-law`     | `rows`, `avg-degree`, `exponent`     | `seed`, `samples`   |
//! | `uniform`       | `rows`, `cols`, `avg-degree`         | `seed`, `samples`   |
//! | `block`         | `rows`, `block = [r, c]`, `blocks-per-row` | `seed`, `samples` |
//!
//! * `path` and `dir` are relative to the directory holding `Cargo.toml`.
//!   `samples` takes every Matrix Market file (`*.mtx`, `*.mtx.gz`) below
//!   `dir`, recursively, sorted by path; a directory without any is an error.
//! * `stencil`: `points` is 5 or 9 for a 2-D grid, 7 or 27 for a 3-D grid; the
//!   matrix has one row per grid point.
//! * `seed` (integer >= 0, default 0) and `samples` (1..=8; default 1 for
//!   `stencil`, 2 for the random kinds) choose the tuning instances: the
//!   generator runs with `seed`, `seed + 1`, ... so a family is tuned on more
//!   than one instance. Stencils are deterministic: `seed` has no effect and
//!   `samples` must be 1.
//! * `avg-degree` is a positive number no larger than the number of columns
//!   (`banded`, `power-law` and `block` matrices are square); `exponent` is
//!   greater than 1; `block` sizes must divide `rows`, and `blocks-per-row` is
//!   at most the number of block columns.
//! * `arch` entries are `sm_` followed by 2 or 3 digits; `budget-seconds` is a
//!   positive finite number.
//! * `columns` (spmm, required) is a positive integer no larger than
//!   [`MAX_SPMM_COLUMNS`] or a non-empty array of them (kept deduplicated and
//!   ascending): one tuned variant per width; a call with another width runs
//!   the generic-width entry of the nearest tuned width's variant. `dense`
//!   (spmm, optional) is the storage order of `X` and `Y`. Neither key is
//!   allowed on an spmv kernel.
//! * `objective` (crate table or kernel table): what the search minimises.
//!   `"time"` (the default) keeps the fastest correct variant; `"energy"`
//!   measures the joules per call of the time search's finalists through
//!   NVML and keeps the one using the least energy, when it beats the
//!   fastest by more than the measured noise; `{ time = w1, energy = w2 }`
//!   (non-negative weights, not both zero, a missing one is 0) minimises
//!   `w1 * t / t_best + w2 * e / e_best` over the finalists, with the same
//!   noise rule. A kernel's key overrides the crate's. SpMM kernels are
//!   measured for time only: a non-time `objective` on an `op = "spmm"`
//!   kernel is an error, and the crate's objective applies to SpMV kernels
//!   only. Without NVML or an energy counter the build uses the time pick
//!   and says so once (see `crate::search::energy`).
//! * `epilogues`: spmv kernels take `"axpby"`, `"dot"`, `"axpby-dot"`; spmm
//!   kernels take `"bias-relu"`; each at most once.
//!
//! Kernel names are Rust identifiers (ASCII letters, digits and underscores,
//! not starting with a digit, not a keyword); the generated type name is the
//! UpperCamelCase form (`my_kernel` becomes `MyKernel`) and must be unique.
//! Unknown keys are errors everywhere. Every [`DescriptorError`] names the
//! manifest, the key path (e.g. `package.metadata.sparserl.kernel[1].op`),
//! what was found and what is allowed.
//!
//! Reading a descriptor takes two steps: serde reads the document into the
//! raw model (`model`: which keys each table may hold, the pattern's `kind`
//! tag) through a deserializer that records key paths (`path_de`); the
//! validation pass (`validate`, `validate_pattern`) turns the model into
//! these types and owns every message.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::SpmmEpilogue;
use sparserl_rt::{Csr, ValueType};
use thiserror::Error;
use toml::{Table, Value};

mod model;
mod mtx_files;
mod path_de;
mod samples;
pub use samples::sample_generator_fingerprint;
mod validate;
mod validate_objective;
mod validate_pattern;
mod validate_spmm;
mod values;

use model::*;
use mtx_files::*;
use path_de::*;
use validate::*;
use validate_objective::*;
use validate_pattern::*;
use validate_spmm::*;
use values::*;

/// Architectures used when `arch` is not given and no GPU is present at build time.
pub const DEFAULT_ARCH: [&str; 2] = ["sm_80", "sm_90"];

/// Largest accepted `samples` count of a synthetic pattern.
pub const MAX_SAMPLES: u32 = 8;

/// Key path of the descriptor table.
const ROOT: &str = "package.metadata.sparserl";

/// Largest row / column count a kernel supports (32-bit signed indices).
const MAX_DIM: usize = i32::MAX as usize - 1;

/// The pattern kinds, in the order of [`Pattern`]'s variants (and of
/// `RawPattern`'s, whose serde names they are).
const KINDS: &[&str] = &[
    "matrix-market",
    "samples",
    "stencil",
    "banded",
    "power-law",
    "uniform",
    "block",
];

/// The parsed `[package.metadata.sparserl]` table of one manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Descriptor {
    /// Path of the manifest the descriptor was read from.
    #[serde(serialize_with = "ser_path")]
    pub manifest: PathBuf,
    /// Target architectures (`sm_80`, ...), deduplicated, in declaration order;
    /// `None` when not given (see [`DEFAULT_ARCH`]).
    pub arch: Option<Vec<String>>,
    /// Measured-search budget per kernel in seconds, when given.
    pub budget_seconds: Option<f64>,
    /// The crate's objective (`objective = ...`; `"time"` when not given),
    /// which kernels without their own key inherit (SpMV kernels only).
    pub objective: crate::objective::Objective,
    /// Declared kernels in declaration order (at least one).
    pub kernels: Vec<KernelDecl>,
}

/// One `[[package.metadata.sparserl.kernel]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelDecl {
    /// Declared name (a Rust identifier).
    pub name: String,
    /// UpperCamelCase type name derived from `name`.
    pub type_name: String,
    /// Operation.
    pub op: Op,
    /// Value type.
    pub value: ValueType,
    /// Sparsity pattern the kernel is tuned for.
    pub pattern: Pattern,
    /// Fused epilogues to generate next to the plain SpMV (`epilogues =
    /// ["axpby", "dot", "axpby-dot"]`, optional, in declaration order).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub epilogues: Vec<sparserl_rt::Epilogue>,
    /// Which numbering the search may store the matrix in (`reorder =
    /// "auto" | "none" | "rcm" | "degree"`, optional): `None` (`"auto"`,
    /// the default) lets it measure every order and keep one only where it
    /// pays; a value restricts it to that order (`"none"`: the given one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder: Option<sparserl_rt::reorder::Reorder>,
    /// What the search minimises (`objective = "time" | "energy" | { time
    /// = w1, energy = w2 }`, the kernel's own key or the crate's; always
    /// time for SpMM kernels). Left out of the canonical form when time, so
    /// the fingerprints of kernels that do not ask for energy are unchanged.
    #[serde(skip_serializing_if = "crate::objective::Objective::is_time")]
    pub objective: crate::objective::Objective,
    /// What an `op = "spmm"` kernel declares besides the common keys
    /// (`None` for SpMV kernels, so their canonical form, and with it
    /// their lock-file fingerprint, is what it was before SpMM existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spmm: Option<SpmmDecl>,
}

/// The SpMM part of a kernel declaration: `Y = A X` with a dense `X` of
/// `n` columns, `n` one of the declared widths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpmmDecl {
    /// Dense widths N tuned for (`columns = 64` or `[32, 64, 128]`),
    /// deduplicated and ascending, each in `1..=`[`MAX_SPMM_COLUMNS`]. A call
    /// with another width runs the generic-width entry of the nearest tuned
    /// width's variant.
    pub columns: Vec<usize>,
    /// Storage order of `X` and `Y` (`dense = "row-major"`, the default, or
    /// `"col-major"`).
    pub dense: DenseLayout,
    /// Fused epilogues (`epilogues = ["bias-relu"]`), in declaration order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub epilogues: Vec<SpmmEpilogue>,
}

impl KernelDecl {
    /// The numberings the search may choose from (see [`KernelDecl::reorder`]).
    pub fn allowed_reorders(&self) -> Vec<sparserl_rt::reorder::Reorder> {
        match self.reorder {
            None => sparserl_rt::reorder::Reorder::ALL.to_vec(),
            Some(r) => vec![r],
        }
    }
}

/// Sparse operation of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Sparse matrix times dense vector.
    Spmv,
    /// Sparse matrix times dense matrix (see [`SpmmDecl`]).
    Spmm,
}

impl Op {
    /// Every operation, in descriptor order.
    pub const ALL: [Op; 2] = [Op::Spmv, Op::Spmm];

    /// The name used in descriptors.
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::Spmv => "spmv",
            Op::Spmm => "spmm",
        }
    }
}

/// Largest accepted dense width in `columns`.
pub const MAX_SPMM_COLUMNS: usize = 4096;

/// The sparsity pattern a kernel is tuned for.
///
/// Paths are kept as written (relative to the manifest directory) so that
/// [`KernelDecl::canonical_json`] does not depend on where the crate lives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Pattern {
    /// One Matrix Market file (`.mtx` or `.mtx.gz`).
    MatrixMarket {
        /// File path, relative to the manifest directory.
        #[serde(serialize_with = "ser_path")]
        path: PathBuf,
    },
    /// Every Matrix Market file below a directory.
    Samples {
        /// Directory path, relative to the manifest directory.
        #[serde(serialize_with = "ser_path")]
        dir: PathBuf,
    },
    /// A 2-D or 3-D finite-difference stencil (deterministic).
    Stencil {
        /// Grid sizes (2 or 3 entries).
        grid: Vec<usize>,
        /// Stencil points: 5 / 9 in 2-D, 7 / 27 in 3-D.
        points: usize,
    },
    /// Random entries within a band around the diagonal (square).
    Banded {
        /// Rows (= columns).
        rows: usize,
        /// Band half-width.
        bandwidth: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
        /// First seed.
        seed: u64,
        /// Number of instances (`seed`, `seed + 1`, ...).
        samples: u32,
    },
    /// Power-law row lengths (square).
    PowerLaw {
        /// Rows (= columns).
        rows: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
        /// Power-law exponent (> 1).
        exponent: f64,
        /// First seed.
        seed: u64,
        /// Number of instances.
        samples: u32,
    },
    /// Uniformly random entries.
    Uniform {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
        /// First seed.
        seed: u64,
        /// Number of instances.
        samples: u32,
    },
    /// Dense `r x c` blocks at random block columns (square).
    Block {
        /// Rows (= columns), divisible by both block sizes.
        rows: usize,
        /// Block size `[r, c]`.
        block: [usize; 2],
        /// Blocks per block row.
        blocks_per_row: usize,
        /// First seed.
        seed: u64,
        /// Number of instances.
        samples: u32,
    },
}

/// One tuning instance of a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Human-readable label, e.g. `stencil 64x64 5-pt` or the file name.
    pub label: String,
    /// The matrix.
    pub matrix: Csr,
    /// The Matrix Market file it was read from, for file patterns.
    pub source_file: Option<PathBuf>,
}

/// A descriptor problem: the manifest, the key path and one message saying
/// what was found and what is allowed.
///
/// Displays as e.g. `error in app/Cargo.toml at
/// package.metadata.sparserl.kernel[1].op: found "spmvv", expected one of "spmv"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("error in {}{}: {message}", manifest.display(), at_clause(key_path))]
pub struct DescriptorError {
    manifest: PathBuf,
    key_path: String,
    message: String,
}

fn at_clause(key_path: &str) -> String {
    if key_path.is_empty() {
        String::new()
    } else {
        format!(" at {key_path}")
    }
}

impl DescriptorError {
    fn new(manifest: &Path, key_path: impl Into<String>, message: impl Into<String>) -> Self {
        DescriptorError {
            manifest: manifest.to_path_buf(),
            key_path: key_path.into(),
            message: message.into(),
        }
    }

    /// The key path, e.g. `package.metadata.sparserl.kernel[0].pattern.points`;
    /// empty for errors about the whole file (unreadable file, TOML syntax).
    pub fn key_path(&self) -> &str {
        &self.key_path
    }

    /// The manifest the error is about.
    pub fn manifest(&self) -> &Path {
        &self.manifest
    }

    /// The message without the location prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Key path of kernel `index`: `package.metadata.sparserl.kernel[index]`.
pub fn kernel_key_path(index: usize) -> String {
    format!("{ROOT}.kernel[{index}]")
}

/// Reads and parses the descriptor of `manifest` (a `Cargo.toml`).
pub fn read_descriptor(manifest: &Path) -> Result<Descriptor, DescriptorError> {
    let text = std::fs::read_to_string(manifest).map_err(|e| {
        DescriptorError::new(manifest, "", format!("cannot read the manifest: {e}"))
    })?;
    parse_descriptor(manifest, &text)
}

/// Parses the descriptor from the manifest text; `manifest` names the file in
/// errors and its directory anchors relative `path` / `dir` keys (which must exist).
pub fn parse_descriptor(manifest: &Path, text: &str) -> Result<Descriptor, DescriptorError> {
    let cx = Cx {
        manifest,
        dir: manifest_dir(manifest),
    };
    let doc: Table = toml::from_str(text)
        .map_err(|e| DescriptorError::new(manifest, "", format!("invalid TOML: {e}")))?;
    validate(&cx, &Value::Table(doc))
}

impl Descriptor {
    /// Directory holding the manifest (`.` for a bare file name).
    pub fn manifest_dir(&self) -> PathBuf {
        manifest_dir(&self.manifest)
    }

    /// Loads the tuning samples of kernel `index`; errors carry this manifest
    /// and the kernel's full key path.
    pub fn load_samples(&self, index: usize) -> Result<Vec<Sample>, DescriptorError> {
        let key = kernel_key_path(index);
        let Some(kernel) = self.kernels.get(index) else {
            return Err(DescriptorError::new(
                &self.manifest,
                key,
                format!(
                    "no such kernel, expected an index below {}",
                    self.kernels.len()
                ),
            ));
        };
        kernel.pattern.load_samples_in(
            &self.manifest,
            &self.manifest_dir(),
            &format!("{key}.pattern"),
        )
    }

    /// Paths whose change must rerun the build: the manifest, every sample
    /// file, and every `samples` directory (so added files are noticed).
    pub fn watched_paths(&self) -> Vec<PathBuf> {
        let dir = self.manifest_dir();
        let mut out = vec![self.manifest.clone()];
        for k in &self.kernels {
            if let Pattern::Samples { dir: d } = &k.pattern {
                out.push(dir.join(d));
            }
            // An unreadable directory fails the fingerprint and the build.
            out.extend(k.pattern.files(&dir).unwrap_or_default());
        }
        out
    }
}

impl KernelDecl {
    /// Stable JSON of the declaration (field order fixed, paths as written),
    /// for cache keys. Sample file contents are not included: hash
    /// [`Pattern::files`] separately.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"unserializable\":{e:?}}}"))
    }
}

fn ser_path<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

#[cfg(test)]
mod tests;
