//! SpMM source generation: one self-contained translation unit per
//! (variant, value type, dense layout, width), composed from the
//! `kernels/spmm_*.cu` fragments.
//!
//! A unit holds, for a compile-time width `Some(n)`, the tuned entry of
//! width `n` and the generic runtime-width entry, and for `None` only the
//! generic one; each with one fused entry per declared epilogue. Entry names
//! come from [`SpmmVariant::entry`]; nnz-split entries come with their
//! `_prep` (and, fused, `_post`) passes. The kernel ABI is documented in
//! `sparserl_rt::spmm::launch`. Output is deterministic.

use super::CodegenError;
use sha2::{Digest, Sha256};
use sparserl_rt::ValueType;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmEpilogue, SpmmStrategy, SpmmVariant};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Version of the SpMM generator; bump whenever its composition changes.
/// [`spmm_generator_fingerprint`] also hashes the fragment texts.
pub const SPMM_GENERATOR_VERSION: &str = "sparserl-spmm-codegen-1";

const SPMM_COMMON: &str = include_str!("../../kernels/spmm_common.cuh");
const SPMM_ROW_WARP: &str = include_str!("../../kernels/spmm_row_warp.cu");
const SPMM_NNZ_SPLIT: &str = include_str!("../../kernels/spmm_nnz_split.cu");
const SPMM_COL_TILE: &str = include_str!("../../kernels/spmm_col_tile.cu");
const SPMM_TRANSPOSE: &str = include_str!("../../kernels/spmm_transpose.cu");

/// Every SpMM fragment (name, text), in a fixed order.
const SPMM_FRAGMENTS: [(&str, &str); 5] = [
    ("spmm_common.cuh", SPMM_COMMON),
    ("spmm_row_warp.cu", SPMM_ROW_WARP),
    ("spmm_nnz_split.cu", SPMM_NNZ_SPLIT),
    ("spmm_col_tile.cu", SPMM_COL_TILE),
    ("spmm_transpose.cu", SPMM_TRANSPOSE),
];

/// [`SPMM_GENERATOR_VERSION`] plus a short hash of every SpMM fragment, this
/// module's source and sparserl-rt's SpMM modules (`sources::SPMM`): changes
/// whenever generated SpMM code can change (kept apart from the SpMV
/// `generator_fingerprint`, so SpMM work does not make SpMV lock files stale).
pub fn spmm_generator_fingerprint() -> String {
    static FP: OnceLock<String> = OnceLock::new();
    FP.get_or_init(|| {
        let mut h = Sha256::new();
        h.update(SPMM_GENERATOR_VERSION.as_bytes());
        let own = [("codegen/spmm.rs", include_str!("spmm.rs"))];
        let rt = sparserl_rt::sources::SPMM;
        for &(name, text) in SPMM_FRAGMENTS.iter().chain(&own).chain(rt) {
            h.update((name.len() as u64).to_le_bytes());
            h.update(name.as_bytes());
            h.update((text.len() as u64).to_le_bytes());
            h.update(text.as_bytes());
        }
        let hex: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{SPMM_GENERATOR_VERSION}+{hex}")
    })
    .clone()
}

/// One entry point of a generated SpMM unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpmmEntry {
    /// Compile-time width (`None`: the generic runtime-width entry).
    pub width: Option<usize>,
    /// The fused epilogue, if any.
    pub epilogue: Option<SpmmEpilogue>,
    /// The `extern "C"` name of the main entry (nnz-split: plus `_prep`, `_post`).
    pub name: String,
}

/// Generated CUDA C++ of one SpMM kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpmmSource {
    /// The variant (canonical).
    pub variant: SpmmVariant,
    /// Complete, self-contained source (no `#include`s).
    pub source: String,
    /// Every main entry in it, tuned width first, plain before fused (the
    /// transposed path: plain only, the epilogue is the transposes').
    pub entries: Vec<SpmmEntry>,
    /// The transposed path's transpose entries (`_tin`, then `_tout` plain
    /// and fused); empty for other variants.
    pub transposes: Vec<String>,
}

fn fragment(s: SpmmStrategy) -> &'static str {
    match s {
        SpmmStrategy::RowWarp => SPMM_ROW_WARP,
        SpmmStrategy::NnzSplit => SPMM_NNZ_SPLIT,
        SpmmStrategy::ColTile => SPMM_COL_TILE,
    }
}

/// Appends `text` without its `#include "spmm_common.cuh"` line (the unit
/// holds the header once, at the top).
fn push_body(s: &mut String, text: &str) {
    for line in text.lines() {
        if line.trim() == "#include \"spmm_common.cuh\"" {
            continue;
        }
        s.push_str(line);
        s.push('\n');
    }
}

/// The unit's banner and the defines every entry shares.
fn push_header(
    s: &mut String,
    v: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    width: Option<usize>,
) {
    // `write!` into a String cannot fail.
    let _ = writeln!(s, "// SparseRL generated SpMM kernel. Do not edit.");
    let _ = writeln!(s, "// variant: {}", v.id());
    let _ = writeln!(
        s,
        "// value type: {}, dense: {}{}",
        value.as_str(),
        layout.as_str(),
        if v.trans {
            " (through row-major workspaces)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "// width: {}",
        width.map_or("generic".to_string(), |n| n.to_string())
    );
    let _ = writeln!(s, "// generator: {}", spmm_generator_fingerprint());
    let _ = writeln!(s);
    for (k, val) in [
        ("T", value.cuda_name().to_string()),
        ("BLOCK", v.block.to_string()),
        ("GROUP", v.group.to_string()),
        ("VEC", v.vec.to_string()),
        ("COARSEN", v.coarsen.to_string()),
        ("TILE_K", v.tile.to_string()),
        ("ITEMS", v.items.to_string()),
        ("SUB", v.sub.to_string()),
        ("SPLIT", v.split.to_string()),
        ("UNROLL", v.unroll.to_string()),
        ("SPMM_LDG", u8::from(v.ldg_x).to_string()),
        (
            "SPMM_LAYOUT",
            match v.kernel_layout(layout) {
                DenseLayout::RowMajor => "0",
                DenseLayout::ColMajor => "1",
            }
            .to_string(),
        ),
    ] {
        let _ = writeln!(s, "#define {k} {val}");
    }
}

/// Generates the SpMM kernel of `v` for `value` and `layout`; `width` is
/// the compile-time width of the tuned entry (`None`: only the generic one),
/// `epilogues` the fused entries to add. An error (never a panic) for a
/// variant invalid for the layout or a width of 0 or above `i32::MAX`.
pub fn generate_spmm(
    v: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    width: Option<usize>,
    epilogues: &[SpmmEpilogue],
) -> Result<SpmmSource, CodegenError> {
    let v = v.canonical();
    let invalid = |reason: String| CodegenError::InvalidVariant { id: v.id(), reason };
    v.validate_for(layout).map_err(|e| invalid(e.to_string()))?;
    if let Some(n) = width
        && (n == 0 || n >= i32::MAX as usize)
    {
        return Err(invalid(format!("width {n} is not in 1..i32::MAX")));
    }
    let mut eps: Vec<SpmmEpilogue> = epilogues.to_vec();
    eps.sort();
    eps.dedup();
    let main_eps: &[SpmmEpilogue] = if v.trans { &[] } else { &eps };
    let mut entries = Vec::new();
    for w in width.into_iter().map(Some).chain([None]) {
        for e in [None].into_iter().chain(main_eps.iter().copied().map(Some)) {
            entries.push(SpmmEntry {
                width: w,
                epilogue: e,
                name: v.entry(value, layout, w, e),
            });
        }
    }
    let mut s = String::with_capacity(SPMM_COMMON.len() + 8192);
    push_header(&mut s, &v, value, layout, width);
    s.push('\n');
    s.push_str(SPMM_COMMON);
    for (i, e) in entries.iter().enumerate() {
        let _ = writeln!(s);
        let _ = writeln!(s, "// ---- entry {} ----", e.name);
        if i > 0 {
            for m in ["SPMM_N", "SPMM_EPILOGUE", "ENTRY"] {
                let _ = writeln!(s, "#undef {m}");
            }
        }
        let _ = writeln!(s, "#define SPMM_N {}", e.width.unwrap_or(0));
        let _ = writeln!(
            s,
            "#define SPMM_EPILOGUE {}",
            e.epilogue.map_or(0, |e| e.code())
        );
        let _ = writeln!(s, "#define ENTRY {}", e.name);
        push_body(&mut s, fragment(v.strategy));
    }
    let transposes = if v.trans {
        push_transposes(&mut s, &v, value, layout, &eps)
    } else {
        Vec::new()
    };
    Ok(SpmmSource {
        variant: v,
        source: s,
        entries,
        transposes,
    })
}

/// Appends the transposed path's entries (`spmm_transpose.cu`): `_tin`,
/// then `_tout` plain and with each epilogue; their names.
fn push_transposes(
    s: &mut String,
    v: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    eps: &[SpmmEpilogue],
) -> Vec<String> {
    let mut units = vec![(1, None, v.tin_entry(value, layout))];
    for e in [None].into_iter().chain(eps.iter().copied().map(Some)) {
        units.push((2, e, v.tout_entry(value, layout, e)));
    }
    for (dir, e, name) in &units {
        let _ = writeln!(s);
        let _ = writeln!(s, "// ---- entry {name} ----");
        for m in ["SPMM_N", "SPMM_EPILOGUE", "ENTRY", "SPMM_TRANSPOSE"] {
            let _ = writeln!(s, "#undef {m}");
        }
        let _ = writeln!(s, "#define SPMM_N 0");
        let _ = writeln!(s, "#define SPMM_EPILOGUE {}", e.map_or(0, |e| e.code()));
        let _ = writeln!(s, "#define SPMM_TRANSPOSE {dir}");
        let _ = writeln!(s, "#define ENTRY {name}");
        push_body(s, SPMM_TRANSPOSE);
    }
    units.into_iter().map(|(_, _, name)| name).collect()
}

#[cfg(test)]
mod tests;
