//! The build pipeline of `op = "spmm"` kernels on a throwaway crate: the
//! policy path without a GPU, the persistent cache, lock entries, bad input.

use sparserl_build::lock_spmm::{SpmmLockEntry, SpmmLockWidth};
use sparserl_build::{BuildError, Builder, CacheStatus, LockFile, Mode, Output};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmEpilogue, SpmmVariant, spmm_space};
use std::fs;
use std::path::Path;

const SPMM: &str = r#"[[package.metadata.sparserl.kernel]]
name = "gcn"
op = "spmm"
value = "f32"
columns = [64, 32]
epilogues = ["bias-relu"]
pattern = { kind = "power-law", rows = 3000, avg-degree = 6, exponent = 2.1 }
"#;

fn write_crate(dir: &Path, spmm: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"throwaway\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [[package.metadata.sparserl.kernel]]\nname = \"grid\"\nop = \"spmv\"\nvalue = \"f32\"\n\
             pattern = {{ kind = \"stencil\", grid = [32, 32], points = 5 }}\n\n{spmm}"
        ),
    )
    .unwrap();
}

fn builder(dir: &Path, out: &Path, cache: &Path) -> Builder {
    let mut b = Builder::new(dir, out);
    b.output(Output::Quiet)
        .mode(Mode::Policy)
        .cache_dir(Some(cache.to_path_buf()));
    b
}

#[test]
fn an_spmm_kernel_builds_without_a_gpu_and_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("c"),
        tmp.path().join("o"),
        tmp.path().join("k"),
    );
    write_crate(&dir, SPMM);
    let first = builder(&dir, &out, &cache).try_run().unwrap();
    assert_eq!(first.kernels.len(), 1);
    assert_eq!(first.spmm_kernels.len(), 1);
    let k = &first.spmm_kernels[0];
    assert_eq!(k.cache, CacheStatus::Miss);
    let e = &k.entry;
    assert_eq!(e.provenance, sparserl_rt::Provenance::Policy);
    assert_eq!(e.layout, DenseLayout::RowMajor);
    assert_eq!(e.epilogues, vec![SpmmEpilogue::BiasRelu]);
    // One module per declared width, ascending, then the generic fallback.
    let widths: Vec<Option<usize>> = e.widths.iter().map(|m| m.width).collect();
    assert_eq!(widths, [Some(32), Some(64)]);
    assert_eq!(e.fallback.width, None);
    assert_eq!(e.fallback.variant, SpmmVariant::FALLBACK);
    assert_eq!(k.source_paths.len(), 3);
    for (m, path) in e.widths.iter().chain([&e.fallback]).zip(&k.source_paths) {
        let src = fs::read_to_string(path).unwrap();
        let layout = DenseLayout::RowMajor;
        for width in [m.width, None] {
            for ep in [None, Some(SpmmEpilogue::BiasRelu)] {
                let entry = m
                    .variant
                    .entry(sparserl_rt::ValueType::F32, layout, width, ep);
                assert!(src.contains(&entry), "{} lacks {entry}", path.display());
            }
        }
        for img in &m.images {
            let ptx = path.with_file_name(format!("{}.{}.ptx", m.stem("gcn"), img.arch));
            let text = fs::read_to_string(&ptx).unwrap();
            assert!(
                text.contains(&format!(".target {}", img.arch)),
                "{}",
                ptx.display()
            );
        }
        // A tuned width's variant is of its space; f32 row-major is covered
        // by the measured records, whose pick predicts no bandwidth.
        if let Some(w) = m.width {
            assert!(spmm_space(w, layout).contains(&m.variant), "{}", m.variant);
            assert!(m.predicted.is_none());
        }
    }
    assert!(
        e.note.contains("2 of 2 widths from the measured records"),
        "{}",
        e.note
    );
    let module = fs::read_to_string(&first.module).unwrap();
    for s in [
        "pub struct Grid;",
        "pub struct Gcn;",
        "unsafe impl ::sparserl_rt::spmm::SpmmKernel for Gcn",
        "pub static GCN_SPEC: ::sparserl_rt::spmm::SpmmSpec",
        "ALL_SPMM_KERNELS",
        "width: Some(32)",
        "width: Some(64)",
        "::sparserl_rt::spmm::SpmmEpilogue::BiasRelu",
    ] {
        assert!(module.contains(s), "module lacks {s}");
    }

    // Unchanged: a cache hit with the same bytes, also into an empty OUT_DIR.
    fs::remove_dir_all(&out).unwrap();
    let second = builder(&dir, &out, &cache).try_run().unwrap();
    assert_eq!(second.spmm_kernels[0].cache, CacheStatus::Hit);
    assert_eq!(second.spmm_kernels[0].key, k.key);
    assert_eq!(fs::read_to_string(&second.module).unwrap(), module);
    for p in &k.source_paths {
        assert!(p.exists(), "{} not refilled", p.display());
    }

    // Another width or layout is another kernel: a miss, another key.
    for other in [
        SPMM.replace("[64, 32]", "[64]"),
        SPMM.replace("columns", "dense = \"col-major\"\ncolumns"),
    ] {
        write_crate(&dir, &other);
        let r = builder(&dir, &out, &cache).try_run().unwrap();
        assert_eq!(r.spmm_kernels[0].cache, CacheStatus::Miss);
        assert_ne!(r.spmm_kernels[0].key, k.key);
        assert_eq!(
            r.kernels[0].cache,
            CacheStatus::Hit,
            "the spmv kernel is unaffected"
        );
    }
}

#[test]
fn a_fresh_lock_entry_is_used_and_a_bad_one_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("c"),
        tmp.path().join("o"),
        tmp.path().join("k"),
    );
    write_crate(&dir, SPMM);
    let desc = sparserl_build::builder::descriptor_of(&dir).unwrap();
    let fp = sparserl_build::builder::descriptor_fingerprint(&desc, 1).unwrap();
    let locked = |n: usize, id: &str| SpmmLockWidth {
        n,
        variant: id.to_string(),
        gbs: 900.0,
        pct_copy: 21.0,
    };
    let row_warp = "row-warp.b256.g32.v1.c1.u1.ldg";
    let nnz = SpmmVariant::FALLBACK.id();
    let mut lock = LockFile::default();
    lock.upsert_spmm(SpmmLockEntry {
        name: "gcn".into(),
        value: sparserl_rt::ValueType::F32,
        dense: DenseLayout::RowMajor,
        descriptor: fp,
        generator: sparserl_build::codegen::spmm::spmm_generator_fingerprint(),
        gpu: "test GPU".into(),
        candidates: 12,
        width: vec![locked(32, row_warp), locked(64, &nnz)],
    });
    lock.write(&dir).unwrap();
    let r = builder(&dir, &out, &cache).try_run().unwrap();
    let e = &r.spmm_kernels[0].entry;
    assert_eq!(e.provenance, sparserl_rt::Provenance::LockFile);
    assert_eq!(e.widths[0].variant.id(), row_warp);
    assert_eq!(e.widths[1].variant.id(), nnz);
    assert_eq!(e.widths[1].measured_gbs, Some(900.0));
    assert_eq!(e.tuned_on.as_deref(), Some("test GPU"));

    // An entry tagged with another generator (here the SpMV one, which SpMM
    // kernel changes leave alone) is stale: the prior decides.
    let text = fs::read_to_string(dir.join(sparserl_build::LOCK_FILE)).unwrap();
    let spmm_fp = sparserl_build::codegen::spmm::spmm_generator_fingerprint();
    let spmv_fp = sparserl_build::codegen::generator_fingerprint();
    fs::write(
        dir.join(sparserl_build::LOCK_FILE),
        text.replace(&spmm_fp, &spmv_fp),
    )
    .unwrap();
    let r = builder(&dir, &out, &cache).try_run().unwrap();
    assert_eq!(
        r.spmm_kernels[0].entry.provenance,
        sparserl_rt::Provenance::Policy
    );
    lock.write(&dir).unwrap();

    // Declared widths no longer match the entry: stale, the prior decides.
    write_crate(&dir, &SPMM.replace("[64, 32]", "[32, 64, 128]"));
    let r = builder(&dir, &out, &cache).try_run().unwrap();
    assert_eq!(
        r.spmm_kernels[0].entry.provenance,
        sparserl_rt::Provenance::Policy
    );

    // A variant id that does not parse is refused when the lock is read.
    let text = fs::read_to_string(dir.join(sparserl_build::LOCK_FILE)).unwrap();
    fs::write(
        dir.join(sparserl_build::LOCK_FILE),
        text.replace(row_warp, "row-warp.b256.g3.v1.c1.u1.ldg"),
    )
    .unwrap();
    let err = builder(&dir, &out, &cache).try_run().unwrap_err();
    assert!(matches!(err, BuildError::Lock(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("invalid [[spmm]] entry `gcn`") && msg.contains("n = 32"),
        "{msg}"
    );
}

#[test]
fn a_bad_spmm_descriptor_fails_with_the_key_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("c"),
        tmp.path().join("o"),
        tmp.path().join("k"),
    );
    for (body, key, wanted) in [
        (
            SPMM.replace("[64, 32]", "[64, 0]"),
            "kernel[1].columns[1]",
            "found 0",
        ),
        (
            SPMM.replace("columns = [64, 32]\n", ""),
            "kernel[1].columns",
            "missing required key",
        ),
        (
            SPMM.replace("bias-relu", "dot"),
            "kernel[1].epilogues[0]",
            "found \"dot\"",
        ),
        (
            SPMM.replace("columns", "dense = \"csr\"\ncolumns"),
            "kernel[1].dense",
            "\"row-major\", \"col-major\"",
        ),
    ] {
        write_crate(&dir, &body);
        let err = builder(&dir, &out, &cache).try_run().unwrap_err();
        let BuildError::Descriptor(d) = &err else {
            panic!("not a descriptor error: {err}");
        };
        assert_eq!(d.key_path(), format!("package.metadata.sparserl.{key}"));
        let msg = err.to_string();
        assert!(msg.contains("Cargo.toml") && msg.contains(wanted), "{msg}");
    }
}
