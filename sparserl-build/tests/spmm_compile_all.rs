//! Every code path of `spmm_space` (strategy, whole-warp or narrow group,
//! vector width, col-tile's tile, unroll) for both layouts, at the first of N in
//! {1, 3, 16, 64, 257} that has it, the value types alternating (the whole
//! space at every width for both types with `SPARSERL_SPMM_COMPILE_ALL=1`),
//! generated with its compile-time width, the generic width and the
//! `bias-relu` entries, compiles with NVRTC (a failure fails the test); each
//! unit (in the full run: the first of each path; all units with `SPARSERL_SPMM_PTXAS_ALL=1`) is
//! assembled by ptxas for sm_80 and sm_90 and every entry that spills is
//! listed and counted (a failure only with `SPARSERL_SPMM_NO_SPILLS=1`: some
//! row-warp / nnz-split / col-tile entries still spill a few bytes). Prints
//! progress, the spill count and the register maximum.
//!
//! Skips (with a note) when no CUDA toolkit is found, unless
//! `SPARSERL_REQUIRE_CUDA=1`.

use sparserl_build::codegen::spmm::{SpmmSource, generate_spmm};
use sparserl_rt::ValueType;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::nvrtc;
use sparserl_rt::spmm::{SpmmEpilogue, spmm_space};
use std::sync::Mutex;

const WIDTHS: [usize; 5] = [1, 3, 16, 64, 257];
const SASS: [&str; 2] = ["sm_80", "sm_90"];

/// Why a unit failed: it did not compile, or an entry spilled.
enum Failure {
    Compile(String),
    Spill(String),
}

/// Compiles one unit; the largest register count of its entries.
fn check(k: &SpmmSource, ptxas: bool) -> Result<u32, Failure> {
    let ptx = nvrtc::compile_ptx(&k.source, "compute_80", &[])
        .map_err(|e| Failure::Compile(e.to_string()))?;
    for name in k.entries.iter().map(|e| &e.name).chain(&k.transposes) {
        if !ptx.contains(&format!(".entry {name}(")) {
            return Err(Failure::Compile(format!("PTX has no entry {name}")));
        }
    }
    let mut regs = 0;
    if !ptxas {
        return Ok(0);
    }
    for arch in SASS {
        let r = nvrtc::ptxas_check(&ptx, arch).map_err(|e| Failure::Compile(e.to_string()))?;
        for e in &r.entries {
            if e.spill_stores + e.spill_loads != 0 || e.stack_frame != 0 {
                return Err(Failure::Spill(format!(
                    "ptxas {arch}: {} spills ({} B stores, {} B loads, {} B stack)",
                    e.name, e.spill_stores, e.spill_loads, e.stack_frame
                )));
            }
            regs = regs.max(e.registers);
        }
    }
    Ok(regs)
}

#[test]
fn every_spmm_variant_compiles_without_spills() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    let toolkit = match nvrtc::locate() {
        Ok(t) => t,
        Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
        Err(e) => {
            eprintln!("spmm_compile_all: SKIPPED (no CUDA toolkit)\n{e}");
            return;
        }
    };
    let ptxas = toolkit.ptxas.is_some();
    let ptxas_all = std::env::var("SPARSERL_SPMM_PTXAS_ALL").is_ok_and(|v| v == "1");
    let all = std::env::var("SPARSERL_SPMM_COMPILE_ALL").is_ok_and(|v| v == "1");
    let mut jobs = Vec::new();
    // By default each code path (strategy, whole-warp or narrow group,
    // vector width, col-tile's tile, unroll, layout) is compiled once, at the first
    // width of WIDTHS whose space has it (so the tail cases of N = 1 and 3
    // come first), the value types alternating between paths, and ptxas
    // assembles each of them; `SPARSERL_SPMM_COMPILE_ALL=1` compiles the
    // whole space at every width for both value types (the GPU check
    // compiles all of it again on the device).
    let mut seen = std::collections::HashSet::new();
    for n in WIDTHS {
        for layout in DenseLayout::ALL {
            for v in spmm_space(n, layout) {
                let path = (v.strategy, v.group == 32, v.vec, v.tile, v.unroll, layout);
                let first = seen.insert(path);
                let types: &[ValueType] = match (all, first) {
                    (true, _) => &ValueType::ALL,
                    (false, false) => &[],
                    (false, true) if seen.len() % 2 == 0 => &[ValueType::F64],
                    (false, true) => &[ValueType::F32],
                };
                for &t in types {
                    let k = generate_spmm(&v, t, layout, Some(n), &SpmmEpilogue::ALL)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let sass = ptxas_all || first;
                    jobs.push((format!("{} {t} {layout} N={n}", v.id()), sass, k));
                }
            }
        }
    }
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let spills = Mutex::new(Vec::new());
    let max_regs = Mutex::new((0u32, String::new()));
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some((what, sass, k)) = jobs.get(i) else {
                        break;
                    };
                    if i % 50 == 0 {
                        eprintln!("spmm_compile_all: {i} / {}", jobs.len());
                    }
                    match check(k, ptxas && *sass) {
                        Ok(r) => {
                            let mut m = max_regs.lock().unwrap();
                            if r > m.0 {
                                *m = (r, what.clone());
                            }
                        }
                        Err(Failure::Compile(e)) => {
                            failures.lock().unwrap().push(format!("{what}: {e}"))
                        }
                        Err(Failure::Spill(e)) => {
                            spills.lock().unwrap().push(format!("{what}: {e}"))
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let spills = spills.into_inner().unwrap();
    for s in &spills {
        eprintln!("spmm_compile_all: spill: {s}");
    }
    let (regs, at) = max_regs.into_inner().unwrap();
    eprintln!(
        "spmm_compile_all: {} units (widths {WIDTHS:?} x layouts x values), ptxas {}, {} compile \
         failures, {} units with a spilling entry, max {regs} registers ({at})",
        jobs.len(),
        match (ptxas, ptxas_all) {
            (false, _) => "not found",
            (true, false) => "sm_80+sm_90 on the first unit of each code path",
            (true, true) => "sm_80+sm_90 on every unit",
        },
        failures.len(),
        spills.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let strict = std::env::var("SPARSERL_SPMM_NO_SPILLS").is_ok_and(|v| v == "1");
    assert!(!strict || spills.is_empty(), "{}", spills.join("\n"));
}
