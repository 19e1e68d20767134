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
        objective: None,
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
        objective: None,
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
        objective: None,
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
/// `SPARSERL_TEST_CHILD_BUILD` = `crate|out|cache` is set (an empty `cache`:
/// the cache directory the environment gives). Ignored in a plain run (no
/// test on its own); the tests spawn it with `--ignored`.
#[test]
#[ignore = "helper process of the process tests of this file"]
fn child_build() {
    let spec = std::env::var("SPARSERL_TEST_CHILD_BUILD")
        .expect("child_build runs only as a child of this file's process tests");
    let parts: Vec<&str> = spec.split('|').collect();
    let mut b = builder(
        Path::new(parts[0]),
        Path::new(parts[1]),
        Path::new(parts[2]),
    );
    if parts[2].is_empty() {
        b = Builder::new(parts[0], parts[1]);
        b.output(Output::Quiet).mode(Mode::Policy);
    }
    b.try_run().unwrap();
    println!("child-build: done");
}

fn child_command(dir: &Path, out: &Path, cache: &str) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child_build", "--ignored", "--nocapture"])
        .env(
            "SPARSERL_TEST_CHILD_BUILD",
            format!("{}|{}|{cache}", dir.display(), out.display()),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

fn spawn_build(dir: &Path, out: &Path, cache: &Path) -> std::process::Child {
    child_command(dir, out, &cache.display().to_string())
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
    for i in 0..3 {
        // Each child really built (a child that ran no test would not).
        let module = tmp.path().join(format!("out{i}/sparserl_kernels.rs"));
        assert!(module.exists(), "{}", module.display());
    }
    let r = builder(&dir, &tmp.path().join("out-final"), &cache)
        .try_run()
        .unwrap();
    assert!(r.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
}

/// Cache entries (not temporary files) in `cache`.
fn entries(cache: &Path) -> usize {
    fs::read_dir(cache).map_or(0, |rd| {
        rd.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count()
    })
}

#[test]
fn a_build_killed_part_way_leaves_a_usable_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    throwaway_crate(&dir);
    // Killed as soon as its first kernel is cached: some kernels cached,
    // the others not (a build that finished first is tried again).
    let mut partial = None;
    for attempt in 0..8 {
        let cache = tmp.path().join(format!("cache{attempt}"));
        let mut child = spawn_build(&dir, &tmp.path().join(format!("killed{attempt}")), &cache);
        while entries(&cache) == 0 && child.try_wait().unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let _ = child.kill();
        let _ = child.wait();
        let left = entries(&cache);
        eprintln!("attempt {attempt}: {left} of 3 kernels cached when killed");
        if (1..3).contains(&left) {
            partial = Some(cache);
            break;
        }
    }
    let cache = partial.expect("no kill landed between two kernels: no partial state to test");
    // The next build reuses what was cached and generates the rest...
    let again = builder(&dir, &tmp.path().join("again"), &cache)
        .try_run()
        .unwrap();
    let status: Vec<CacheStatus> = again.kernels.iter().map(|k| k.cache).collect();
    assert!(status.contains(&CacheStatus::Hit), "{status:?}");
    assert!(status.contains(&CacheStatus::Miss), "{status:?}");
    // ...and the one after finds everything in the cache.
    let third = builder(&dir, &tmp.path().join("third"), &cache)
        .try_run()
        .unwrap();
    assert!(third.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
    assert_eq!(entries(&cache), 3);
}

#[test]
fn a_relative_target_dir_keeps_the_cache_out_of_the_source_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    throwaway_crate(&dir);
    // Cargo started in `tmp` with CARGO_TARGET_DIR=tgt; the build script
    // runs in the crate's directory.
    let out = tmp.path().join("tgt/debug/build/throwaway-0123/out");
    let status = child_command(&dir, &out, "")
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", "tgt")
        .env_remove("SPARSERL_CACHE_DIR")
        .env_remove("SPARSERL_CACHE")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(out.join("sparserl_kernels.rs").exists());
    assert_eq!(entries(&tmp.path().join("tgt/sparserl-cache")), 3);
    assert!(!dir.join("tgt").exists(), "a cache in the source tree");
}

#[test]
fn a_change_to_the_rust_composition_rebuilds_cached_kernels() {
    use sparserl_build::codegen::{fingerprint_of, generator_fingerprint, generator_inputs};
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out, cache) = (
        tmp.path().join("crate"),
        tmp.path().join("out"),
        tmp.path().join("cache"),
    );
    throwaway_crate(&dir);
    let first = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(first.kernels.iter().all(|k| k.cache == CacheStatus::Miss));
    let hit = builder(&dir, &out, &cache).try_run().unwrap();
    assert!(hit.kernels.iter().all(|k| k.cache == CacheStatus::Hit));
    // The generator as it would be after an edit of codegen.rs's `compose`.
    let mut inputs: Vec<(String, &str)> = generator_inputs();
    let i = inputs
        .iter()
        .position(|(n, _)| n == "sparserl-build/src/codegen.rs")
        .expect("codegen.rs is a generator input");
    let planted = inputs[i]
        .1
        .replacen("fn compose(", "fn compose_planted() {}\nfn compose(", 1);
    inputs[i].1 = &planted;
    let changed = fingerprint_of(&inputs);
    assert_ne!(changed, generator_fingerprint());
    let rebuilt = builder(&dir, &out, &cache)
        .generator(changed.clone())
        .try_run()
        .unwrap();
    assert!(rebuilt.kernels.iter().all(|k| k.cache == CacheStatus::Miss));
    // A lock entry measured with the old generator is stale under the new one.
    let desc = sparserl_build::read_descriptor(&dir.join("Cargo.toml")).unwrap();
    let mut lock = LockFile::default();
    lock.upsert(LockEntry {
        name: "grid".into(),
        value: sparserl_rt::ValueType::F32,
        descriptor: sparserl_build::builder::descriptor_fingerprint(&desc, 0).unwrap(),
        generator: generator_fingerprint(),
        gpu: "test".into(),
        gbs: 1000.0,
        pct_copy: 25.0,
        candidates: 10,
        variant: sparserl_rt::Variant::of(sparserl_rt::Strategy::GroupPerRow),
        objective: None,
    });
    lock.write(&dir).unwrap();
    let provenance = |b: &mut Builder| {
        b.mode(Mode::Off).try_run().unwrap().kernels[0]
            .entry
            .provenance
    };
    let mut same = builder(&dir, &out, &cache);
    assert_eq!(provenance(&mut same), sparserl_rt::Provenance::LockFile);
    let mut edited = builder(&dir, &out, &cache);
    edited.generator(changed);
    assert_eq!(provenance(&mut edited), sparserl_rt::Provenance::Fallback);
}

#[test]
fn a_hand_edited_lock_entry_is_refused_with_the_file_and_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    throwaway_crate(&dir);
    let desc = sparserl_build::read_descriptor(&dir.join("Cargo.toml")).unwrap();
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
        variant: sparserl_rt::Variant::of(sparserl_rt::Strategy::GroupPerRow),
        objective: None,
    });
    let path = lock.write(&dir).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("block = 256"), "{text}");
    fs::write(&path, text.replace("block = 256", "block = 0")).unwrap();
    let err = builder(&dir, &tmp.path().join("out"), &tmp.path().join("c"))
        .mode(Mode::Off)
        .try_run()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SparseRL.lock") && err.contains("entry `grid`"),
        "{err}"
    );
    assert!(err.contains("block 0") && err.contains("expected"), "{err}");
    assert!(!err.contains("internal error"), "{err}");
}
