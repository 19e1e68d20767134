use super::variant::PASS_WARPS;
use super::*;
use crate::dense::DenseLayout;
use crate::variant::ValueType;
use std::collections::HashSet;

const WIDTHS: [usize; 8] = [1, 3, 5, 16, 32, 64, 128, 257];

#[test]
fn every_point_of_the_space_is_valid_and_round_trips() {
    for n in WIDTHS {
        for layout in DenseLayout::ALL {
            let space = spmm_space(n, layout);
            assert!(space.len() >= 6, "n={n} {layout}: {}", space.len());
            let mut ids = HashSet::new();
            for v in &space {
                v.validate_for(layout).unwrap();
                assert_eq!(*v, v.canonical());
                assert!(ids.insert(v.id()), "duplicate {}", v.id());
                assert_eq!(SpmmVariant::parse(&v.id()), Ok(*v));
                assert_eq!(v.id().parse::<SpmmVariant>(), Ok(*v));
                let json = serde_json::to_string(v).unwrap();
                assert_eq!(serde_json::from_str::<SpmmVariant>(&json).unwrap(), *v);
            }
            for s in SpmmStrategy::ALL {
                assert!(
                    space.iter().any(|v| v.strategy == s),
                    "n={n} {layout} lacks {s:?}"
                );
            }
        }
    }
}

#[test]
fn the_transposed_path_is_column_major_with_row_major_kernels() {
    let t = SpmmVariant::parse("row-warp.b256.g32.v4.c1.u1.ldg.t").unwrap();
    assert!(t.trans);
    assert_eq!(
        t.kernel_layout(DenseLayout::ColMajor),
        DenseLayout::RowMajor
    );
    t.validate_for(DenseLayout::ColMajor).unwrap();
    assert!(matches!(
        t.validate_for(DenseLayout::RowMajor),
        Err(SpmmVariantError::Trans(_))
    ));
    let plain = SpmmVariant { trans: false, ..t };
    assert_eq!(
        plain.validate_for(DenseLayout::ColMajor),
        Err(SpmmVariantError::VecNeedsRowMajor(4))
    );
    // Serialised without the field unless set: earlier records read the same.
    assert!(!serde_json::to_string(&plain).unwrap().contains("trans"));
    assert!(
        serde_json::to_string(&t)
            .unwrap()
            .contains("\"trans\":true")
    );
    for n in WIDTHS {
        let cm = spmm_space(n, DenseLayout::ColMajor);
        let rm = spmm_space(n, DenseLayout::RowMajor);
        let through: Vec<SpmmVariant> = cm
            .iter()
            .filter(|v| v.trans)
            .map(|v| SpmmVariant { trans: false, ..*v })
            .collect();
        let rm_rows: Vec<SpmmVariant> = rm
            .into_iter()
            .filter(|v| v.strategy != SpmmStrategy::ColTile)
            .collect();
        assert_eq!(through, rm_rows, "n={n}");
        assert!(
            spmm_space(n, DenseLayout::RowMajor)
                .iter()
                .all(|v| !v.trans)
        );
    }
    let names = SpmmEntryNames::of(
        &t,
        ValueType::F32,
        DenseLayout::ColMajor,
        Some(64),
        Some(SpmmEpilogue::BiasRelu),
    );
    assert!(!names.main.contains("bias_relu"), "{}", names.main);
    assert!(names.main.ends_with("_ldg_t_cm_f32_n64"), "{}", names.main);
    assert_eq!(names.post, None);
    assert!(
        names
            .tin
            .as_deref()
            .is_some_and(|s| s.ends_with("_cm_f32_tin"))
    );
    assert!(
        names
            .tout
            .as_deref()
            .is_some_and(|s| s.ends_with("_cm_f32_tout_bias_relu"))
    );
    assert_eq!(names.list().len(), 3);
}

#[test]
fn fallback_is_valid_for_every_layout() {
    for layout in DenseLayout::ALL {
        SpmmVariant::FALLBACK.validate_for(layout).unwrap();
    }
    assert_eq!(SpmmVariant::FALLBACK.chunk(), 32);
}

#[test]
fn bad_ids_and_parameters_are_errors() {
    for bad in [
        "",
        "row-wrap.b256.g8.v1.c1.u1",
        "row-warp.b256.g3.v1.c1.u1",
        "row-warp.b256.g8.v8.c1.u1",
        "row-warp.b100.g8.v1.c1.u1",
        "col-tile.b128.g1.k3.u1",
        "row-warp.b256.g8.v1.c1.u1.zz",
        "row-warp.b256.g8.vx.c1.u1",
        // Not canonical: order and ignored fields.
        "row-warp.b256.v1.g8.c1.u1",
        "col-tile.b128.g1.k4.v2.u1",
        // The transposed path: only at the end, not on col-tile.
        "row-warp.b256.g8.v1.c1.u1.t.ldg",
        "col-tile.b128.g1.k4.u2.ldg.t",
    ] {
        assert!(SpmmVariant::parse(bad).is_err(), "{bad}");
    }
    let v = SpmmVariant {
        vec: 4,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    assert!(v.validate_for(DenseLayout::RowMajor).is_ok());
    assert!(v.validate_for(DenseLayout::ColMajor).is_err());
    let v = SpmmVariant {
        items: 0,
        ..SpmmVariant::FALLBACK
    };
    assert!(v.validate().is_err());
}

#[test]
fn short_ranges_have_their_own_ids() {
    let v = SpmmVariant::parse("nnz-split.b256.g8.r8.v2.c2.u4.ldg").unwrap();
    assert_eq!((v.items, v.sub, v.range(), v.group), (1, 4, 8, 8));
    assert_eq!(v.id(), "nnz-split.b256.g8.r8.v2.c2.u4.ldg");
    let v = SpmmVariant::parse("nnz-split.b256.r16.v1.c1.u1").unwrap();
    assert_eq!((v.sub, v.range()), (2, 16));
    // 32 is `i1`; 4 is too short; longer ranges are not cut.
    for bad in [
        "nnz-split.b256.r32.v1.c1.u1",
        "nnz-split.b256.r4.v1.c1.u1",
        "nnz-split.b256.r0.v1.c1.u1",
    ] {
        assert!(SpmmVariant::parse(bad).is_err(), "{bad}");
    }
    let cut_long = SpmmVariant {
        items: 4,
        sub: 2,
        ..SpmmVariant::FALLBACK
    };
    assert_eq!(cut_long.canonical().sub, 1);
    // Ignored by the other families.
    let rw = SpmmVariant {
        sub: 4,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    assert_eq!(rw.canonical().sub, 1);
    // Every space has them, with one id per point and a grid over 8-nonzero ranges.
    for layout in DenseLayout::ALL {
        let space = spmm_space(32, layout);
        let short: Vec<_> = space.iter().filter(|v| v.sub > 1).collect();
        assert!(short.iter().any(|v| v.range() == 8) && short.iter().any(|v| v.range() == 16));
        for v in short {
            assert_eq!(SpmmVariant::parse(&v.id()).unwrap(), *v);
        }
    }
    let r8 = SpmmVariant {
        items: 1,
        sub: 4,
        ..SpmmVariant::FALLBACK
    };
    // 800 nonzeros in ranges of 8, one chunk of 32 columns, 32 lanes each.
    assert_eq!(r8.grid((100, 100, 800, 32)), 13);
}

#[test]
fn entry_names_are_identifiers_and_distinct() {
    let mut names = HashSet::new();
    for layout in DenseLayout::ALL {
        for v in spmm_space(64, layout) {
            for t in ValueType::ALL {
                for w in [None, Some(64)] {
                    for e in [None, Some(SpmmEpilogue::BiasRelu)] {
                        let name = v.entry(t, layout, w, e);
                        assert!(
                            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                                && !name.contains("__"),
                            "{name}"
                        );
                        assert!(names.insert(name.clone()), "{name}");
                    }
                }
            }
        }
    }
    assert_eq!(
        SpmmVariant::FALLBACK.entry(ValueType::F32, DenseLayout::RowMajor, Some(16), None),
        "sparserl_spmm_nnz_split_b256_i8_v1_c1_u1_ldg_rm_f32_n16"
    );
}

#[test]
fn grids_cover_the_work_and_stay_in_range() {
    let v = SpmmVariant {
        group: 8,
        vec: 4,
        coarsen: 1,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    // 1000 rows x 2 chunks of 32 columns x 8 lanes / 256 threads.
    assert_eq!(v.grid((1000, 10, 5000, 64)), 63);
    assert_eq!(v.grid((0, 10, 0, 64)), 1);
    let f = SpmmVariant::FALLBACK;
    // ceil(5000 / 256) ranges x 3 chunks x 32 lanes / 256.
    assert_eq!(f.grid((1000, 10, 5000, 65)), 8);
    assert_eq!(f.grid((1000, 10, 0, 65)), 1);
    assert_eq!(
        f.grid((usize::MAX / 4, 1, usize::MAX / 4, 1 << 20)),
        i32::MAX as u32
    );
    // A warp per row (blocks of 256 = 8 warps) up to PASS_WARPS warps.
    assert_eq!(f.pass_grid(1000), 125);
    assert_eq!(f.pass_grid(0), 1);
    assert_eq!(f.pass_grid(10_000_000), (PASS_WARPS / 8) as u32);
}

#[test]
fn compulsory_bytes_formula() {
    // nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v.
    assert_eq!(spmm_bytes(2, 3, 4, 5, 4), 4 * 8 + 3 * 4 + 5 * 5 * 4);
    assert_eq!(spmm_bytes(2, 3, 4, 1, 8), 4 * 12 + 12 + 5 * 8);
}

#[test]
fn epilogues_parse_their_spelling() {
    assert_eq!(
        SpmmEpilogue::parse("bias-relu"),
        Some(SpmmEpilogue::BiasRelu)
    );
    assert_eq!(SpmmEpilogue::parse("relu"), None);
    assert_eq!(
        serde_json::to_string(&SpmmEpilogue::BiasRelu).unwrap(),
        "\"bias-relu\""
    );
}

mod spec {
    use super::super::launch::{SpmmImage, SpmmModule, SpmmSpec, image_arch, waits_on_passes};
    use super::*;
    use crate::kernel::{Image, Provenance};

    static IMAGES: [SpmmImage; 2] = [
        SpmmImage {
            arch: "sm_80",
            ptx: "p80",
            cubin: None,
        },
        SpmmImage {
            arch: "sm_90",
            ptx: "p90",
            cubin: Some(b"c90"),
        },
    ];

    const fn module(width: Option<usize>) -> SpmmModule {
        SpmmModule {
            variant: SpmmVariant::of(SpmmStrategy::RowWarp),
            width,
            source: "",
            images: &IMAGES,
        }
    }

    static TUNED: [SpmmModule; 2] = [module(Some(32)), module(Some(128))];

    fn spec(tuned: &'static [SpmmModule]) -> SpmmSpec {
        SpmmSpec {
            name: "gcn",
            value: ValueType::F32,
            layout: DenseLayout::RowMajor,
            tuned,
            fallback: SpmmModule {
                variant: SpmmVariant::FALLBACK,
                ..module(None)
            },
            epilogues: &[],
            provenance: Provenance::Policy,
            tuned_on: None,
        }
    }

    #[test]
    fn widths_pick_the_tuned_or_the_nearest_generic_entry() {
        let s = spec(&TUNED);
        assert_eq!(s.module_for(32).1, Some(32));
        assert_eq!(s.module_for(128).1, Some(128));
        let (m, w) = s.module_for(40);
        assert_eq!((m.width, w), (Some(32), None));
        let (m, w) = s.module_for(100);
        assert_eq!((m.width, w), (Some(128), None));
        // A tie goes to the smaller width.
        assert_eq!(s.module_for(80).0.width, Some(32));
        let none = spec(&[]);
        let (m, w) = none.module_for(64);
        assert_eq!((m.variant, w), (SpmmVariant::FALLBACK, None));
    }

    #[test]
    fn images_follow_the_device() {
        let m = module(Some(32));
        assert_eq!(
            m.image_for("k", (9, 0)).unwrap(),
            Some(Image::Cubin {
                arch: "sm_90",
                bytes: b"c90"
            })
        );
        assert_eq!(
            m.image_for("k", (10, 0)).unwrap(),
            Some(Image::Ptx {
                arch: "sm_90",
                text: "p90"
            })
        );
        assert_eq!(
            m.image_for("k", (8, 6)).unwrap(),
            Some(Image::Ptx {
                arch: "sm_80",
                text: "p80"
            })
        );
        assert!(matches!(
            m.image_for("k", (7, 5)),
            Err(crate::RtError::UnsupportedDevice { .. })
        ));
        let bare = SpmmModule {
            images: &[],
            ..module(None)
        };
        assert_eq!(bare.image_for("k", (9, 0)).unwrap(), None);
    }

    /// Main and post wait on the pass before them (and may be launched as
    /// programmatic dependents) only in images compiled for sm_90 or later:
    /// not the sm_80 PTX the driver compiles for an sm_86 device, nor for an
    /// sm_90 device when only sm_80 was embedded; NVRTC without an image
    /// compiles for the device.
    #[test]
    fn only_sm90_images_wait_on_the_passes() {
        static OLD: [SpmmImage; 1] = [SpmmImage {
            arch: "sm_80",
            ptx: "p80",
            cubin: None,
        }];
        let old = SpmmModule {
            images: &OLD,
            ..module(Some(32))
        };
        let waits = |m: &SpmmModule, cc: (i32, i32)| {
            let device = Some((cc.0 * 10 + cc.1) as u32);
            waits_on_passes(image_arch(m.image_for("k", cc).unwrap(), device))
        };
        let m = module(Some(32));
        assert!(waits(&m, (9, 0)) && waits(&m, (10, 0)) && !waits(&m, (8, 6)));
        assert!(!waits(&old, (9, 0)) && !waits(&old, (10, 0)));
        assert!(waits_on_passes(image_arch(None, Some(90))));
        assert!(!waits_on_passes(image_arch(None, Some(86))));
        assert!(!waits_on_passes(image_arch(None, None)));
    }
}

/// Why the kernels accumulate in double for f32 too: a long row summed in
/// float (one product after the other) drifts with the row length; with
/// terms of one sign (a GCN layer: a non-negative normalised adjacency times
/// ReLU features) a row of 2M nonzeros misses the 1e-5 per-row tolerance,
/// the double sum rounded once meets it. (With random signs the float sum
/// stays within it here.) The kernels sum only bounded blocks in float (see
/// `float_blocks_into_double_meet_the_tolerance_on_long_rows`).
#[test]
fn float_accumulation_fails_the_tolerance_on_long_rows() {
    // A fixed linear congruential sequence in [0, 1).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let len = 2_000_000;
    let terms: Vec<(f32, f32)> = (0..len).map(|_| (next(), next())).collect();
    let err = |sign: bool| {
        let t: Vec<(f32, f32)> = terms
            .iter()
            .map(|&(a, x)| (a, if sign { 2.0 * x - 1.0 } else { x }))
            .collect();
        let exact: f64 = t.iter().map(|&(a, x)| a as f64 * x as f64).sum();
        let mag: f64 = t.iter().map(|&(a, x)| (a as f64 * x as f64).abs()).sum();
        let in_float = t.iter().fold(0f32, |s, &(a, x)| s + a * x) as f64;
        let in_double = exact as f32 as f64;
        let den = exact.abs().max(reference::ROW_FLOOR * mag);
        (
            (in_float - exact).abs() / den,
            (in_double - exact).abs() / den,
        )
    };
    let (pos_float, pos_double) = err(false);
    let (mixed_float, mixed_double) = err(true);
    eprintln!(
        "row of {len}: one sign: float {pos_float:e}, double {pos_double:e}; \
         random signs: float {mixed_float:e}, double {mixed_double:e}"
    );
    assert!(pos_float > 1e-5, "float accumulation error {pos_float:e}");
    assert!(pos_double < 1e-6 && mixed_double < 1e-6);
}

/// The kernels' f32 scheme: each lane sums at most 32 products (one
/// broadcast step) in float, with fused multiply-adds as the GPU does, and
/// adds each block sum into a double accumulator. A block of k <= 32 float
/// products is off by at most k 2^-24 (~1.9e-6) of its magnitude sum, so the
/// row stays within the 1e-5 tolerance (against its magnitude sum) however
/// long it is: on the 2M-term one-signed row that fails in plain float, and
/// with random signs, blocks of 32 (and of 31, a block cut short by a row
/// change or a tail) meet it, with or without fused multiply-adds.
#[test]
fn float_blocks_into_double_meet_the_tolerance_on_long_rows() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let len = 2_000_000;
    let terms: Vec<(f32, f32)> = (0..len).map(|_| (next(), next())).collect();
    let err = |sign: bool, block: usize, fused: bool| {
        let t: Vec<(f32, f32)> = terms
            .iter()
            .map(|&(a, x)| (a, if sign { 2.0 * x - 1.0 } else { x }))
            .collect();
        let exact: f64 = t.iter().map(|&(a, x)| a as f64 * x as f64).sum();
        let mag: f64 = t.iter().map(|&(a, x)| (a as f64 * x as f64).abs()).sum();
        let blocks: f64 = t
            .chunks(block)
            .map(|b| {
                b.iter().fold(
                    0f32,
                    |s, &(a, x)| {
                        if fused { a.mul_add(x, s) } else { s + a * x }
                    },
                ) as f64
            })
            .sum();
        let got = blocks as f32 as f64;
        (got - exact).abs() / exact.abs().max(reference::ROW_FLOOR * mag)
    };
    for sign in [false, true] {
        for block in [31, 32] {
            for fused in [false, true] {
                let e = err(sign, block, fused);
                eprintln!("row of {len}, signs {sign}, blocks of {block}, fused {fused}: {e:e}");
                assert!(e < 1e-5, "block accumulation error {e:e}");
            }
        }
    }
    // The emulation can fail: one block of the whole row is plain float.
    assert!(err(false, len, true) > 1e-5);
}

proptest::proptest! {
    /// Any valid variant's id parses back to its canonical form; ids of
    /// invalid ones never parse.
    #[test]
    fn ids_round_trip(
        s in 0usize..3,
        block in 1u32..40,
        group in 0u32..7,
        vec in 0u32..4,
        coarsen in 0u32..4,
        tile in 0u32..6,
        items in 0u32..80,
        sub in 0u32..4,
        split in 0u32..5,
        unroll in 0u32..5,
        ldg in proptest::bool::ANY,
        trans in proptest::bool::ANY,
    ) {
        let v = SpmmVariant {
            strategy: SpmmStrategy::ALL[s],
            block: block * 32,
            group: 1 << group,
            vec: 1 << vec,
            coarsen: 1 << coarsen,
            tile: 1 << tile,
            items,
            sub: 1 << sub,
            split: 1 << split,
            unroll: 1 << unroll,
            ldg_x: ldg,
            trans,
        };
        match v.validate() {
            Ok(()) => proptest::prop_assert_eq!(SpmmVariant::parse(&v.id()), Ok(v.canonical())),
            Err(_) => proptest::prop_assert!(SpmmVariant::parse(&v.id()).is_err()),
        }
    }
}

/// Nnz-split streams narrower than a warp: ids of whole-warp streams read
/// as before, narrow ones carry `.g`, round-trip, cover narrow widths
/// without idle lanes, and size their grid by the stream's lanes.
#[test]
fn narrow_nnz_split_streams() {
    let old = SpmmVariant::parse("nnz-split.b256.i4.v1.c1.u1.ldg").unwrap();
    assert_eq!(old.group, 32);
    assert_eq!(old.chunk(), 32);
    let narrow = SpmmVariant {
        group: 4,
        items: 4,
        vec: 4,
        ..SpmmVariant::FALLBACK
    };
    assert_eq!(narrow.id(), "nnz-split.b256.g4.i4.v4.c1.u1.ldg");
    assert_eq!(SpmmVariant::parse(&narrow.id()), Ok(narrow));
    assert!(SpmmVariant::parse("nnz-split.b256.g32.i4.v1.c1.u1.ldg").is_err());
    assert_eq!(narrow.chunk(), 16);
    // ceil(5000 / 128) ranges x 1 chunk x 4 lanes / 256.
    assert_eq!(narrow.grid((1000, 10, 5000, 16)), 1);
    assert_eq!(narrow.grid((1000, 10, 50_000, 16)), 7);
    let space = spmm_space(16, DenseLayout::RowMajor);
    assert!(space.contains(&narrow));
    for n in WIDTHS {
        for layout in DenseLayout::ALL {
            for v in spmm_space(n, layout) {
                if v.strategy == SpmmStrategy::NnzSplit && v.group < 32 {
                    assert!(n <= 64 && v.chunk() == (n.next_power_of_two().max(4)) as u32);
                }
            }
        }
    }
    assert!(
        spmm_space(3, DenseLayout::ColMajor)
            .iter()
            .any(|v| v.strategy == SpmmStrategy::NnzSplit && v.group == 4)
    );
}

#[test]
fn split_rows_have_their_own_ids_and_bounds() {
    let v = SpmmVariant::parse("row-warp.b256.g16.v2.c1.s4.u8.ldg").unwrap();
    assert_eq!(
        (v.strategy, v.group, v.split, v.unroll),
        (SpmmStrategy::RowWarp, 16, 4, 8)
    );
    assert_eq!(v.id(), "row-warp.b256.g16.v2.c1.s4.u8.ldg");
    // Four groups of 16 lanes per item: 4 items per block of 256, a block
    // per 4 of the 1000 rows' one chunk of 32 columns (16 without split).
    let plain = SpmmVariant { split: 1, ..v };
    assert_eq!(v.grid((1000, 1000, 5000, 32)), 250);
    assert_eq!(plain.grid((1000, 1000, 5000, 32)), 63);
    // Unsplit ids and serialisations are unchanged.
    assert_eq!(plain.id(), "row-warp.b256.g16.v2.c1.u8.ldg");
    assert!(!serde_json::to_string(&plain).unwrap().contains("split"));
    assert!(serde_json::to_string(&v).unwrap().contains("\"split\":4"));
    // Ignored by the other families; bounded by the block's groups and shared memory.
    let ns = SpmmVariant {
        split: 4,
        ..SpmmVariant::of(SpmmStrategy::NnzSplit)
    };
    assert_eq!(ns.canonical().split, 1);
    let odd = SpmmVariant {
        block: 96,
        group: 32,
        split: 2,
        ..v
    };
    assert_eq!(
        odd.validate(),
        Err(SpmmVariantError::Split {
            split: 2,
            groups: 3
        })
    );
    let wide = SpmmVariant {
        block: 1024,
        vec: 4,
        coarsen: 2,
        group: 32,
        ..v
    };
    assert!(matches!(
        wide.validate(),
        Err(SpmmVariantError::SplitShared { .. })
    ));
    assert!(SpmmVariant { split: 3, ..v }.validate().is_err());
    assert!(SpmmVariant::parse("row-warp.b256.g16.v2.c1.s1.u8.ldg").is_err());
    // Every space holds split points, each valid and canonical.
    for layout in DenseLayout::ALL {
        for n in [1, 16, 64, 256] {
            let space = spmm_space(n, layout);
            let split: Vec<_> = space.iter().filter(|v| v.split > 1).collect();
            assert!(!split.is_empty(), "n={n} {layout}");
            for v in split {
                assert_eq!(SpmmVariant::parse(&v.id()).unwrap(), *v);
                assert!(v.vec * v.coarsen <= 4 && v.unroll == 8);
            }
        }
    }
}
