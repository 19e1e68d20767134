//! Kernel descriptors: what a crate declares in its `Cargo.toml`.
//!
//! A crate that wants tuned sparse kernels lists them under
//! `[package.metadata.sparserl]`:
//!
//! ```toml
//! [package.metadata.sparserl]
//! arch = ["sm_80", "sm_90"]     # optional; default: the build GPU's arch if any, else sm_80 + sm_90
//! budget-seconds = 30           # optional; measured-search budget per kernel (positive number)
//!
//! [[package.metadata.sparserl.kernel]]
//! name = "laplace2d"            # becomes Rust type `Laplace2d` in the generated module
//! op = "spmv"                   # "spmv" now; "spmm" is reserved and not supported yet
//! value = "f32"                 # "f32" | "f64"
//! pattern = { kind = "stencil", grid = [1024, 1024], points = 5 }
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
//!
//! Kernel names are Rust identifiers (ASCII letters, digits and underscores,
//! not starting with a digit, not a keyword); the generated type name is the
//! UpperCamelCase form (`my_kernel` becomes `MyKernel`) and must be unique.
//! Unknown keys are errors everywhere. Every [`DescriptorError`] names the
//! manifest, the key path (e.g. `package.metadata.sparserl.kernel[1].op`),
//! what was found and what is allowed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};
use sparserl_rt::{Csr, ValueType};
use thiserror::Error;
use toml::{Table, Value};

mod mtx_files;
mod pattern_parse;
mod samples;
mod toml_walk;

use mtx_files::*;
use pattern_parse::*;
use toml_walk::*;

/// Architectures used when `arch` is not given and no GPU is present at build time.
pub const DEFAULT_ARCH: [&str; 2] = ["sm_80", "sm_90"];

/// Largest accepted `samples` count of a synthetic pattern.
pub const MAX_SAMPLES: u32 = 8;

/// Key path of the descriptor table.
const ROOT: &str = "package.metadata.sparserl";

/// Largest row / column count a kernel supports (32-bit signed indices).
const MAX_DIM: usize = i32::MAX as usize - 1;

const TOP_KEYS: &[&str] = &["arch", "budget-seconds", "kernel"];
const KERNEL_KEYS: &[&str] = &["name", "op", "value", "pattern", "epilogues", "reorder"];
const KINDS: &[&str] = &[
    "matrix-market",
    "samples",
    "stencil",
    "banded",
    "power-law",
    "uniform",
    "block",
];

/// Rust keywords (strict and reserved, edition 2024) that cannot name a kernel.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
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
}

impl Op {
    /// The name used in descriptors.
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::Spmv => "spmv",
        }
    }
}

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
    let root = find_root(&cx, &doc)?;
    let top = Fields {
        cx: &cx,
        path: ROOT.to_string(),
        table: root,
    };
    top.check_keys(TOP_KEYS)?;

    let arch = match top.opt("arch") {
        None => None,
        Some(v) => Some(parse_arch(&cx, &top.key("arch"), v)?),
    };
    let budget_seconds = match top.opt("budget-seconds") {
        None => None,
        Some(v) => Some(positive_number(&cx, &top.key("budget-seconds"), v)?),
    };

    let kernels = match top.opt("kernel") {
        None => {
            return Err(cx.err(
                &top.key("kernel"),
                no_kernels_message("no kernels declared"),
            ));
        }
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(cx.err(
                &top.key("kernel"),
                no_kernels_message("found an empty array"),
            ));
        }
        Some(Value::Array(items)) => items,
        Some(Value::Table(_)) => {
            return Err(cx.err(
                &top.key("kernel"),
                format!(
                    "found a single table, expected an array of tables: write \
                     [[{ROOT}.kernel]] (double brackets) for each kernel"
                ),
            ));
        }
        Some(other) => {
            return Err(cx.err(
                &top.key("kernel"),
                format!(
                    "found {}, expected an array of kernel tables ([[{ROOT}.kernel]])",
                    found_typed(other)
                ),
            ));
        }
    };

    let mut decls = Vec::with_capacity(kernels.len());
    // Generated identifier -> (kernel index, name) of the kernel it came from.
    let mut seen: HashMap<String, (usize, String)> = HashMap::new();
    for (i, item) in kernels.iter().enumerate() {
        let path = kernel_key_path(i);
        let Value::Table(table) = item else {
            return Err(cx.err(
                &path,
                format!("found {}, expected a kernel table", found_typed(item)),
            ));
        };
        let decl = parse_kernel(&cx, path, table)?;
        // Every identifier the generated module derives from the name: the
        // type and the `NAME_SPEC` static (the name upper-cased).
        let idents = [
            ("type name", decl.type_name.clone()),
            ("static", spec_static_name(&decl.name)),
        ];
        for (kind, ident) in &idents {
            if let Some((j, other)) = seen.get(ident) {
                let what = if *other == decl.name {
                    format!("found \"{}\" again", decl.name)
                } else {
                    format!(
                        "found \"{}\", whose {kind} {ident} is also derived from \"{other}\"",
                        decl.name
                    )
                };
                return Err(cx.err(
                    &format!("{}.name", kernel_key_path(i)),
                    format!(
                        "{what} (kernel[{j}] and kernel[{i}]), expected unique kernel names \
                         (and unique UpperCamelCase type names and NAME_SPEC statics: \
                         names that differ only in letter case or underscores clash)"
                    ),
                ));
            }
        }
        for (_, ident) in idents {
            seen.insert(ident, (i, decl.name.clone()));
        }
        decls.push(decl);
    }

    Ok(Descriptor {
        manifest: manifest.to_path_buf(),
        arch,
        budget_seconds,
        kernels: decls,
    })
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
            out.extend(k.pattern.files(&dir));
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

// ---------------------------------------------------------------------------
// Parsing helpers
// ---------------------------------------------------------------------------

fn parse_arch(cx: &Cx<'_>, path: &str, v: &Value) -> Result<Vec<String>, DescriptorError> {
    const EXPECTED: &str = "expected an array of architectures like [\"sm_80\", \"sm_90\"] (\"sm_\" followed by 2 or 3 digits)";
    let Value::Array(items) = v else {
        return Err(cx.err(path, format!("found {}, {EXPECTED}", found_typed(v))));
    };
    if items.is_empty() {
        return Err(cx.err(
            path,
            format!("found an empty array, {EXPECTED}; omit the key for the default"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let s = match item {
            Value::String(s) => s,
            other => {
                return Err(cx.err(
                    &item_path,
                    format!(
                        "found {}, expected a string like \"sm_80\"",
                        found_typed(other)
                    ),
                ));
            }
        };
        let digits = s.strip_prefix("sm_").unwrap_or("");
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(cx.err(
                &item_path,
                format!(
                    "found {}, expected an architecture like \"sm_80\" or \"sm_90\" \
                     (\"sm_\" followed by 2 or 3 digits)",
                    quote(s)
                ),
            ));
        }
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

fn parse_kernel(cx: &Cx<'_>, path: String, table: &Table) -> Result<KernelDecl, DescriptorError> {
    let f = Fields { cx, path, table };
    f.check_keys(KERNEL_KEYS)?;

    let name_path = f.key("name");
    let name = string(
        cx,
        &name_path,
        f.req("name", "a string naming the kernel, e.g. \"laplace2d\"")?,
    )?;
    let type_name = check_name(cx, &name_path, name)?;

    let op_path = f.key("op");
    let op = match string(cx, &op_path, f.req("op", &one_of(&["spmv"]))?)? {
        "spmv" => Op::Spmv,
        "spmm" => {
            return Err(cx.err(
                &op_path,
                "found \"spmm\", expected one of \"spmv\" (\"spmm\" is reserved but not supported yet)",
            ));
        }
        other => {
            return Err(cx.err(
                &op_path,
                format!("found {}, expected {}", quote(other), one_of(&["spmv"])),
            ));
        }
    };

    let value_path = f.key("value");
    let value = match string(cx, &value_path, f.req("value", &one_of(&["f32", "f64"]))?)? {
        "f32" => ValueType::F32,
        "f64" => ValueType::F64,
        other => {
            return Err(cx.err(
                &value_path,
                format!(
                    "found {}, expected {}",
                    quote(other),
                    one_of(&["f32", "f64"])
                ),
            ));
        }
    };

    let pattern_path = f.key("pattern");
    let pattern = match f.req(
        "pattern",
        "a table such as { kind = \"stencil\", grid = [1024, 1024], points = 5 }",
    )? {
        Value::Table(t) => parse_pattern(cx, pattern_path, t)?,
        other => {
            return Err(cx.err(
                &pattern_path,
                format!(
                    "found {}, expected a table such as {{ kind = \"stencil\", grid = [1024, 1024], points = 5 }}",
                    found_typed(other)
                ),
            ));
        }
    };

    let epilogues = match f.opt("epilogues") {
        None => Vec::new(),
        Some(v) => parse_epilogues(cx, &f.key("epilogues"), v)?,
    };
    let reorder = match f.opt("reorder") {
        None => None,
        Some(v) => parse_reorder(cx, &f.key("reorder"), v)?,
    };

    Ok(KernelDecl {
        name: name.to_string(),
        type_name,
        op,
        value,
        pattern,
        epilogues,
        reorder,
    })
}

/// `reorder = "auto" | "none" | "rcm" | "degree"` (`None`: auto).
fn parse_reorder(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Option<sparserl_rt::reorder::Reorder>, DescriptorError> {
    use sparserl_rt::reorder::Reorder;
    let names = ["auto", "none", "rcm", "degree"];
    match v {
        Value::String(s) if s == "auto" => Ok(None),
        Value::String(s) => Reorder::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .map(Some)
            .ok_or_else(|| {
                cx.err(
                    path,
                    format!("found {}, expected {}", quote(s), one_of(&names)),
                )
            }),
        other => Err(cx.err(
            path,
            format!("found {}, expected {}", found_typed(other), one_of(&names)),
        )),
    }
}

/// `epilogues = ["dot", ...]`: known names, each at most once.
fn parse_epilogues(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Vec<sparserl_rt::Epilogue>, DescriptorError> {
    let names: Vec<&str> = sparserl_rt::Epilogue::ALL
        .iter()
        .map(|e| e.as_str())
        .collect();
    let Value::Array(items) = v else {
        return Err(cx.err(
            path,
            format!(
                "found {}, expected an array of {}",
                found_typed(v),
                one_of(&names)
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let e = match item {
            Value::String(s) => sparserl_rt::Epilogue::parse(s).ok_or_else(|| {
                cx.err(
                    &item_path,
                    format!("found {}, expected {}", quote(s), one_of(&names)),
                )
            })?,
            other => {
                return Err(cx.err(
                    &item_path,
                    format!("found {}, expected {}", found_typed(other), one_of(&names)),
                ));
            }
        };
        if out.contains(&e) {
            return Err(cx.err(
                &item_path,
                format!(
                    "found {} twice, expected each epilogue at most once",
                    quote(e.as_str())
                ),
            ));
        }
        out.push(e);
    }
    Ok(out)
}

/// Validates a kernel name and returns its UpperCamelCase type name.
fn check_name(cx: &Cx<'_>, path: &str, name: &str) -> Result<String, DescriptorError> {
    const RULE: &str = "expected a Rust identifier in snake_case (ASCII letters, digits and \
                        underscores, not starting with a digit, not a keyword)";
    if name.is_empty() {
        return Err(cx.err(path, format!("found an empty string, {RULE}")));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        let hint: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        return Err(cx.err(
            path,
            format!(
                "found {}, {RULE}; {bad:?} is not allowed (try \"{hint}\")",
                quote(name)
            ),
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(cx.err(
            path,
            format!("found {}, {RULE}; it starts with a digit", quote(name)),
        ));
    }
    if KEYWORDS.contains(&name) {
        return Err(cx.err(
            path,
            format!("found {}, {RULE}; it is a Rust keyword", quote(name)),
        ));
    }
    let type_name = upper_camel(name);
    if !type_name.starts_with(|c: char| c.is_ascii_alphabetic())
        || KEYWORDS.contains(&type_name.as_str())
    {
        return Err(cx.err(
            path,
            format!(
                "found {}, {RULE}; its type name {:?} is not a valid Rust identifier",
                quote(name),
                type_name
            ),
        ));
    }
    Ok(type_name)
}

/// The static the generated module declares for kernel `name`:
/// `laplace2d` -> `LAPLACE2D_SPEC`.
fn spec_static_name(name: &str) -> String {
    format!("{}_SPEC", name.to_ascii_uppercase())
}

/// `my_kernel_v2` -> `MyKernelV2`, `laplace2d` -> `Laplace2d`.
fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for part in name.split('_') {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    out
}

fn ser_path<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

#[cfg(test)]
mod tests;
