//! Compiles every generated kernel of the full design space (core and layout
//! strategies, plus a few
//! fine-knob variants) with NVRTC, then assembles it with `ptxas` for sm_80
//! and sm_90, requiring success and zero spill bytes for every entry.
//!
//! Skips (with a note) when no CUDA toolkit is found, unless
//! `SPARSERL_REQUIRE_CUDA=1`, in which case a missing toolkit fails the test.

use sparserl_build::codegen::{self, KernelSource};
use sparserl_rt::nvrtc;
use sparserl_rt::{Strategy, ValueType, Variant, full_space};
use std::sync::Mutex;
use std::time::Instant;

const PTX_ARCH: &str = "compute_80";
const SASS_ARCHS: [&str; 2] = ["sm_80", "sm_90"];

fn variants() -> Vec<Variant> {
    let mut out = full_space();
    for s in Strategy::ALL {
        for (stream_y, min_blocks) in [(true, 0), (false, 2), (false, 4), (true, 4)] {
            out.push(Variant {
                stream_y,
                min_blocks,
                ..Variant::of(s)
            });
        }
    }
    // BLOCK * MIN_BLOCKS = 512, the tightest register cap `validate` allows.
    out.push(Variant {
        block: 256,
        min_blocks: 2,
        unroll: 8,
        ..Variant::of(Strategy::BlockPerRow)
    });
    out.push(Variant {
        lanes: 32,
        unroll: 8,
        ldg_x: false,
        stream_y: true,
        ..Variant::of(Strategy::GroupPerRow)
    });
    out.push(Variant {
        items: 16,
        block: 128,
        min_blocks: 4,
        ..Variant::of(Strategy::NnzSplit)
    });
    out.push(Variant {
        block: 1024,
        unroll: 8,
        ..Variant::of(Strategy::Diagonal)
    });
    // Every fine-knob combination `Variant::validate` accepts (the search never
    // proposes others).
    out.retain(|v| v.validate().is_ok());
    out
}

/// Compiles and checks one kernel; returns a description of each failure.
fn check(k: &KernelSource) -> Result<u32, String> {
    let ptx = nvrtc::compile_ptx(&k.source, PTX_ARCH, &[]).map_err(|e| e.to_string())?;
    if !ptx.contains(&format!(".entry {}(", k.entry)) {
        return Err(format!("PTX has no entry {}", k.entry));
    }
    let mut max_regs = 0;
    for arch in SASS_ARCHS {
        let r = nvrtc::ptxas_check(&ptx, arch).map_err(|e| e.to_string())?;
        let Some(e) = r.entries.iter().find(|e| e.name == k.entry) else {
            return Err(format!(
                "ptxas {arch}: no report for {}\n{}",
                k.entry, r.log
            ));
        };
        if r.total_spill_bytes() != 0 || e.stack_frame != 0 {
            return Err(format!(
                "ptxas {arch}: {} spills ({} B stores, {} B loads, {} B stack)",
                k.entry, e.spill_stores, e.spill_loads, e.stack_frame
            ));
        }
        max_regs = max_regs.max(e.registers);
    }
    Ok(max_regs)
}

#[test]
fn compile_all_variants() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    let toolkit = match nvrtc::locate() {
        Ok(t) => t,
        Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
        Err(e) => {
            eprintln!(
                "compile_all: SKIPPED (no CUDA toolkit; set SPARSERL_REQUIRE_CUDA=1 to fail instead)\n{e}"
            );
            return;
        }
    };
    if toolkit.ptxas.is_none() {
        let msg = "compile_all: NVRTC found but no ptxas";
        if require {
            panic!("{msg}");
        }
        eprintln!("{msg}; SKIPPED");
        return;
    }
    eprintln!(
        "compile_all: NVRTC {}.{} from {:?}, ptxas {:?}, generator {}",
        toolkit.nvrtc_version.0,
        toolkit.nvrtc_version.1,
        toolkit.root,
        toolkit.ptxas,
        codegen::generator_fingerprint()
    );

    let start = Instant::now();
    let vs = variants();
    let mut jobs: Vec<(Variant, ValueType, KernelSource)> = Vec::new();
    for v in &vs {
        for t in ValueType::ALL {
            let k = codegen::generate(v, t).unwrap_or_else(|e| panic!("{e}"));
            jobs.push((*v, t, k));
        }
    }

    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let max_regs = Mutex::new((0u32, String::new()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some((v, t, k)) = jobs.get(i) else { break };
                    match check(k) {
                        Ok(regs) => {
                            let mut m = max_regs.lock().unwrap();
                            if regs > m.0 {
                                *m = (regs, k.entry.clone());
                            }
                        }
                        Err(e) => failures
                            .lock()
                            .unwrap()
                            .push(format!("{} ({t}): {e}", v.id())),
                    }
                }
            });
        }
    });

    let failures = failures.into_inner().unwrap();
    let (regs, regs_entry) = max_regs.into_inner().unwrap();
    eprintln!(
        "compile_all: {} variants x 2 value types = {} kernels, PTX {PTX_ARCH}, SASS {:?}, \
         {} failures, max {regs} registers ({regs_entry}), {threads} threads, {:.1?}",
        vs.len(),
        jobs.len(),
        SASS_ARCHS,
        failures.len(),
        start.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
