//! The SpMM GPU check as a stand-alone binary: every variant of the SpMM
//! space at N in {1, 5, 16, 32, 64, 128, 256} (or the widths given as
//! arguments), both layouts and value types, tuned and generic entries,
//! plain and `bias-relu`, against the float64 reference on edge-case and
//! synthetic matrices. Prints pass / fail counts and every failure; exits 1
//! on any failure, 2 without a GPU.
//!
//! `cargo build --release -p sparserl-build --example spmm_check`, then run
//! `target/release/examples/spmm_check` on the GPU machine.

use sparserl_build::codegen::spmm::generate_spmm;
use sparserl_rt::Gpu;
use sparserl_rt::spmm::check::{CHECK_WIDTHS, check_all};
use std::process::ExitCode;

fn main() -> ExitCode {
    let widths: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let widths = if widths.is_empty() {
        CHECK_WIDTHS.to_vec()
    } else {
        widths
    };
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("spmm_check: {e}");
            return ExitCode::from(2);
        }
    };
    let generate = |v: &_, t, l, w, e: &[_]| {
        generate_spmm(v, t, l, w, e)
            .map(|k| k.source)
            .map_err(Into::into)
    };
    let start = std::time::Instant::now();
    match check_all(&gpu, &generate, &widths) {
        Ok(r) => {
            for f in &r.failures {
                println!("FAIL {}: {}", f.what, f.reason);
            }
            println!(
                "spmm_check on {}: widths {widths:?}, {} units compiled, {} passed, {} failed, {:.1?}",
                gpu.name(),
                r.compiled,
                r.passed,
                r.failures.len(),
                start.elapsed()
            );
            if r.failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("spmm_check: {e}");
            ExitCode::FAILURE
        }
    }
}
