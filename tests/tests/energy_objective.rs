//! The energy objective through the build pipeline on a throwaway crate,
//! without a GPU: a crate asking for energy builds (policy or lock file,
//! never a panic), its fingerprint differs from the time objective's, and
//! a lock entry's objective record reaches the cache entry.

use sparserl_build::objective::{FinalistRecord, ObjectiveRecord};
use sparserl_build::{Builder, LockEntry, LockFile, Mode, Objective, Output};
use std::fs;
use std::path::Path;

fn write_crate(dir: &Path, objective: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "throwaway"
version = "0.1.0"
edition = "2024"

[package.metadata.sparserl]
objective = {objective}

[[package.metadata.sparserl.kernel]]
name = "graph"
op = "spmv"
value = "f32"
pattern = {{ kind = "power-law", rows = 3000, avg-degree = 6, exponent = 2.0 }}
"#
        ),
    )
    .unwrap();
}

fn build(dir: &Path, out: &Path, mode: Mode) -> sparserl_build::BuildReport {
    Builder::new(dir, out)
        .output(Output::Quiet)
        .mode(mode)
        .cache_dir(None)
        .try_run()
        .expect("the build succeeds")
}

#[test]
fn an_energy_objective_builds_without_a_gpu_and_changes_the_fingerprint() {
    let tmp = tempfile::tempdir().unwrap();
    let (energy, time) = (tmp.path().join("energy"), tmp.path().join("time"));
    write_crate(&energy, "\"energy\"");
    write_crate(&time, "\"time\"");
    let fp = |dir: &Path| {
        let d = sparserl_build::read_descriptor(&dir.join("Cargo.toml")).unwrap();
        sparserl_build::builder::descriptor_fingerprint(&d, 0).unwrap()
    };
    assert_ne!(
        fp(&energy),
        fp(&time),
        "a lock tuned for time is stale for energy"
    );
    let d = sparserl_build::read_descriptor(&energy.join("Cargo.toml")).unwrap();
    assert_eq!(d.kernels[0].objective, Objective::Energy);
    let r = build(&energy, &tmp.path().join("out"), Mode::Policy);
    let e = &r.kernels[0].entry;
    assert_eq!(e.provenance, sparserl_rt::Provenance::Policy);
    assert!(e.objective.is_none(), "nothing was measured");
    // Measuring requested on a machine without a GPU: the build falls back
    // to the policy's pick, it does not fail.
    if !sparserl_rt::device::driver_present() {
        let r = build(&energy, &tmp.path().join("out-full"), Mode::Full);
        assert_eq!(r.mode, Mode::Policy);
        assert!(r.kernels[0].entry.objective.is_none());
    }
}

#[test]
fn a_lock_entry_carries_its_objective_record_into_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("crate");
    write_crate(&dir, "{ time = 0.5, energy = 0.5 }");
    let desc = sparserl_build::read_descriptor(&dir.join("Cargo.toml")).unwrap();
    let variant = sparserl_rt::Variant {
        lanes: 4,
        ..sparserl_rt::Variant::of(sparserl_rt::Strategy::GroupPerRow)
    };
    let record = ObjectiveRecord {
        objective: Objective::Weighted {
            time: 0.5,
            energy: 0.5,
        }
        .label(),
        time_pick: "other".into(),
        chosen: variant.id(),
        noise: Some(0.02),
        energy_saved_pct: Some(9.0),
        time_lost_pct: Some(2.0),
        extra_seconds: 1.8,
        fallback: None,
        finalists: vec![FinalistRecord {
            variant: variant.id(),
            search_gbs: 900.0,
            seconds_per_call: Some(2e-5),
            joules_per_call: Some(5e-3),
            spread: Some(0.01),
            avg_power_w: Some(250.0),
            pareto: true,
            chosen: true,
            error: None,
        }],
    };
    let mut lock = LockFile::default();
    lock.upsert(LockEntry {
        name: "graph".into(),
        value: sparserl_rt::ValueType::F32,
        descriptor: sparserl_build::builder::descriptor_fingerprint(&desc, 0).unwrap(),
        generator: sparserl_build::codegen::generator_fingerprint(),
        gpu: "test".into(),
        gbs: 900.0,
        pct_copy: 20.0,
        candidates: 12,
        variant,
        objective: Some(record.clone()),
    });
    lock.write(&dir).unwrap();
    let r = build(&dir, &tmp.path().join("out"), Mode::Off);
    let e = &r.kernels[0].entry;
    assert_eq!(e.provenance, sparserl_rt::Provenance::LockFile);
    assert_eq!(e.variant, variant);
    assert_eq!(e.objective.as_ref(), Some(&record));
}
