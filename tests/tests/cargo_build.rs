//! A real `cargo build` of a throwaway crate that uses sparserl-build from its
//! build script and includes the generated module: the user's path, end to end.

use std::fs;
use std::path::Path;
use std::process::Command;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn write_crate(dir: &Path, kernels: &str) {
    fs::create_dir_all(dir.join("src")).unwrap();
    let ws = workspace().display().to_string().replace('\\', "/");
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "throwaway-user"
version = "0.1.0"
edition = "2024"

[workspace]

[dependencies]
sparserl-rt = {{ path = "{ws}/sparserl-rt" }}

[build-dependencies]
sparserl-build = {{ path = "{ws}/sparserl-build" }}

[package.metadata.sparserl]
{kernels}
"#
        ),
    )
    .unwrap();
    fs::write(
        dir.join("build.rs"),
        "fn main() {\n    sparserl_build::build();\n}\n",
    )
    .unwrap();
    fs::write(
        dir.join("src/main.rs"),
        r#"mod kernels {
    include!(concat!(env!("OUT_DIR"), "/sparserl_kernels.rs"));
}
use sparserl_rt::SpmvKernel;
fn main() {
    for k in kernels::ALL_KERNELS {
        println!("{} {} {}", k.name, k.value, k.variant.id());
    }
    println!("type {}", kernels::Ring.spec().name);
}
"#,
    )
    .unwrap();
    // Files written in the same clock tick as the build starts look modified
    // during the build to cargo's fingerprints: date them a minute back.
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for f in ["Cargo.toml", "build.rs", "src/main.rs"] {
        let file = fs::File::options().append(true).open(dir.join(f)).unwrap();
        file.set_modified(past).unwrap();
    }
}

/// The tests share one throwaway target dir and package name: run them one
/// at a time, so that one test's build cannot land between another's first
/// and second build and make the second one not fresh.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .args(args)
        .current_dir(dir)
        // A separate target dir: the outer test run holds the workspace's.
        .env("CARGO_TARGET_DIR", workspace().join("target/throwaway"))
        .env("SPARSERL_MODE", "policy")
        // Every run builds the kernels afresh (a cache hit from an earlier
        // run would skip the policy and its report lines).
        .env("SPARSERL_CACHE", "off")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

#[test]
fn a_user_crate_builds_and_runs_with_generated_kernels() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("user");
    write_crate(
        &dir,
        r#"[[package.metadata.sparserl.kernel]]
name = "ring"
op = "spmv"
value = "f64"
pattern = { kind = "banded", rows = 2000, bandwidth = 2, avg-degree = 3 }

# Declared, never used by the crate: the generated code must not warn.
[[package.metadata.sparserl.kernel]]
name = "spare"
op = "spmv"
value = "f32"
pattern = { kind = "uniform", rows = 500, cols = 500, avg-degree = 4 }
epilogues = ["dot"]
reorder = "degree"
"#,
    );
    let out = cargo(&dir, &["run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "build failed:\n{stderr}");
    // No GPU is used (policy mode) and there is no lock file: cargo shows at
    // most 2 lines of the build (the summary, and NVRTC's warning where it
    // is missing), and the summary says what was chosen and from where.
    let lines = sparserl_lines(&stderr);
    assert!(lines.len() <= 2, "{} lines:\n{stderr}", lines.len());
    let summary = lines
        .iter()
        .find(|l| l.contains("2 kernels: 2 by the policy"))
        .unwrap_or_else(|| panic!("no summary line:\n{stderr}"));
    // The report in OUT_DIR names the learned policy's pick of every kernel
    // and its predicted GB/s.
    let report = summary
        .split("report: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no report path: {summary}"));
    let report = fs::read_to_string(report.trim()).unwrap_or_else(|e| panic!("{report}: {e}"));
    assert!(
        report.contains("kernel `ring` (f64)")
            && report.contains("kernel `spare` (f32)")
            && report.contains("policy pick (learned), predicted")
            && report.contains("policy: learned policy"),
        "{report}"
    );
    assert!(stdout.contains("ring f64 "), "{stdout}");
    assert!(stdout.contains("type ring"), "{stdout}");
    assert!(stdout.contains("spare f32 "), "{stdout}");
    // The requested numbering is part of the shipped variant.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("spare f32 ") && l.ends_with("+degree")),
        "{stdout}"
    );
    // The unused kernel raises no dead-code warning in the user's build.
    assert!(
        !stderr.contains("never constructed") && !stderr.contains("never used"),
        "{stderr}"
    );

    // What the user's binary links: sparserl-rt with its default features,
    // at most 15 crates, none of the build-side ones (Matrix Market reader,
    // generators, measurement: gzip, random numbers, sprs).
    let tree = cargo(
        &dir,
        &[
            "tree",
            "-p",
            "sparserl-rt",
            "-e",
            "normal",
            "--prefix",
            "none",
        ],
    );
    let tree = String::from_utf8_lossy(&tree.stdout).to_string();
    let crates: std::collections::BTreeSet<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.contains("sparserl-rt") && crates.contains("cudarc"),
        "{tree}"
    );
    assert!(crates.len() <= 15, "{} crates: {crates:?}", crates.len());
    for heavy in ["flate2", "rand", "rand_chacha", "sprs", "ndarray"] {
        assert!(
            !crates.contains(heavy),
            "{heavy} in the user's binary: {crates:?}"
        );
    }

    // Second build with nothing changed: cargo does not rerun the build script,
    // and what it replays of the first run is the same at most 2 lines.
    let again = cargo(&dir, &["build", "-v"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("Fresh throwaway-user"), "{stderr}");
    assert!(sparserl_lines(&stderr).len() <= 2, "{stderr}");
}

/// The lines of cargo's output that come from the build script: its
/// `cargo:warning`s, which cargo prints as `warning: throwaway-user@...`.
fn sparserl_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("sparserl:") || l.starts_with("warning: throwaway-user"))
        .collect()
}

#[test]
fn a_bad_descriptor_fails_the_build_with_the_key_path_and_no_panic() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("user");
    write_crate(
        &dir,
        r#"[[package.metadata.sparserl.kernel]]
name = "ring"
op = "spmv"
value = "f16"
pattern = { kind = "banded", rows = 2000, bandwidth = 2, avg-degree = 3 }
"#,
    );
    let out = cargo(&dir, &["build", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("package.metadata.sparserl.kernel[0].value"),
        "{stderr}"
    );
    assert!(stderr.contains("\"f32\""), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
