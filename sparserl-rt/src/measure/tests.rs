//! Tests of `measure`.

use super::*;

#[test]
fn short_launches_are_timed_in_groups() {
    assert_eq!(group_size(100.0), 1);
    assert_eq!(group_size(SHORT_LAUNCH_US), 1);
    assert_eq!(group_size(10.0), 10);
    assert_eq!(group_size(4.0), 25);
    assert_eq!(group_size(0.5), MAX_GROUP);
    assert_eq!(group_size(19.0), 6);
    assert_eq!(group_size(f64::NAN), 1);
    assert_eq!(group_size(0.0), 1);
}

#[test]
fn a_faster_graph_probe_decides_the_group() {
    // Host-bound back to back (24 us), 10 us as graph replays: grouped.
    assert_eq!(probed_us(24.0, Some(10.0)), 10.0);
    assert_eq!(group_size(probed_us(24.0, Some(10.0))), 10);
    // No graph (the launch could not be captured) or a slower one: direct.
    assert_eq!(probed_us(24.0, None), 24.0);
    assert_eq!(probed_us(24.0, Some(30.0)), 24.0);
    assert_eq!(probed_us(24.0, Some(f64::NAN)), 24.0);
    assert_eq!(probed_us(24.0, Some(0.0)), 24.0);
}

/// A seeded matrix of mixed row lengths (1..=60, one empty row) and values
/// of mixed sign, with an `x` in [-1, 1).
fn mixed_matrix() -> (Csr, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 400;
    let mut t = Vec::new();
    for r in 1..n {
        for _ in 0..rng.random_range(1..=60) {
            t.push((
                r as u32,
                rng.random_range(0..n) as u32,
                rng.random_range(-1.0..1.0),
            ));
        }
    }
    let a = Csr::from_triplets(n, n, &t).unwrap();
    let x: Vec<f32> = random_x(&mut rng, n);
    (a, x.iter().map(|v| f64::from(*v)).collect())
}

/// `A x` as a float kernel computes it: values rounded to `f32`, products
/// and row sums in `f32`; `drop` leaves out the first term of that row.
fn spmv_f32(a: &Csr, x: &[f64], drop: Option<usize>) -> Vec<f64> {
    (0..a.rows())
        .map(|r| {
            let (lo, hi) = (a.indptr()[r] as usize, a.indptr()[r + 1] as usize);
            let first = if drop == Some(r) { lo + 1 } else { lo };
            (first..hi)
                .map(|k| a.values()[k] as f32 * x[a.indices()[k] as usize] as f32)
                .sum::<f32>() as f64
        })
        .collect()
}

#[test]
fn tolerances_pass_rounding_and_fail_wrong_results() {
    let (a, x) = mixed_matrix();
    let (want, mag) = (a.spmv_f64(&x).unwrap(), row_magnitudes(&a, &x));
    let check = |y: &[f64], v| row_errors(y, &want, &mag).max <= tolerance(v);
    // A correct float kernel passes the f32 tolerance, not the f64 one.
    let f32_result = spmv_f32(&a, &x, None);
    assert!(check(&f32_result, ValueType::F32));
    assert!(!check(&f32_result, ValueType::F64));
    // A correct double kernel summing in another order passes the f64 one.
    let reversed: Vec<f64> = (0..a.rows())
        .map(|r| {
            let (lo, hi) = (a.indptr()[r] as usize, a.indptr()[r + 1] as usize);
            (lo..hi)
                .rev()
                .map(|k| a.values()[k] * x[a.indices()[k] as usize])
                .sum()
        })
        .collect();
    assert!(check(&reversed, ValueType::F64));
    // A float kernel that drops one term of one row fails.
    let row = (1..a.rows()).find(|&r| a.row_len(r) > 40).unwrap();
    assert!(!check(&spmv_f32(&a, &x, Some(row)), ValueType::F32));
}

#[test]
fn a_wrong_small_row_fails_although_the_global_norm_hides_it() {
    // Row 0 of values near 1e6, row 1 near 1e-3: mixed scales.
    let t = [
        (0, 0, 1e6),
        (0, 1, 2e6),
        (1, 0, 1e-3),
        (1, 1, -3e-3),
        (2, 1, 5.0),
    ];
    let a = Csr::from_triplets(3, 2, &t).unwrap();
    let x = [0.5, 0.25];
    let (want, mag) = (a.spmv_f64(&x).unwrap(), row_magnitudes(&a, &x));
    // A kernel that adds row 1's first term twice (a kernel-like bug).
    let mut y = want.clone();
    y[1] += 1e-3 * 0.5;
    let e = row_errors(&y, &want, &mag);
    assert!(e.global < tolerance(ValueType::F32), "global {}", e.global);
    assert!(e.max > tolerance(ValueType::F32), "per row {}", e.max);
    assert_eq!(e.row, 1);
    assert_eq!(e.global, rel_err(&y, &want));
}

#[test]
fn a_cancelling_row_is_measured_against_its_terms() {
    // Row 0 sums to 1e-9 from terms of 1e3: a float kernel errs by about
    // 1e-4 absolute there, far above 1e-5 of the result, yet correct.
    let a = Csr::from_triplets(1, 2, &[(0, 0, 1e3), (0, 1, -1e3 + 1e-9)]).unwrap();
    let x = [1.0, 1.0];
    let (want, mag) = (a.spmv_f64(&x).unwrap(), row_magnitudes(&a, &x));
    let y = spmv_f32(&a, &x, None);
    assert!((y[0] - want[0]).abs() > 1e-5 * want[0].abs());
    assert!(row_errors(&y, &want, &mag).max <= tolerance(ValueType::F32));
}

#[test]
fn empty_rows_must_be_exact_and_non_finite_values_fail() {
    let want = [0.0, 1.0];
    let mag = [0.0, 1.0];
    assert_eq!(row_errors(&[0.0, 1.0], &want, &mag).max, 0.0);
    let e = row_errors(&[1e-30, 1.0], &want, &mag);
    assert_eq!((e.max, e.row), (f64::INFINITY, 0));
    for bad in [f64::NAN, f64::INFINITY] {
        let e = row_errors(&[0.0, bad], &want, &mag);
        assert_eq!((e.max, e.row), (f64::INFINITY, 1));
    }
    assert_eq!(row_errors(&[0.0], &want, &mag).max, f64::INFINITY);
}

#[test]
fn the_axpby_reference_counts_every_coefficient() {
    let (a, x) = mixed_matrix();
    let (ax, mag) = (a.spmv_f64(&x).unwrap(), row_magnitudes(&a, &x));
    let y0: Vec<f64> = (0..a.rows()).map(|r| (r as f64 * 0.37).sin()).collect();
    let (want, wmag) = axpby_reference(&ax, &mag, CHECK_COEFS, &y0, CHECK_DOT0);
    let [alpha, beta, gamma, gamma_dot] = CHECK_COEFS;
    let kernel = |b: f64, c: f64, cd: f64| -> Vec<f64> {
        let k = c + cd * CHECK_DOT0;
        ax.iter()
            .zip(&y0)
            .map(|(p, y)| alpha * p + b * y + k)
            .collect()
    };
    let pass = |y: &[f64]| row_errors(y, &want, &wmag).max <= tolerance(ValueType::F64);
    assert!(pass(&kernel(beta, gamma, gamma_dot)));
    // An epilogue that drops any one term fails the check.
    assert!(!pass(&kernel(0.0, gamma, gamma_dot)), "beta y ignored");
    assert!(!pass(&kernel(beta, 0.0, gamma_dot)), "gamma ignored");
    assert!(!pass(&kernel(beta, gamma, 0.0)), "gamma_dot dot ignored");
    // An unwritten row keeps its y0 and fails.
    let mut y = kernel(beta, gamma, gamma_dot);
    y[7] = y0[7];
    assert!(!pass(&y));
}

#[test]
fn the_fused_dot_is_checked_against_the_y_written() {
    use crate::scalar::{SCALAR_LEN, SLOT_STRIDE};
    let y = [1.0, 2.0, -3.0];
    let w = [0.5, 0.25, 1.0];
    let mut buf = vec![0.0; SCALAR_LEN];
    buf[0] = CHECK_DOT0; // the published value is not the new partial sums
    buf[SLOT_STRIDE] = -1.0;
    buf[SLOT_STRIDE * 5] = -1.0;
    assert!(check_fused_dot(&buf, &y, &w).is_ok());
    buf[SLOT_STRIDE * 5] = -0.999;
    assert!(matches!(
        check_fused_dot(&buf, &y, &w),
        Err(RtError::FusedScalar { .. })
    ));
}

#[test]
fn rel_err_cases() {
    assert_eq!(rel_err(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    let e = rel_err(&[3.0, 4.0 + 5e-6], &[3.0, 4.0]);
    assert!((e - 1e-6).abs() < 1e-12, "{e}");
    // Zero reference: absolute error.
    assert_eq!(rel_err(&[0.0, 0.5], &[0.0, 0.0]), 0.5);
    assert_eq!(rel_err(&[0.0], &[0.0]), 0.0);
    assert_eq!(rel_err(&[f64::NAN, 1.0], &[1.0, 1.0]), f64::INFINITY);
    assert_eq!(rel_err(&[f64::INFINITY], &[1.0]), f64::INFINITY);
    assert_eq!(rel_err(&[1.0], &[1.0, 2.0]), f64::INFINITY);
    assert_eq!(rel_err(&[], &[]), 0.0);
}

#[test]
fn stats_percentiles() {
    assert_eq!(stats(&[]), None);
    let s = stats(&[5.0]).unwrap();
    assert_eq!((s.median, s.p10, s.p90), (5.0, 5.0, 5.0));
    let s = stats(&[4.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(s.median, 2.5);
    let data: Vec<f64> = (0..=10).rev().map(|v| v as f64).collect();
    let s = stats(&data).unwrap();
    assert_eq!((s.median, s.p10, s.p90), (5.0, 1.0, 9.0));
    let s = stats(&[f64::NAN, 2.0, 4.0]).unwrap();
    assert_eq!(s.median, 3.0);
}

#[test]
fn copies_rotate_only_when_the_working_set_fits_in_l2() {
    let o = MeasureOptions::default();
    assert_eq!(o.copies_for(1 << 20, 50 << 20), 8);
    assert_eq!(o.copies_for(50 << 20, 50 << 20), 8);
    assert_eq!(o.copies_for((50 << 20) + 1, 50 << 20), 1);
    let fixed = MeasureOptions { x_copies: 3, ..o };
    assert_eq!(fixed.copies_for(1, 1 << 30), 3);
    assert_eq!(fixed.copies_for(1 << 40, 1), 3);
}

#[test]
fn random_x_is_seeded_and_in_range() {
    let mut a = ChaCha8Rng::seed_from_u64(1);
    let mut b = ChaCha8Rng::seed_from_u64(1);
    let xa: Vec<f32> = random_x(&mut a, 100);
    let xb: Vec<f32> = random_x(&mut b, 100);
    assert_eq!(xa, xb);
    assert!(xa.iter().all(|v| (-1.0..=1.0).contains(v)));
}

#[test]
fn a_check_above_tolerance_or_not_a_number_fails_and_stays_failed() {
    let v = Variant::FALLBACK;
    let tol = tolerance(ValueType::F32);
    assert!(out_of_tolerance(&v, ValueType::F32, tol).is_none());
    assert!(out_of_tolerance(&v, ValueType::F32, 0.0).is_none());
    for bad in [tol * 1.01, f64::NAN, f64::INFINITY] {
        let m = out_of_tolerance(&v, ValueType::F32, bad).expect("must fail");
        assert!(!m.correct && m.gbs == 0.0 && m.reps == 0);
        assert!(m.error.as_deref().unwrap().contains("above tolerance"));
        // Through a log file and back: still failed, still never timed.
        let back: Measurement = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert!(!back.correct);
        assert!(back.median_us.is_infinite() && back.p10_us.is_infinite());
    }
    // An error fine for f32 fails a double kernel.
    assert!(out_of_tolerance(&v, ValueType::F64, tol).is_some());
}
