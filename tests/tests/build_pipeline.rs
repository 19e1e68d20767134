//! The build pipeline on a throwaway crate: generation, persistent cache,
//! OUT_DIR refill, corruption repair, lock files, and bad input.

use sparserl_build::{Builder, CacheStatus, LockEntry, LockFile, Mode, Output};
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/matrices")
}

/// Whether NVRTC must be found (CI provisions it and sets this).
fn require_cuda() -> bool {
    std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

fn throwaway_crate(dir: &Path) {
    fs::create_dir_all(dir.join("data")).unwrap();
    fs::copy(fixtures().join("lp_e226.mtx"), dir.join("data/lp_e226.mtx")).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        r#"[package]
name = "throwaway"
version = "0.1.0"
edition = "2024"

[package.metadata.sparserl]
budget-seconds = 5

[[package.metadata.sparserl.kernel]]
name = "grid"
op = "spmv"
value = "f32"
pattern = { kind = "stencil", grid = [64, 64], points = 5 }

[[package.metadata.sparserl.kernel]]
name = "lp"
op = "spmv"
value = "f64"
pattern = { kind = "matrix-market", path = "data/lp_e226.mtx" }

[[package.metadata.sparserl.kernel]]
name = "graph"
op = "spmv"
value = "f32"
pattern = { kind = "power-law", rows = 5000, avg-degree = 6, exponent = 2.0 }
"#,
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
fn generates_caches_and_refills_out_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("crate"),
        tmp.path().join("out"),
        tmp.path().join("cache"),
    );
    throwaway_crate(&dir);

    let first = builder(&dir, &out, &cache).try_run().unwrap();
    assert_eq!(first.kernels.len(), 3);
    let module = fs::read_to_string(&first.module).unwrap();
    for ty in [
        "pub struct Grid;",
        "pub struct Lp;",
        "pub struct Graph;",
        "ALL_KERNELS",
    ] {
        assert!(module.contains(ty), "module lacks {ty}");
    }
    for k in &first.kernels {
        assert_eq!(k.cache, CacheStatus::Miss);
        assert!(k.source_path.exists());
        assert!(
            fs::read_to_string(&k.source_path)
                .unwrap()
                .contains(&k.entry.entry)
        );
        if require_cuda() {
            let ptx = k
                .ptx_path
                .as_ref()
                .expect("PTX must be generated when NVRTC is present");
            assert!(fs::read_to_string(ptx).unwrap().contains(&k.entry.entry));
            // No GPU and no `arch` in the descriptor: PTX for sm_80 and sm_90.
            let archs: Vec<&str> = k.entry.images.iter().map(|a| a.arch.as_str()).collect();
            assert_eq!(archs, ["sm_80", "sm_90"]);
            for arch in k.entry.images.iter().map(|a| &a.arch) {
                let p = k
                    .source_path
                    .with_file_name(format!("{}.{arch}.ptx", k.name));
                let text = fs::read_to_string(&p).unwrap();
                assert!(text.contains(&format!(".target {arch}")), "{}", p.display());
            }
        }
        assert_eq!(k.entry.provenance, sparserl_rt::Provenance::Policy);
    }

    // Nothing changed: every kernel is a cache hit, outputs identical.
    let second = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(second.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
    assert_eq!(fs::read_to_string(&second.module).unwrap(), module);

    // OUT_DIR deleted (e.g. `cargo clean -p`): refilled from the persistent
    // cache without generating or compiling again.
    fs::remove_dir_all(&out).unwrap();
    let third = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(third.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
    assert_eq!(fs::read_to_string(&third.module).unwrap(), module);
    for (a, b) in first.kernels.iter().zip(&third.kernels) {
        assert_eq!(
            fs::read(&a.source_path).unwrap(),
            fs::read(&b.source_path).unwrap()
        );
    }

    // A changed sample file changes the key of that kernel only.
    let mtx = dir.join("data/lp_e226.mtx");
    let mut text = fs::read_to_string(&mtx).unwrap();
    text.push_str("% trailing comment\n");
    fs::write(&mtx, text).unwrap();
    let fourth = builder(&dir, &out, &cache).try_run().unwrap();
    let status: Vec<_> = fourth
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.cache))
        .collect();
    assert_eq!(
        status,
        vec![
            ("grid", CacheStatus::Hit),
            ("lp", CacheStatus::Miss),
            ("graph", CacheStatus::Hit)
        ]
    );
}

#[test]
fn corrupted_cache_entries_are_regenerated() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("crate"),
        tmp.path().join("out"),
        tmp.path().join("cache"),
    );
    throwaway_crate(&dir);
    let first = builder(&dir, &out, &cache).try_run().unwrap();
    for k in &first.kernels {
        let p = cache.join(format!("{}.json", k.key));
        let bytes = fs::read(&p).unwrap();
        fs::write(&p, &bytes[..bytes.len() / 2]).unwrap(); // truncated
    }
    let second = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(second.kernels.iter().all(|k| k.cache == CacheStatus::Miss));
    let third = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(third.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
}

#[test]
fn concurrent_builds_share_a_cache_safely() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("crate"), tmp.path().join("cache"));
    throwaway_crate(&dir);
    std::thread::scope(|s| {
        for i in 0..3 {
            let (dir, cache) = (&dir, &cache);
            let out = tmp.path().join(format!("out{i}"));
            s.spawn(move || builder(dir, &out, cache).try_run().unwrap());
        }
    });
    let r = builder(&dir, &tmp.path().join("out-final"), &cache)
        .try_run()
        .unwrap();
    assert!(r.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
}

#[test]
fn fresh_lock_entries_win_and_stale_ones_are_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("crate"),
        tmp.path().join("out"),
        tmp.path().join("cache"),
    );
    throwaway_crate(&dir);
    let desc = sparserl_build::read_descriptor(&dir.join("Cargo.toml")).unwrap();
    let locked = sparserl_rt::Variant {
        lanes: 4,
        ..sparserl_rt::Variant::of(sparserl_rt::Strategy::GroupPerRow)
    };
    let mut lock = LockFile::default();
    lock.upsert(LockEntry {
        name: "grid".into(),
        value: sparserl_rt::ValueType::F32,
        descriptor: sparserl_build::builder::descriptor_fingerprint(&desc, 0).unwrap(),
        generator: sparserl_build::codegen::generator_fingerprint(),
        gpu: "test".into(),
        gbs: 1000.0,
        pct_copy: 25.0,
        candidates: 10,
        variant: locked,
    });
    lock.upsert(LockEntry {
        name: "lp".into(),
        value: sparserl_rt::ValueType::F64,
        descriptor: "stale".into(),
        generator: sparserl_build::codegen::generator_fingerprint(),
        gpu: "test".into(),
        gbs: 1000.0,
        pct_copy: 25.0,
        candidates: 10,
        variant: locked,
    });
    lock.write(&dir).unwrap();
    // Off mode: lock file or fallback, never the policy.
    let r = builder(&dir, &out, &cache)
        .mode(Mode::Off)
        .try_run()
        .unwrap();
    assert_eq!(r.kernels[0].entry.variant, locked);
    assert_eq!(
        r.kernels[0].entry.provenance,
        sparserl_rt::Provenance::LockFile
    );
    assert_eq!(
        r.kernels[1].entry.provenance,
        sparserl_rt::Provenance::Fallback
    );
    assert_eq!(r.kernels[1].entry.variant, sparserl_rt::Variant::FALLBACK);
    // Same bytes every time from the lock file.
    let again = builder(&dir, &tmp.path().join("out2"), &tmp.path().join("cache2"))
        .mode(Mode::Off)
        .try_run()
        .unwrap();
    assert_eq!(
        fs::read(&r.kernels[0].source_path).unwrap(),
        fs::read(&again.kernels[0].source_path).unwrap()
    );
    // A retune that keeps the variant but measured on another GPU: the
    // cached entry must not keep the old GPU and GB/s.
    lock.upsert(LockEntry {
        name: "grid".into(),
        value: sparserl_rt::ValueType::F32,
        descriptor: sparserl_build::builder::descriptor_fingerprint(&desc, 0).unwrap(),
        generator: sparserl_build::codegen::generator_fingerprint(),
        gpu: "other".into(),
        gbs: 2000.0,
        pct_copy: 50.0,
        candidates: 10,
        variant: locked,
    });
    lock.write(&dir).unwrap();
    let retuned = builder(&dir, &out, &cache)
        .mode(Mode::Off)
        .try_run()
        .unwrap();
    assert_eq!(retuned.kernels[0].entry.variant, locked);
    assert_eq!(retuned.kernels[0].entry.tuned_on.as_deref(), Some("other"));
    assert!(
        retuned.kernels[0].entry.note.contains("2000 GB/s on other"),
        "{}",
        retuned.kernels[0].entry.note
    );
}

#[test]
fn bad_descriptor_is_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    throwaway_crate(&dir);
    let manifest = dir.join("Cargo.toml");
    let text = fs::read_to_string(&manifest).unwrap().replace(
        "op = \"spmv\"\nvalue = \"f64\"",
        "op = \"spmvv\"\nvalue = \"f64\"",
    );
    fs::write(&manifest, text).unwrap();
    let err = builder(&dir, &tmp.path().join("out"), &tmp.path().join("c"))
        .try_run()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("package.metadata.sparserl.kernel[1].op"),
        "{err}"
    );
    assert!(err.contains("\"spmv\""), "{err}");
    assert!(err.contains("Cargo.toml"), "{err}");
}

/// Child side of the process tests below: runs one build when
/// `SPARSERL_TEST_CHILD_BUILD` = `crate|out|cache` is set.
#[test]
fn child_build() {
    let Some(spec) = std::env::var_os("SPARSERL_TEST_CHILD_BUILD") else {
        return; // only meaningful when spawned by the tests below
    };
    let spec = spec.to_string_lossy().to_string();
    let parts: Vec<&str> = spec.split('|').collect();
    builder(
        Path::new(parts[0]),
        Path::new(parts[1]),
        Path::new(parts[2]),
    )
    .try_run()
    .unwrap();
}

fn spawn_build(dir: &Path, out: &Path, cache: &Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_build", "--nocapture"])
        .env(
            "SPARSERL_TEST_CHILD_BUILD",
            format!("{}|{}|{}", dir.display(), out.display(), cache.display()),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn builds_in_separate_processes_share_a_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("crate"), tmp.path().join("cache"));
    throwaway_crate(&dir);
    let children: Vec<_> = (0..3)
        .map(|i| spawn_build(&dir, &tmp.path().join(format!("out{i}")), &cache))
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a concurrent build failed");
    }
    let r = builder(&dir, &tmp.path().join("out-final"), &cache)
        .try_run()
        .unwrap();
    assert!(r.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
}

#[test]
fn a_build_killed_part_way_leaves_a_usable_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    throwaway_crate(&dir);
    // Killed at several points of its work, each on a fresh cache.
    for (i, ms) in [20u64, 150, 400, 900].into_iter().enumerate() {
        let cache = tmp.path().join(format!("cache{i}"));
        let mut child = spawn_build(&dir, &tmp.path().join(format!("killed{i}")), &cache);
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        let left = walkdir_count(&cache);
        eprintln!("killed at {ms} ms: {left} files in the cache");
        // The next build succeeds (finishing or regenerating what is missing
        // or damaged), and the one after finds everything in the cache.
        let again = builder(&dir, &tmp.path().join(format!("again{i}")), &cache).try_run();
        assert!(again.is_ok(), "after a kill at {ms} ms: {:?}", again.err());
        let third = builder(&dir, &tmp.path().join(format!("third{i}")), &cache)
            .try_run()
            .unwrap();
        assert!(
            third.kernels.iter().all(|k| k.cache == CacheStatus::Hit),
            "after a kill at {ms} ms"
        );
    }
}

fn walkdir_count(dir: &Path) -> usize {
    fn walk(d: &Path, n: &mut usize) {
        if let Ok(rd) = fs::read_dir(d) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, n);
                } else {
                    *n += 1;
                }
            }
        }
    }
    let mut n = 0;
    walk(dir, &mut n);
    n
}
