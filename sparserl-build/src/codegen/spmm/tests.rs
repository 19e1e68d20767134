use super::*;
use sparserl_rt::nvrtc;
use sparserl_rt::spmm::spmm_space;

fn nvrtc_available() -> bool {
    match nvrtc::locate() {
        Ok(_) => true,
        Err(e) => {
            let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
            assert!(!require, "SPARSERL_REQUIRE_CUDA=1 but {e}");
            eprintln!("spmm codegen: NVRTC missing, compile checks SKIPPED: {e}");
            false
        }
    }
}

#[test]
fn transposed_units_hold_row_major_kernels_and_the_transposes() {
    let t = SpmmVariant::parse("nnz-split.b256.i4.v4.c1.u4.ldg.t").unwrap();
    let k = generate_spmm(
        &t,
        ValueType::F32,
        DenseLayout::ColMajor,
        Some(64),
        &[SpmmEpilogue::BiasRelu],
    )
    .unwrap();
    // Mains plain only: the epilogue is applied by the transpose out.
    let mains: Vec<_> = k.entries.iter().map(|e| (e.width, e.epilogue)).collect();
    assert_eq!(mains, [(Some(64), None), (None, None)]);
    assert_eq!(
        k.transposes,
        [
            t.tin_entry(ValueType::F32, DenseLayout::ColMajor),
            t.tout_entry(ValueType::F32, DenseLayout::ColMajor, None),
            t.tout_entry(
                ValueType::F32,
                DenseLayout::ColMajor,
                Some(SpmmEpilogue::BiasRelu)
            ),
        ]
    );
    assert!(k.source.contains("#define SPMM_LAYOUT 0\n"));
    assert!(generate_spmm(&t, ValueType::F32, DenseLayout::RowMajor, None, &[]).is_err());
    if nvrtc_available() {
        let ptx = nvrtc::compile_ptx(&k.source, "compute_80", &[]).unwrap();
        for name in k.entries.iter().map(|e| &e.name).chain(&k.transposes) {
            assert!(ptx.contains(&format!(".entry {name}(")), "{name}");
        }
    }
}

#[test]
fn units_hold_tuned_generic_and_fused_entries() {
    let v = SpmmVariant::FALLBACK;
    let k = generate_spmm(
        &v,
        ValueType::F32,
        DenseLayout::RowMajor,
        Some(64),
        &[SpmmEpilogue::BiasRelu],
    )
    .unwrap();
    let names: Vec<_> = k.entries.iter().map(|e| (e.width, e.epilogue)).collect();
    assert_eq!(
        names,
        [
            (Some(64), None),
            (Some(64), Some(SpmmEpilogue::BiasRelu)),
            (None, None),
            (None, Some(SpmmEpilogue::BiasRelu))
        ]
    );
    assert!(!k.source.contains("#include"));
    assert_eq!(
        k.source.matches("#define SPARSERL_SPMM_COMMON_CUH").count(),
        1
    );
    for e in &k.entries {
        assert!(k.source.contains(&format!("#define ENTRY {}\n", e.name)));
    }
    assert!(k.source.contains(&spmm_generator_fingerprint()));
    assert!(spmm_generator_fingerprint().starts_with(SPMM_GENERATOR_VERSION));
    let again = generate_spmm(
        &v,
        ValueType::F32,
        DenseLayout::RowMajor,
        Some(64),
        &[SpmmEpilogue::BiasRelu, SpmmEpilogue::BiasRelu],
    )
    .unwrap();
    assert_eq!(k, again);
    assert!(k.transposes.is_empty());
    let generic = generate_spmm(&v, ValueType::F64, DenseLayout::ColMajor, None, &[]).unwrap();
    assert_eq!(generic.entries.len(), 1);
    assert!(generic.entries[0].name.ends_with("_cm_f64_nx"));
}

#[test]
fn invalid_requests_are_errors() {
    let vec4 = SpmmVariant {
        vec: 4,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    for (v, layout, width) in [
        (vec4, DenseLayout::ColMajor, Some(64)),
        (SpmmVariant::FALLBACK, DenseLayout::RowMajor, Some(0)),
        (
            SpmmVariant {
                items: 0,
                ..SpmmVariant::FALLBACK
            },
            DenseLayout::RowMajor,
            None,
        ),
        (
            SpmmVariant {
                group: 6,
                ..SpmmVariant::of(SpmmStrategy::ColTile)
            },
            DenseLayout::RowMajor,
            None,
        ),
    ] {
        assert!(
            generate_spmm(&v, ValueType::F32, layout, width, &[]).is_err(),
            "{v:?}"
        );
    }
}

#[test]
fn one_variant_per_strategy_compiles() {
    if !nvrtc_available() {
        return;
    }
    for layout in DenseLayout::ALL {
        let space = spmm_space(64, layout);
        let mut firsts: Vec<SpmmVariant> = SpmmStrategy::ALL
            .iter()
            .map(|&s| *space.iter().find(|v| v.strategy == s).unwrap())
            .collect();
        // And the shortest nnz-split range (8 nonzeros), and a row-warp
        // split over 4 groups (shared memory, two barriers per round).
        firsts.push(*space.iter().find(|v| v.range() == 8).unwrap());
        firsts.push(*space.iter().find(|v| v.split > 1).unwrap());
        for v in firsts {
            for t in ValueType::ALL {
                let k = generate_spmm(&v, t, layout, Some(64), &SpmmEpilogue::ALL).unwrap();
                let ptx = nvrtc::compile_ptx(&k.source, "compute_80", &[])
                    .unwrap_or_else(|e| panic!("{} {t} {layout}: {e}", v.id()));
                for e in &k.entries {
                    assert!(ptx.contains(&format!(".entry {}(", e.name)), "{}", e.name);
                }
                // Register and spill report (informational; the compile-all
                // test lists every spilling entry).
                if let Ok(r) = nvrtc::ptxas_check(&ptx, "sm_90") {
                    for e in &r.entries {
                        eprintln!(
                            "ptxas sm_90 {}: {} registers, {} B spill stores, {} B stack",
                            e.name, e.registers, e.spill_stores, e.stack_frame
                        );
                    }
                }
            }
        }
    }
}

/// The split row-warp points that hold the most registers (4 values of an
/// X row per lane, 8 rows in flight, 4 groups per row; narrowest and widest
/// groups; row-major at N = 64, column-major at 128) compile to PTX and SASS
/// for both value types,
/// tuned-width, generic and fused entries, spilling at most a few words
/// (their unsplit twins spill up to 16 B in the generic f64 entries).
#[test]
fn widest_split_variants_compile_without_large_spills() {
    if !nvrtc_available() {
        return;
    }
    let mut tried = 0;
    let mut seen = std::collections::HashSet::new();
    for (layout, n) in [(DenseLayout::RowMajor, 64), (DenseLayout::ColMajor, 128)] {
        let space = spmm_space(n, layout);
        let widest = space
            .iter()
            .filter(|v| v.split > 1 && v.vec * v.coarsen == 4 && v.unroll == 8 && !v.trans);
        for v in widest.filter(|v| (v.group == 32 || v.group <= 4) && seen.insert(**v)) {
            for t in ValueType::ALL {
                let k = generate_spmm(v, t, layout, Some(n), &SpmmEpilogue::ALL).unwrap();
                let ptx = nvrtc::compile_ptx(&k.source, "compute_80", &[])
                    .unwrap_or_else(|e| panic!("{} {t} {layout}: {e}", v.id()));
                for e in &k.entries {
                    assert!(ptx.contains(&format!(".entry {}(", e.name)), "{}", e.name);
                }
                tried += 1;
                let Ok(r) = nvrtc::ptxas_check(&ptx, "sm_90") else {
                    continue;
                };
                for e in &r.entries {
                    assert!(
                        e.spill_stores <= 32,
                        "{}: {} B spilled",
                        e.name,
                        e.spill_stores
                    );
                }
            }
        }
    }
    assert!(tried >= 8, "{tried}");
    assert!(seen.iter().any(|v| v.group == 32));
}

/// Nnz-split adds a split row's partial sums with one vector atomic per
/// lane and column slice on sm_90 (f32 pairs and quads), scalar atomics on
/// sm_80 and for f64; both compile for every value type.
#[test]
fn nnz_split_split_rows_use_vector_atomics_on_sm90() {
    if !nvrtc_available() {
        return;
    }
    let space = spmm_space(64, DenseLayout::RowMajor);
    for vec in [2, 4] {
        let v = space
            .iter()
            .find(|v| v.strategy == SpmmStrategy::NnzSplit && v.vec == vec && !v.trans)
            .unwrap();
        for t in ValueType::ALL {
            let k =
                generate_spmm(v, t, DenseLayout::RowMajor, Some(64), &SpmmEpilogue::ALL).unwrap();
            let vector = format!(".global.add.v{vec}.f32");
            for (arch, expect) in [("compute_90", t == ValueType::F32), ("compute_80", false)] {
                let ptx = nvrtc::compile_ptx(&k.source, arch, &[])
                    .unwrap_or_else(|e| panic!("{} {t} {arch}: {e}", v.id()));
                assert_eq!(ptx.contains(&vector), expect, "{} {t} {arch}", v.id());
                assert!(ptx.contains(".global.add.f"), "{} {t} {arch}", v.id());
            }
        }
    }
}

/// The PTX of one entry: from its `.entry` line to the next entry.
fn entry_ptx<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("{name} missing"));
    let rest = &ptx[start + 1..];
    &ptx[start..start + 1 + rest.find(".entry ").unwrap_or(rest.len())]
}

/// Nnz-split entries compiled for sm_90 overlap as programmatic dependent
/// launches: prep and main trigger their dependents, main and post wait for
/// the pass before them; compiled for sm_80 none of it is emitted (the host
/// then launches them plainly).
#[test]
fn nnz_split_entries_wait_for_the_pass_before_them_on_sm90() {
    if !nvrtc_available() {
        return;
    }
    let v = SpmmVariant::FALLBACK;
    let (trigger, wait) = ("griddepcontrol.launch_dependents;", "griddepcontrol.wait;");
    for t in ValueType::ALL {
        let k = generate_spmm(&v, t, DenseLayout::RowMajor, Some(64), &SpmmEpilogue::ALL).unwrap();
        let ptx = nvrtc::compile_ptx(&k.source, "compute_90", &[]).unwrap();
        for e in &k.entries {
            let main = entry_ptx(&ptx, &e.name);
            assert!(main.contains(trigger) && main.contains(wait), "{}", e.name);
            let prep = entry_ptx(&ptx, &format!("{}_prep", e.name));
            assert!(prep.contains(trigger) && !prep.contains(wait), "{}", e.name);
            if e.epilogue.is_some() {
                let post = entry_ptx(&ptx, &format!("{}_post", e.name));
                assert!(post.contains(wait), "{}", e.name);
            }
        }
        let old = nvrtc::compile_ptx(&k.source, "compute_80", &[]).unwrap();
        assert!(!old.contains("griddepcontrol"), "{t}");
    }
}
