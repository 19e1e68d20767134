//! Tests of `device`.

use super::*;
use crate::csr::CsrError;

#[test]
fn gpu_new_without_driver_is_an_error_not_a_panic() {
    match Gpu::new(0) {
        Err(RtError::NoDriver) | Err(RtError::NoDevice { .. }) => {}
        Err(e) => panic!("unexpected error: {e}"),
        // A machine with a GPU: opening it is fine too.
        Ok(gpu) => assert!(gpu.arch().starts_with("sm_")),
    }
}

#[test]
fn validate_raw_accepts_valid_and_empty_rows() {
    validate_raw(3, 4, &[0, 2, 2, 3], &[0, 3, 1], 3).unwrap();
    validate_raw(2, 2, &[0, 0, 0], &[], 0).unwrap();
}

#[test]
fn validate_raw_rejects_bad_arrays() {
    assert!(matches!(
        validate_raw(1, 2, &[0, 1], &[2], 1),
        Err(RtError::Csr(CsrError::ColumnOutOfRange {
            row: 0,
            col: 2,
            ..
        }))
    ));
    assert!(matches!(
        validate_raw(1, 3, &[0, 2], &[2, 1], 2),
        Err(RtError::Csr(CsrError::UnsortedRow { row: 0 }))
    ));
    assert!(matches!(
        validate_raw(1, 3, &[0, 2], &[1, 1], 2),
        Err(RtError::Csr(CsrError::UnsortedRow { row: 0 }))
    ));
    assert!(matches!(
        validate_raw(2, 3, &[0, 1], &[0], 1),
        Err(RtError::Csr(CsrError::IndptrLength {
            expected: 3,
            found: 2
        }))
    ));
    assert!(matches!(
        validate_raw(2, 3, &[0, 2, 1], &[0, 1], 2),
        Err(RtError::Csr(CsrError::IndptrNotMonotone { row: 1 }))
    ));
    assert!(matches!(
        validate_raw(1, 3, &[0, 2], &[0, 1], 1),
        Err(RtError::Csr(CsrError::NnzMismatch { .. }))
    ));
}

#[test]
fn validate_raw_rejects_empty_matrix() {
    assert!(matches!(
        validate_raw(0, 3, &[0], &[], 0),
        Err(RtError::EmptyMatrix { rows: 0, cols: 3 })
    ));
    assert!(matches!(
        validate_raw(2, 0, &[0, 0, 0], &[], 0),
        Err(RtError::EmptyMatrix { rows: 2, cols: 0 })
    ));
}

#[test]
fn operands_of_another_stream_are_refused() {
    let mine = Arc::new(7u8);
    let theirs = Arc::new(7u8); // equal value, another object
    assert!(same_owner(&mine, &mine.clone(), "x").is_ok());
    let err = same_owner(&mine, &theirs, "x").unwrap_err();
    assert!(matches!(err, RtError::ForeignOperand { what: "x" }));
    assert!(err.to_string().contains("belongs to another Gpu"), "{err}");
}

#[test]
fn scalar_conversions() {
    assert_eq!(f32::from_f64(0.1).to_f64(), 0.1f32 as f64);
    assert_eq!(f64::from_f64(0.1), 0.1);
    assert_eq!(<f32 as Scalar>::TYPE, ValueType::F32);
    assert_eq!(<f64 as Scalar>::TYPE, ValueType::F64);
}
