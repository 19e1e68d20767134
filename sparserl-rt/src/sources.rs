//! The source text of the modules whose code decides what a generated
//! kernel computes or reads: the variant vocabulary and its canonical
//! forms, the epilogues, and the builders of every array a kernel reads
//! (CSR, the optional layouts, the renumbering). sparserl-build hashes
//! them into its generator fingerprint, so an edit to any of them makes
//! cached kernels and lock entries stale instead of silently reusing
//! choices measured against other code (feature `tools`: what
//! sparserl-build links). Whole files, tests included: a
//! change that cannot matter costs a rebuild, never a stale kernel.

/// `(path under sparserl-rt/src, text)` of every module that shapes
/// generated kernels or the arrays they read.
#[doc(hidden)]
pub const GENERATION: &[(&str, &str)] = &[
    ("variant.rs", include_str!("variant.rs")),
    ("epilogue.rs", include_str!("epilogue.rs")),
    ("csr.rs", include_str!("csr.rs")),
    ("layouts.rs", include_str!("layouts.rs")),
    ("dia.rs", include_str!("dia.rs")),
    ("binned.rs", include_str!("binned.rs")),
    ("tiled.rs", include_str!("tiled.rs")),
    ("narrow.rs", include_str!("narrow.rs")),
    ("sell.rs", include_str!("sell.rs")),
    ("device/parts.rs", include_str!("device/parts.rs")),
    ("reorder.rs", include_str!("reorder.rs")),
];

/// `(path under sparserl-rt/src, text)` of the modules that shape generated
/// SpMM kernels (their variants, entry names, layouts and launch passes).
#[doc(hidden)]
pub const SPMM: &[(&str, &str)] = &[
    ("spmm/variant.rs", include_str!("spmm/variant.rs")),
    ("spmm/launch.rs", include_str!("spmm/launch.rs")),
    ("spmm/workspace.rs", include_str!("spmm/workspace.rs")),
    ("dense.rs", include_str!("dense.rs")),
];

/// `(path under sparserl-rt/src, text)` of the synthetic-matrix generators:
/// a descriptor's synthetic samples are a function of these and of the
/// pattern's parameters.
#[doc(hidden)]
pub const SYNTH: &[(&str, &str)] = &[
    ("synth.rs", include_str!("synth.rs")),
    ("synth/family.rs", include_str!("synth/family.rs")),
    ("synth/irregular.rs", include_str!("synth/irregular.rs")),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_the_file_it_names() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for (name, text) in GENERATION.iter().chain(SYNTH) {
            let on_disk = std::fs::read_to_string(root.join(name)).unwrap();
            assert_eq!(*text, on_disk, "{name}");
        }
    }
}
