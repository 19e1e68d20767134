//! CUDA source generation: one self-contained translation unit per
//! (variant, value type), composed from the fragments in `kernels/`.
//!
//! Every generated kernel has the same ABI (`T` is `float` or `double`):
//!
//! ```text
//! extern "C" __global__ void __launch_bounds__(BLOCK[, MIN_BLOCKS]) ENTRY(
//!     const int rows, const int cols, const int nnz,
//!     const int* __restrict__ indptr, const int* __restrict__ indices,
//!     const T* __restrict__ values, const T* __restrict__ x, T* __restrict__ y)
//! ```
//!
//! launched with [`Variant::grid`]`(rows, nnz)` blocks of [`Variant::block`]
//! threads (any grid is correct: the kernels use grid-stride loops). When
//! [`Variant::needs_zeroed_y`] holds, `y` must be zeroed before the launch.
//! Diagonal kernels read the diagonal layout through the same parameters,
//! narrow kernels take `indices` as `const short*` 16-bit offsets;
//! binned and tiled kernels take two more (`meta`, `scratch`; see
//! `sparserl_rt::launch`).
//!
//! The output is byte-for-byte deterministic for a given variant, value type
//! and [`generator_fingerprint`].

use sha2::{Digest, Sha256};
use sparserl_rt::{Epilogue, Strategy, ValueType, Variant};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Version of the generator (the prefix of [`generator_fingerprint`], which
/// also hashes every file generation reads, [`generator_inputs`]).
pub const GENERATOR_VERSION: &str = "sparserl-codegen-1";

const COMMON: &str = include_str!("../kernels/common.cuh");
const THREAD_PER_ROW: &str = include_str!("../kernels/thread_per_row.cu");
const GROUP_PER_ROW: &str = include_str!("../kernels/group_per_row.cu");
const BLOCK_PER_ROW: &str = include_str!("../kernels/block_per_row.cu");
const NNZ_SPLIT: &str = include_str!("../kernels/nnz_split.cu");
const DIAGONAL: &str = include_str!("../kernels/diagonal.cu");
const BINNED: &str = include_str!("../kernels/binned.cu");
const TILED: &str = include_str!("../kernels/tiled.cu");
const NARROW: &str = include_str!("../kernels/narrow.cu");
const SELL: &str = include_str!("../kernels/sell.cu");
const EPILOGUE: &str = include_str!("../kernels/epilogue.cuh");

pub mod spmm;

/// Every fragment, in a fixed order (name, text).
const FRAGMENTS: [(&str, &str); 11] = [
    ("common.cuh", COMMON),
    ("epilogue.cuh", EPILOGUE),
    ("thread_per_row.cu", THREAD_PER_ROW),
    ("group_per_row.cu", GROUP_PER_ROW),
    ("block_per_row.cu", BLOCK_PER_ROW),
    ("nnz_split.cu", NNZ_SPLIT),
    ("diagonal.cu", DIAGONAL),
    ("binned.cu", BINNED),
    ("tiled.cu", TILED),
    ("narrow.cu", NARROW),
    ("sell.cu", SELL),
];

/// Errors of [`generate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    /// The variant's parameters are out of range.
    #[error("invalid variant {id}: {reason}")]
    InvalidVariant {
        /// The variant's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

/// Generated CUDA C++ for one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// Name of the `extern "C"` entry point.
    pub entry: String,
    /// Complete, self-contained source (no `#include`s).
    pub source: String,
    /// The fused-epilogue entry points in the same source.
    pub fused: Vec<(Epilogue, String)>,
}

/// Everything generation reads, as `(path in the repository, text)`: every
/// fragment, this module's own Rust source (the composition: `compose`,
/// the defines of each section, entry names, canonical forms) and
/// sparserl-rt's modules that shape kernels or fill the arrays they read
/// ([`sparserl_rt::sources::GENERATION`]: variants, epilogues, CSR, the
/// layout builders, the renumbering).
pub fn generator_inputs() -> Vec<(String, &'static str)> {
    let mut inputs: Vec<(String, &'static str)> = FRAGMENTS
        .iter()
        .map(|(name, text)| (format!("sparserl-build/kernels/{name}"), *text))
        .collect();
    inputs.push((
        "sparserl-build/src/codegen.rs".to_string(),
        include_str!("codegen.rs"),
    ));
    inputs.extend(
        sparserl_rt::sources::GENERATION
            .iter()
            .map(|(name, text)| (format!("sparserl-rt/src/{name}"), *text)),
    );
    inputs
}

/// [`GENERATOR_VERSION`] plus a short hash of `inputs` (names and texts,
/// length-prefixed, in order).
pub fn fingerprint_of(inputs: &[(String, &str)]) -> String {
    let mut h = Sha256::new();
    h.update(GENERATOR_VERSION.as_bytes());
    for (name, text) in inputs {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    let digest = h.finalize();
    let mut hex = String::with_capacity(16);
    for b in &digest[..8] {
        let _ = write!(hex, "{b:02x}");
    }
    format!("{GENERATOR_VERSION}+{hex}")
}

/// [`fingerprint_of`] the [`generator_inputs`], e.g.
/// `sparserl-codegen-1+3f2a...`: changes whenever generated code, or the
/// layouts kernels read, can change (any edit of those files does).
pub fn generator_fingerprint() -> String {
    static FP: OnceLock<String> = OnceLock::new();
    FP.get_or_init(|| fingerprint_of(&generator_inputs()))
        .clone()
}

/// The entry-point name of `variant` for `value`: `sparserl_spmv_` + the
/// variant id with every non-alphanumeric character replaced by `_` + `_f32`/`_f64`.
/// A renumbered variant runs its kernel's entry ([`Variant::kernel`]).
pub fn entry_name(variant: &Variant, value: ValueType) -> String {
    let id: String = variant
        .kernel()
        .id()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("sparserl_spmv_{id}_{}", value.as_str())
}

/// The fragment of a strategy's kernel (narrow's includes group-per-row's).
fn strategy_fragment(s: Strategy) -> &'static str {
    match s {
        Strategy::ThreadPerRow => THREAD_PER_ROW,
        Strategy::GroupPerRow => GROUP_PER_ROW,
        Strategy::BlockPerRow => BLOCK_PER_ROW,
        Strategy::NnzSplit => NNZ_SPLIT,
        Strategy::Diagonal => DIAGONAL,
        Strategy::Binned => BINNED,
        Strategy::Tiled => TILED,
        Strategy::Narrow => NARROW,
        Strategy::Sell => SELL,
    }
}

/// Appends `text` to `s` with every `#include "name"` line of a fragment
/// replaced by that fragment, expanded the same way: `common.cuh` once per
/// translation unit (it is guarded anyway), any other fragment at each
/// include (`epilogue.cuh` is read once per entry point, with that entry's
/// `SPARSERL_EPILOGUE`). Other lines are copied as they are.
fn push_expanded(s: &mut String, text: &str, common_done: &mut bool) {
    for line in text.lines() {
        let included = line
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'))
            .and_then(|name| FRAGMENTS.iter().find(|(n, _)| *n == name));
        match included {
            Some(&(name, _)) if name == "common.cuh" && *common_done => {}
            Some(&(name, fragment)) => {
                *common_done |= name == "common.cuh";
                push_expanded(s, fragment, common_done);
            }
            None => {
                s.push_str(line);
                s.push('\n');
            }
        }
    }
}

/// Generates the CUDA C++ source of `variant` for `value`.
///
/// Fields the strategy ignores are canonicalised first, so equal kernels get
/// equal sources and entry names. Returns an error (never panics) when the
/// variant's parameters are invalid.
pub fn generate(variant: &Variant, value: ValueType) -> Result<KernelSource, CodegenError> {
    generate_with(variant, value, &[])
}

/// [`generate`] plus one fused entry per epilogue in `epilogues` (entry
/// name: the plain one + `_` + [`Epilogue::suffix`]), in the same source.
/// A strategy that cannot fuse ([`Strategy::fuses_epilogue`]) gets none:
/// its fused launches use [`generate_fallback`]'s entries.
pub fn generate_with(
    variant: &Variant,
    value: ValueType,
    epilogues: &[Epilogue],
) -> Result<KernelSource, CodegenError> {
    // The numbering is a property of the upload: same code, same source.
    let v = variant.kernel().canonical();
    let mut sections = vec![(v, None)];
    if v.strategy.fuses_epilogue() {
        sections.extend(epilogues.iter().map(|&e| (v, Some(e))));
    }
    compose(&sections, value)
}

/// The fallback module: the nnz-balanced [`Variant::FALLBACK`] plus a fused
/// entry of [`Variant::FUSED_FALLBACK`] per epilogue.
pub fn generate_fallback(
    value: ValueType,
    epilogues: &[Epilogue],
) -> Result<KernelSource, CodegenError> {
    let mut sections = vec![(Variant::FALLBACK.canonical(), None)];
    sections.extend(
        epilogues
            .iter()
            .map(|&e| (Variant::FUSED_FALLBACK.canonical(), Some(e))),
    );
    compose(&sections, value)
}

/// The `#define`s that may differ between the entries of one source.
fn section_defines(s: &mut String, v: &Variant, entry: &str, ep: Option<Epilogue>) {
    let _ = writeln!(s, "#define LANES {}", v.lanes);
    let _ = writeln!(s, "#define ITEMS {}", v.items);
    let _ = writeln!(s, "#define UNROLL {}", v.unroll);
    let _ = writeln!(s, "#define MIN_BLOCKS {}", v.min_blocks);
    let _ = writeln!(s, "#define ENTRY {entry}");
    let _ = writeln!(
        s,
        "#define SPARSERL_EPILOGUE {}",
        ep.map_or(0, |e| e.code())
    );
}

/// One translation unit holding an entry per section. The sections share
/// the defines that `common.cuh` reads when it is compiled (value type,
/// block size, x-load and y-store knobs); the others are redefined per entry.
fn compose(
    sections: &[(Variant, Option<Epilogue>)],
    value: ValueType,
) -> Result<KernelSource, CodegenError> {
    let (v, _) = sections[0];
    for (sv, _) in sections {
        sv.validate()
            .map_err(|reason| CodegenError::InvalidVariant {
                id: sv.id(),
                reason: reason.to_string(),
            })?;
        if (sv.block, sv.ldg_x, sv.stream_y) != (v.block, v.ldg_x, v.stream_y) {
            return Err(CodegenError::InvalidVariant {
                id: sv.id(),
                reason: format!("cannot share a module with {}", v.id()),
            });
        }
    }
    let entries: Vec<String> = sections
        .iter()
        .map(|(sv, ep)| {
            let base = entry_name(sv, value);
            match ep {
                None => base,
                Some(e) => format!("{base}_{}", e.suffix()),
            }
        })
        .collect();

    let mut s = String::with_capacity(COMMON.len() + EPILOGUE.len() + 4096);
    let mut common_done = false;
    // `write!` into a String cannot fail.
    let _ = writeln!(s, "// SparseRL generated SpMV kernel. Do not edit.");
    let _ = writeln!(s, "// variant: {}", v.id());
    let _ = writeln!(s, "// value type: {}", value.as_str());
    let _ = writeln!(s, "// generator: {}", generator_fingerprint());
    let _ = writeln!(s);
    let _ = writeln!(s, "#define T {}", value.cuda_name());
    let _ = writeln!(s, "#define BLOCK {}", v.block);
    let _ = writeln!(s, "#define SPARSERL_LDG_X {}", u8::from(v.ldg_x));
    let _ = writeln!(s, "#define SPARSERL_STREAM_Y {}", u8::from(v.stream_y));
    for (k, ((sv, ep), entry)) in sections.iter().zip(&entries).enumerate() {
        if k > 0 {
            let _ = writeln!(s);
            let _ = writeln!(s, "// ---- entry {entry}: variant {} ----", sv.id());
            for m in [
                "LANES",
                "ITEMS",
                "UNROLL",
                "MIN_BLOCKS",
                "ENTRY",
                "SPARSERL_EPILOGUE",
            ] {
                let _ = writeln!(s, "#undef {m}");
            }
        }
        section_defines(&mut s, sv, entry, *ep);
        s.push('\n');
        push_expanded(&mut s, strategy_fragment(sv.strategy), &mut common_done);
    }
    let fused = sections
        .iter()
        .zip(&entries)
        .filter_map(|((_, ep), e)| ep.map(|ep| (ep, e.clone())))
        .collect();
    Ok(KernelSource {
        entry: entries[0].clone(),
        source: s,
        fused,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparserl_rt::full_space as core_space;
    use std::collections::HashSet;

    #[test]
    fn the_fingerprint_reads_the_files_that_shape_kernels() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let inputs = generator_inputs();
        // Each input is the file it names, as it is now on disk.
        for (name, text) in &inputs {
            let on_disk = std::fs::read_to_string(repo.join(name)).unwrap();
            assert_eq!(*text, on_disk, "{name}");
        }
        let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
        for required in [
            "sparserl-build/src/codegen.rs",
            "sparserl-build/kernels/tiled.cu",
            "sparserl-rt/src/variant.rs",
            "sparserl-rt/src/tiled.rs",
            "sparserl-rt/src/sell.rs",
            "sparserl-rt/src/binned.rs",
            "sparserl-rt/src/device/parts.rs",
        ] {
            assert!(names.contains(&required), "{required} is not hashed");
        }
    }

    #[test]
    fn a_change_to_the_rust_composition_changes_the_fingerprint() {
        let inputs = generator_inputs();
        assert_eq!(fingerprint_of(&inputs), generator_fingerprint());
        // A planted edit of `compose` (one define more per section).
        let planted_text = include_str!("codegen.rs").replacen(
            "fn compose(",
            "fn compose_planted() {}\nfn compose(",
            1,
        );
        assert_ne!(planted_text, include_str!("codegen.rs"));
        let mut planted: Vec<(String, &str)> = inputs.clone();
        let i = planted
            .iter()
            .position(|(n, _)| n == "sparserl-build/src/codegen.rs")
            .unwrap();
        planted[i].1 = &planted_text;
        assert_ne!(fingerprint_of(&planted), generator_fingerprint());
        // So does any edit of any input.
        for k in 0..inputs.len() {
            let edited = format!("{} ", inputs[k].1);
            let mut changed: Vec<(String, &str)> = inputs.clone();
            changed[k].1 = &edited;
            assert_ne!(
                fingerprint_of(&changed),
                generator_fingerprint(),
                "{}",
                inputs[k].0
            );
        }
    }

    #[test]
    fn output_is_deterministic() {
        for v in core_space() {
            for t in ValueType::ALL {
                let a = generate(&v, t).unwrap();
                let b = generate(&v, t).unwrap();
                assert_eq!(a, b);
            }
        }
        assert_eq!(generator_fingerprint(), generator_fingerprint());
        assert!(generator_fingerprint().starts_with(GENERATOR_VERSION));
    }

    #[test]
    fn generated_sources_inline_every_include_once() {
        for v in sparserl_rt::full_space() {
            for t in ValueType::ALL {
                let k = generate_with(&v, t, &Epilogue::ALL).unwrap();
                assert!(!k.source.contains("#include"), "{}", v.id());
                assert_eq!(
                    k.source.matches("#define SPARSERL_COMMON_CUH").count(),
                    1,
                    "{}",
                    v.id()
                );
                let entries = 1 + k.fused.len();
                // Every entry but nnz-split's reads epilogue.cuh once.
                let epilogues = k
                    .source
                    .matches("#error \"SPARSERL_EPILOGUE must be 0..=3\"")
                    .count();
                let expected = if v.strategy == Strategy::NnzSplit {
                    0
                } else {
                    entries
                };
                assert_eq!(epilogues, expected, "{}", v.id());
            }
        }
    }

    #[test]
    fn a_renumbered_variant_compiles_to_its_kernel() {
        use sparserl_rt::reorder::Reorder;
        for v in [
            Variant::of(Strategy::Sell),
            Variant::of(Strategy::Tiled),
            Variant::FALLBACK,
        ] {
            for reorder in [Reorder::Rcm, Reorder::Degree] {
                let r = Variant { reorder, ..v };
                assert_ne!(r.id(), v.id());
                assert_eq!(
                    entry_name(&r, ValueType::F32),
                    entry_name(&v, ValueType::F32)
                );
                let (a, b) = (
                    generate_with(&r, ValueType::F64, &Epilogue::ALL).unwrap(),
                    generate_with(&v, ValueType::F64, &Epilogue::ALL).unwrap(),
                );
                assert_eq!(a.source, b.source);
                assert_eq!(a.entry, b.entry);
            }
        }
    }

    #[test]
    fn entry_names_are_unique_identifiers() {
        let mut names = HashSet::new();
        let mut sources = HashSet::new();
        for v in core_space() {
            for t in ValueType::ALL {
                let k = generate(&v, t).unwrap();
                assert!(
                    k.entry
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !k.entry.contains("__")
                        && !k.entry.starts_with(|c: char| c.is_ascii_digit()),
                    "{}",
                    k.entry
                );
                assert!(k.source.contains(&format!("#define ENTRY {}\n", k.entry)));
                assert!(names.insert(k.entry));
                assert!(sources.insert(k.source));
            }
        }
        assert_eq!(names.len(), core_space().len() * 2);
    }

    #[test]
    fn source_is_self_contained_and_names_the_variant() {
        let v = Variant::of(Strategy::GroupPerRow);
        let k = generate(&v, ValueType::F64).unwrap();
        assert!(!k.source.contains("#include"));
        assert!(k.source.contains(&format!("// variant: {}", v.id())));
        assert!(k.source.contains(&generator_fingerprint()));
        assert!(k.source.contains("#define T double\n"));
        assert!(k.source.contains("#define LANES 8\n"));
        assert!(k.source.contains("__shfl_down_sync"));
        assert_eq!(k.entry, "sparserl_spmv_group_per_row_b256_l8_u1_ldg_f64");
    }

    #[test]
    fn ignored_fields_do_not_change_the_kernel() {
        let v = Variant::of(Strategy::ThreadPerRow);
        let noisy = Variant {
            lanes: 7,
            items: 99,
            ..v
        };
        assert_eq!(
            generate(&v, ValueType::F32).unwrap(),
            generate(&noisy, ValueType::F32).unwrap()
        );
    }

    #[test]
    fn invalid_variants_are_errors() {
        let bad = [
            Variant {
                lanes: 3,
                ..Variant::of(Strategy::GroupPerRow)
            },
            Variant {
                block: 100,
                ..Variant::of(Strategy::ThreadPerRow)
            },
            Variant {
                block: 2048,
                ..Variant::of(Strategy::BlockPerRow)
            },
            Variant {
                items: 0,
                ..Variant::of(Strategy::NnzSplit)
            },
            Variant {
                unroll: 3,
                ..Variant::of(Strategy::ThreadPerRow)
            },
            Variant {
                min_blocks: 9,
                ..Variant::of(Strategy::ThreadPerRow)
            },
        ];
        for v in bad {
            let err = generate(&v, ValueType::F32).unwrap_err();
            assert!(matches!(err, CodegenError::InvalidVariant { .. }), "{err}");
        }
    }
}
