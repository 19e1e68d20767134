//! Tests of `app_vendor`.

use super::cg::rel_residual;
use super::cublas::blas_library_candidates;
use super::pagerank::dangling_mask;
use super::*;

#[test]
fn chunk_plans_cover_every_iteration() {
    for iterations in 1..40 {
        for graph_chunk in 0..45 {
            for even in [false, true] {
                let p = chunk_plan(iterations, graph_chunk, even);
                assert_eq!(p.chunk * p.full + p.rest, iterations);
                assert!(p.chunk <= iterations);
                if even {
                    assert_eq!(p.chunk % 2, 0, "{p:?}");
                }
                if p.chunk > 0 {
                    assert!(p.rest < p.chunk);
                }
            }
        }
    }
    assert_eq!(
        chunk_plan(100, 50, false),
        ChunkPlan {
            chunk: 50,
            full: 2,
            rest: 0
        }
    );
    assert_eq!(
        chunk_plan(1, 50, true),
        ChunkPlan {
            chunk: 0,
            full: 0,
            rest: 1
        }
    );
    assert_eq!(chunk_plan(0, 50, false).rest, 0);
}

#[test]
fn kernel_source_names_every_entry() {
    let src = kernel_source();
    for e in [
        CG_ALPHA_F32,
        CG_ALPHA_F64,
        CG_BETA_F32,
        CG_BETA_F64,
        PR_TELEPORT,
        PR_ADD_DEV,
        PR_ADD_HOST,
    ] {
        assert_eq!(
            src.matches(&format!("void {e}(")).count(),
            1,
            "{e} in\n{src}"
        );
    }
    assert_eq!(src.matches('{').count(), src.matches('}').count());
    assert!(
        blas_library_candidates()
            .iter()
            .any(|n| n.contains("cublas"))
    );
}

#[test]
fn kernels_compile_when_nvrtc_is_present() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    let toolkit = match sparserl_rt::nvrtc::locate() {
        Ok(t) => t,
        Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
        Err(e) => {
            eprintln!("app_vendor kernels: SKIPPED (no NVRTC)\n{e}");
            return;
        }
    };
    let ptx = sparserl_rt::nvrtc::compile_ptx(&kernel_source(), "sm_90", &[]).unwrap();
    for e in [
        CG_ALPHA_F32,
        CG_ALPHA_F64,
        CG_BETA_F32,
        CG_BETA_F64,
        PR_TELEPORT,
        PR_ADD_DEV,
        PR_ADD_HOST,
    ] {
        assert!(
            ptx.contains(&format!(".entry {e}(")),
            "{e} missing from the PTX"
        );
    }
    if toolkit.ptxas.is_some() {
        let report = sparserl_rt::nvrtc::ptxas_check(&ptx, "sm_90").unwrap();
        assert_eq!(report.total_spill_bytes(), 0);
    }
}

#[test]
fn residual_and_mask_helpers() {
    // [[2, 1], [1, 3]] x = b with x = [1, 1]: b = [3, 4].
    let a = Csr::try_new(
        2,
        2,
        vec![0, 2, 4],
        vec![0, 1, 0, 1],
        vec![2.0, 1.0, 1.0, 3.0],
    )
    .unwrap();
    assert!(rel_residual(&a, &[3.0, 4.0], &[1.0, 1.0]) < 1e-15);
    assert!((rel_residual(&a, &[3.0, 4.0], &[0.0, 0.0]) - 1.0).abs() < 1e-15);
    assert_eq!(dangling_mask(3, &[2, 0]).unwrap(), vec![1.0, 0.0, 1.0]);
    assert!(dangling_mask(3, &[3]).is_err());
}
