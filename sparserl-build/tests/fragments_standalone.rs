//! Every kernel fragment compiles on its own: NVRTC compiles a two-part
//! source, the generator's defines then `#include "<fragment>.cu"`, with the
//! kernels folder as include path, so the fragment resolves its own includes
//! (`common.cuh`, `epilogue.cuh`; narrow's `group_per_row.cu`). Both value
//! types, plain and with the axpby-dot epilogue. (`T` cannot be a `-D` option:
//! NVRTC's builtin headers use `T` as a template parameter name.)
//!
//! The SpMM fragments (`spmm_*.cu`) get the SpMM defines instead, for
//! each layout, both value types, a compile-time and the generic width,
//! plain and fused.
//!
//! Skips (with a note) when no CUDA toolkit is found, unless
//! `SPARSERL_REQUIRE_CUDA=1`, in which case a missing toolkit fails the test.

use sparserl_rt::nvrtc;
use std::path::Path;

#[test]
fn every_fragment_compiles_on_its_own() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    if let Err(e) = nvrtc::locate() {
        assert!(!require, "SPARSERL_REQUIRE_CUDA=1 but {e}");
        eprintln!("fragments_standalone: SKIPPED (no CUDA toolkit)\n{e}");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the kernels folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    for file in &files {
        let name = file.file_name().expect("a file name").to_string_lossy();
        if name.starts_with("spmm_") {
            compile_spmm_fragment(&dir, &name);
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a fragment");
        assert!(
            text.contains("#include \"common.cuh\"")
                || text.contains("#include \"group_per_row.cu\""),
            "{} does not include what it uses",
            file.display()
        );
        for (value, epilogue) in [("float", 0), ("double", 3)] {
            let source = format!(
                "#define T {value}\n#define BLOCK 128\n#define LANES 4\n#define ITEMS 4\n\
                 #define UNROLL 2\n#define MIN_BLOCKS 0\n#define SPARSERL_LDG_X 1\n\
                 #define SPARSERL_STREAM_Y 0\n#define ENTRY sparserl_fragment_test\n\
                 #define SPARSERL_EPILOGUE {epilogue}\n#include \"{name}\"\n"
            );
            let opts = [format!("-I{}", dir.display())];
            let ptx = nvrtc::compile_ptx(&source, "compute_80", &opts)
                .unwrap_or_else(|e| panic!("{} ({value}): {e}", file.display()));
            assert!(ptx.contains("sparserl_fragment_test"), "{}", file.display());
        }
    }
}

/// Compiles one SpMM fragment alone with the generator's SpMM defines.
fn compile_spmm_fragment(dir: &Path, name: &str) {
    let text = std::fs::read_to_string(dir.join(name)).expect("a fragment");
    assert!(
        text.contains("#include \"spmm_common.cuh\""),
        "{name} does not include what it uses"
    );
    for (value, layout, vec, width, epilogue) in [
        ("float", 0, 4, 64, 0),
        ("double", 0, 2, 0, 1),
        ("float", 1, 1, 0, 1),
        ("double", 1, 1, 5, 0),
    ] {
        let source = format!(
            "#define T {value}\n#define BLOCK 128\n#define GROUP 8\n#define VEC {vec}\n\
             #define COARSEN 2\n#define TILE_K 4\n#define ITEMS 4\n#define SUB 1\n#define SPLIT 1\n#define UNROLL 2\n\
             #define SPMM_LDG 1\n#define SPMM_LAYOUT {layout}\n#define SPMM_N {width}\n\
             #define SPMM_EPILOGUE {epilogue}\n#define ENTRY sparserl_fragment_test\n\
             #define SPMM_TRANSPOSE {transpose}\n#include \"{name}\"\n",
            // The transpose fragment's direction (in, out); the others ignore it.
            transpose = 1 + epilogue,
        );
        let opts = [format!("-I{}", dir.display())];
        let ptx = nvrtc::compile_ptx(&source, "compute_80", &opts)
            .unwrap_or_else(|e| panic!("{name} ({value}, layout {layout}): {e}"));
        assert!(ptx.contains(".entry sparserl_fragment_test("), "{name}");
    }
}
