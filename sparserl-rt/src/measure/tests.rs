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
fn tolerances() {
    assert_eq!(tolerance(ValueType::F32), 1e-5);
    assert_eq!(tolerance(ValueType::F64), 1e-12);
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
fn default_options() {
    let o = MeasureOptions::default();
    assert_eq!((o.warmup, o.reps, o.x_copies), (5, 50, 0));
    assert!(o.max_seconds > 0.0);
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
fn failed_measurement_is_not_correct() {
    let m = Measurement::failed(Variant::FALLBACK, ValueType::F32, 1.0, "x".into());
    assert!(!m.correct);
    assert_eq!(m.reps, 0);
    assert!(m.median_us.is_infinite());
}
