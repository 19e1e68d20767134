//! CPU tests of the large path: offset choice, size and element errors,
//! row statistics, the variant table, the merge-path partition (a host
//! model of the kernel's walk) and the NVRTC compile of `spmv64.cu`.

use super::host::check_sizes;
use super::kernels;
use super::*;
use crate::variant::ValueType;

#[test]
fn offset_width_is_chosen_by_nonzeros() {
    assert_eq!(OffsetWidth::for_nnz(0), OffsetWidth::U32);
    assert_eq!(OffsetWidth::for_nnz((1 << 31) - 1), OffsetWidth::U32);
    assert_eq!(OffsetWidth::for_nnz(1 << 31), OffsetWidth::U64);
    assert_eq!(OffsetWidth::for_nnz(u64::MAX), OffsetWidth::U64);
    assert_eq!(OffsetWidth::U32.bytes(), 4);
    assert_eq!(OffsetWidth::U64.bytes(), 8);
    // An R-MAT graph of scale 28 with 16 edges per vertex: 64-bit offsets,
    // (2^28 + 1) 8 + nnz (4 + 4) bytes on the device for f32.
    let (rows, nnz) = (1u64 << 28, 16u64 << 28);
    assert_eq!(
        DeviceLargeCsr::<f32>::bytes_for(rows, nnz),
        (rows + 1) * 8 + nnz * 8
    );
    assert_eq!(
        DeviceLargeCsr::<f64>::bytes_for(1000, 5000),
        1001 * 4 + 5000 * 12
    );
}

#[test]
fn valid_parts_are_borrowed_with_either_width() {
    let (ip32, ip64) = (vec![0u32, 2, 2, 3], vec![0u64, 2, 2, 3]);
    let (ix, vs) = (vec![0u32, 3, 1], vec![1.0f32, 2.0, 3.0]);
    let a = LargeCsr::try_from_parts(3, 4, &ip32, &ix, &vs).unwrap();
    let b = LargeCsr::try_from_parts(3, 4, &ip64, &ix, &vs).unwrap();
    assert_eq!((a.rows(), a.cols(), a.nnz()), (3, 4, 3));
    assert!(std::ptr::eq(a.indices(), b.indices()), "no copy");
    assert_eq!(b.row_range(1), Some(2..2));
    assert_eq!(b.row_range(3), None);
    let x = [1.0f32, -1.0, 0.5, 2.0];
    assert_eq!(b.row_dot_f64(0, &x).unwrap(), (1.0 + 4.0, 5.0));
    assert_eq!(b.row_dot_f64(2, &x).unwrap(), (-3.0, 3.0));
    assert!(matches!(
        b.row_dot_f64(3, &x),
        Err(LargeCsrError::Operand { .. })
    ));
    assert!(matches!(
        b.row_dot_f64(0, &x[..3]),
        Err(LargeCsrError::Operand { .. })
    ));
}

#[test]
fn size_errors_come_before_any_element_is_read() {
    let none: [u64; 0] = [];
    assert_eq!(
        LargeCsr::<u64, f32>::try_from_parts(0, 3, &none, &[], &[]).unwrap_err(),
        LargeCsrError::Empty { rows: 0, cols: 3 }
    );
    let big = (MAX_DIM + 1) as usize;
    assert!(matches!(
        check_sizes::<u64>(big, 1, big + 1, 0, 0),
        Err(LargeCsrError::DimensionTooLarge { .. })
    ));
    assert!(matches!(
        check_sizes::<u64>(1, big, 2, 0, 0),
        Err(LargeCsrError::DimensionTooLarge { .. })
    ));
    // u32 row pointers cannot count 2^32 nonzeros; u64 ones can.
    let past = 1usize << 32;
    assert_eq!(
        check_sizes::<u32>(1, 1, 2, past, past),
        Err(LargeCsrError::OffsetsTooNarrow { nnz: past })
    );
    assert_eq!(check_sizes::<u64>(1, 1, 2, past, past), Ok(()));
    assert_eq!(
        check_sizes::<u64>(2, 2, 2, 0, 0),
        Err(LargeCsrError::IndptrLength {
            expected: 3,
            found: 2
        })
    );
    assert!(matches!(
        check_sizes::<u64>(1, 2, 2, 2, 1),
        Err(LargeCsrError::NnzMismatch { .. })
    ));
}

#[test]
fn element_errors_name_the_row() {
    let vs = [1.0f64; 4];
    let e = |ip: &[u64], ix: &[u32]| {
        LargeCsr::try_from_parts(ip.len() - 1, 3, ip, ix, &vs[..ix.len()]).unwrap_err()
    };
    assert_eq!(
        e(&[1, 1, 2], &[0, 1]),
        LargeCsrError::IndptrNotMonotone { row: 0 }
    );
    assert_eq!(
        e(&[0, 2, 1, 2], &[0, 1]),
        LargeCsrError::IndptrNotMonotone { row: 1 }
    );
    assert!(matches!(
        e(&[0, 1, 3], &[0, 1]),
        LargeCsrError::NnzMismatch { indptr_last: 3, .. }
    ));
    assert_eq!(
        e(&[0, 1, 2], &[0, 3]),
        LargeCsrError::ColumnOutOfRange {
            row: 1,
            col: 3,
            cols: 3
        }
    );
    assert_eq!(
        e(&[0, 2, 2], &[1, 1]),
        LargeCsrError::UnsortedRow { row: 0 }
    );
    assert_eq!(
        e(&[0, 2, 2], &[2, 1]),
        LargeCsrError::UnsortedRow { row: 0 }
    );
}

/// A diagonal matrix of `n` rows as `(indptr, indices, values)`.
fn diagonal(n: usize) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
    (
        (0..=n as u64).collect(),
        (0..n as u32).collect(),
        vec![1.0; n],
    )
}

#[test]
fn parallel_validation_reports_the_lowest_bad_row() {
    // Several validation chunks; errors planted in a late and an early one.
    let n = 5 << 16;
    let (ip, mut ix, vs) = diagonal(n);
    LargeCsr::try_from_parts(n, n, &ip, &ix, &vs).unwrap();
    ix[n - 10] = n as u32; // out of range, last chunk
    ix[(1 << 16) + 5] = n as u32 + 7; // second chunk
    assert_eq!(
        LargeCsr::try_from_parts(n, n, &ip, &ix, &vs).unwrap_err(),
        LargeCsrError::ColumnOutOfRange {
            row: (1 << 16) + 5,
            col: n as u32 + 7,
            cols: n
        }
    );
}

#[test]
fn row_stats_of_a_small_matrix() {
    let ip = [0u32, 3, 3, 4, 8];
    let ix = [0u32, 1, 2, 0, 0, 1, 2, 3];
    let vs = [1.0f32; 8];
    let a = LargeCsr::try_from_parts(4, 4, &ip, &ix, &vs).unwrap();
    let s = RowStats::of(&a);
    assert_eq!((s.rows, s.nnz, s.max, s.empty), (4, 8, 4, 1));
    assert_eq!(s.mean, 2.0);
    // Lengths 3, 0, 1, 4: variance 26 / 4 - 4 = 2.5.
    assert!((s.cv - 2.5f64.sqrt() / 2.0).abs() < 1e-12);
}

#[test]
fn every_variant_has_an_entry_in_the_source() {
    for v in LargeVariant::SPACE {
        for w in [OffsetWidth::U32, OffsetWidth::U64] {
            for t in [ValueType::F32, ValueType::F64] {
                let e = v.entry(w, t).unwrap();
                assert!(e.contains(&v.id()) && e.contains(w.as_str()) && e.contains(t.as_str()));
            }
        }
    }
    let bad = LargeVariant::Group { lanes: 3 };
    assert!(matches!(bad.validate(), Err(LargeError::InvalidVariant(_))));
    assert!(bad.entry(OffsetWidth::U32, ValueType::F32).is_err());
    assert!(bad.grid(10, 10, 1).is_err());
}

#[test]
fn launch_geometry_covers_scale_28() {
    let (rows, nnz) = (1u64 << 28, 16u64 << 28);
    let merge = LargeVariant::Merge { items: 8 }
        .grid(rows, nnz, 132)
        .unwrap();
    let threads = merge.grid_dim.0 as u64 * kernels::BLOCK as u64;
    assert!(threads * 8 >= rows + nnz);
    let group = LargeVariant::Group { lanes: 32 }
        .grid(rows, nnz, 132)
        .unwrap();
    assert_eq!(group.grid_dim.0, 132 * 32, "grid-stride, capped");
    let nnz8 = LargeVariant::NnzSplit { items: 8 }
        .grid(rows, nnz, 132)
        .unwrap();
    assert!(nnz8.grid_dim.0 as u64 * kernels::BLOCK as u64 * 8 >= nnz);
    let stream = LargeVariant::Stream { tile: 1024 }
        .grid(rows, nnz, 132)
        .unwrap();
    assert_eq!(stream.grid_dim.0 as u64, nnz / 1024, "one block per tile");
    let tiny = LargeVariant::Group { lanes: 1 }.grid(1, 0, 132).unwrap();
    assert_eq!(tiny.grid_dim.0, 1);
}

/// What a kernel model returns: per row, stores, atomic adds, and `y`.
type Replay = (Vec<u32>, Vec<u32>, Vec<u64>);

/// The merge-path kernel's partition and walk, replayed on the host:
/// `(stored, added)` per row, and `y` with every nonzero worth 1 (so that
/// `y[r]` must come out as row `r`'s length).
fn merge_model(ip: &[u64], items: u64) -> Replay {
    let rows = ip.len() as u64 - 1;
    let nnz = ip[rows as usize];
    let total = rows + nnz;
    let split = |d: u64, mut lo: u64, mut hi: u64| {
        while lo < hi {
            let p = (lo + hi) / 2;
            if ip[p as usize + 1] < d - p {
                lo = p + 1;
            } else {
                hi = p;
            }
        }
        lo
    };
    let full = |d: u64| split(d, d.saturating_sub(nnz), d.min(rows));
    let n = rows as usize;
    let (mut stored, mut added, mut y) = (vec![0u32; n], vec![0u32; n], vec![0u64; n]);
    let threads = total.div_ceil(items);
    for t in 0..threads {
        let lane = t % 32;
        let wd0 = (t - lane) * items;
        let wd1 = (wd0 + 32 * items).min(total);
        let (row_lo, row_hi) = (full(wd0), full(wd1));
        let d0 = t * items;
        let mut row = split(
            d0,
            row_lo.max(d0.saturating_sub(nnz)),
            row_hi.min(d0.min(rows)),
        );
        assert_eq!(row, full(d0), "narrowed search of thread {t}");
        let d1 = (d0 + items).min(total);
        let row1 = full(d1); // the next lane's start (lane 31: the warp's end)
        let (k0, k1) = (d0 - row, d1 - row1);
        assert!(k1 - k0 <= items);
        if row >= rows {
            continue;
        }
        let mut owned = k0 == ip[row as usize];
        let (mut touched, mut acc) = (false, 0u64);
        let mut flush = |row: u64, owned: bool, touched: bool, acc: u64| {
            if owned {
                stored[row as usize] += 1;
                y[row as usize] = acc;
            } else if touched {
                added[row as usize] += 1;
                y[row as usize] += acc;
            }
        };
        for k in k0..k1 {
            while k >= ip[row as usize + 1] {
                flush(row, owned, touched, acc);
                (acc, touched, owned) = (0, false, true);
                row += 1;
            }
            acc += 1;
            touched = true;
        }
        while row < row1 {
            flush(row, owned, touched, acc);
            (acc, touched, owned) = (0, false, true);
            row += 1;
        }
        if touched {
            added[row as usize] += 1;
            y[row as usize] += acc;
        }
    }
    (stored, added, y)
}

/// The nonzero-split kernel replayed on the host (lanes of 32, the
/// segmented reduction as one add per row and warp): `(stored, added, y)`
/// as [`merge_model`].
fn nnz_model(ip: &[u64], items: u64) -> Replay {
    let n = ip.len() - 1;
    let nnz = ip[n];
    let row_of = |k: u64| ip.partition_point(|&p| p <= k) - 1; // last r with ip[r] <= k
    let (mut stored, mut added, mut y) = (vec![0u32; n], vec![0u32; n], vec![0u64; n]);
    let lanes = nnz.div_ceil(items);
    for w0 in (0..lanes).step_by(32) {
        // (final row, partial) of each active lane of the warp.
        let mut finals: Vec<(usize, u64)> = Vec::new();
        for t in w0..(w0 + 32).min(lanes) {
            let (begin, end) = (t * items, (t * items + items).min(nnz));
            let mut row = row_of(begin);
            let mut own = ip[row] == begin;
            let mut sum = 0u64;
            for k in begin..end {
                if k >= ip[row + 1] {
                    if own {
                        stored[row] += 1;
                        y[row] = sum;
                    } else {
                        added[row] += 1;
                        y[row] += sum;
                    }
                    (own, sum) = (true, 0);
                    while k >= ip[row + 1] {
                        row += 1;
                    }
                }
                sum += 1;
            }
            finals.push((row, sum));
        }
        for (i, &(row, _)) in finals.iter().enumerate() {
            if i + 1 == finals.len() || finals[i + 1].0 != row {
                let seg: u64 = finals[..=i]
                    .iter()
                    .rev()
                    .take_while(|f| f.0 == row)
                    .map(|f| f.1)
                    .sum();
                added[row] += 1;
                y[row] += seg;
            }
        }
    }
    (stored, added, y)
}

/// The stream kernel replayed on the host: tiles of `tile` nonzeros, the
/// rows of each tile's first to last nonzero, a row stored when the tile
/// holds it whole, else added (short and listed long rows alike):
/// `(stored, added, y)` as [`merge_model`].
fn stream_model(ip: &[u64], tile: u64) -> Replay {
    let n = ip.len() - 1;
    let nnz = ip[n];
    let row_of = |k: u64| ip.partition_point(|&p| p <= k) - 1;
    let (mut stored, mut added, mut y) = (vec![0u32; n], vec![0u32; n], vec![0u64; n]);
    for kb in (0..nnz).step_by(tile as usize) {
        let ke = (kb + tile).min(nnz);
        let (r0, r1) = (row_of(kb), row_of(ke - 1));
        assert!(r1 - r0 < tile as usize, "at most tile rows with nonzeros");
        for r in r0..=r1 {
            let (a, b) = (ip[r].max(kb), ip[r + 1].min(ke));
            if b <= a {
                continue;
            }
            if ip[r] >= kb && ip[r + 1] <= ke {
                stored[r] += 1;
                y[r] = b - a;
            } else {
                added[r] += 1;
                y[r] += b - a;
            }
        }
    }
    (stored, added, y)
}

#[test]
fn merge_and_nnz_split_store_each_row_once_or_only_add_to_it() {
    // Empty rows (leading, inner, trailing), a long row spanning many
    // threads, short rows, at every item count.
    let lens = [0u64, 0, 3, 1, 0, 700, 2, 0, 0, 5, 1, 1, 1, 40, 0, 0];
    let mut ip = vec![0u64];
    for l in lens.iter().cycle().take(200) {
        ip.push(ip.last().unwrap() + l);
    }
    let models = [
        ("merge8", merge_model(&ip, 8)),
        ("merge16", merge_model(&ip, 16)),
        ("nnz8", nnz_model(&ip, 8)),
        ("stream1024", stream_model(&ip, 1024)),
        ("stream16", stream_model(&ip, 16)),
    ];
    for (name, (stored, added, y)) in models {
        for r in 0..stored.len() {
            let len = ip[r + 1] - ip[r];
            assert_eq!(y[r], len, "{name}: row {r} sums its nonzeros");
            // A row is stored by exactly one thread, or cut: never stored,
            // added by the threads that hold its nonzeros (y cleared first).
            match (stored[r], added[r]) {
                (1, 0) | (0, 0) if len == 0 => {}
                (1, 0) => {}
                (0, a) => assert!(a >= 1 && len > 0, "{name}: row {r}: {a} adds"),
                other => panic!("{name}: row {r} (length {len}): {other:?}"),
            }
        }
    }
}

#[cfg(feature = "jit")]
#[test]
fn spmv64_compiles_for_sm_90() {
    let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
    let toolkit = match crate::nvrtc::locate() {
        Ok(t) => t,
        Err(e) if require => panic!("SPARSERL_REQUIRE_CUDA=1 but {e}"),
        Err(e) => {
            eprintln!("spmv64.cu: SKIPPED (no NVRTC)\n{e}");
            return;
        }
    };
    let ptx = crate::nvrtc::compile_ptx(SOURCE, "sm_90", &[]).unwrap();
    for v in LargeVariant::SPACE {
        for w in [OffsetWidth::U32, OffsetWidth::U64] {
            for t in [ValueType::F32, ValueType::F64] {
                let e = v.entry(w, t).unwrap();
                assert!(ptx.contains(&format!(".entry {e}(")), "{e} missing");
            }
        }
    }
    for e in [
        "sparserl_large_widen_u32",
        "sparserl_large_widen_u64",
        "sparserl_large_scale_f32",
        "sparserl_large_axpb_f64",
    ] {
        assert!(ptx.contains(&format!(".entry {e}(")), "{e} missing");
    }
    // 64-bit row pointers are read as 64-bit loads.
    assert!(ptx.contains("ld.global.nc.u64") || ptx.contains("ld.global.u64"));
    if toolkit.ptxas.is_some() {
        let report = crate::nvrtc::ptxas_check(&ptx, "sm_90").unwrap();
        assert_eq!(report.total_spill_bytes(), 0, "{}", report.log);
    }
}
