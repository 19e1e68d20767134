//! Tests of `device`.

use super::*;
use crate::csr::CsrError;

#[test]
fn gpu_new_reports_exactly_what_is_missing() {
    match (driver_present(), Gpu::new(0)) {
        (false, Err(RtError::NoDriver)) => {}
        (false, r) => panic!("no driver library, yet Gpu::new(0) gave {r:?}"),
        (
            true,
            Err(RtError::NoDevice {
                ordinal: 0,
                count: 0,
            }),
        ) => {}
        (true, Ok(gpu)) => {
            let (major, minor) = gpu.compute_capability();
            assert!(major >= 1, "compute capability {major}.{minor}");
            assert_eq!(gpu.arch(), format!("sm_{major}{minor}"));
            assert!(gpu.sm_count() >= 1 && gpu.l2_bytes() > 0);
        }
        (true, r) => panic!("driver present, yet Gpu::new(0) gave {r:?}"),
    }
    // An ordinal past any machine's devices: the ordinal comes back.
    match Gpu::new(1 << 20) {
        Err(RtError::NoDriver) => assert!(!driver_present()),
        Err(RtError::NoDevice { ordinal, count }) => {
            assert_eq!(ordinal, 1 << 20);
            assert!(count < ordinal);
        }
        r => panic!("ordinal 2^20 gave {r:?}"),
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
    // Two Gpus of one device: another stream each. Needs a GPU.
    let (Ok(mine), Ok(theirs)) = (Gpu::new(0), Gpu::new(0)) else {
        eprintln!("operands_of_another_stream_are_refused: skipped (no GPU)");
        return;
    };
    let mut v = DeviceVec::<f32>::zeros(&mine, 8).unwrap();
    let err = crate::ops::fill(&theirs, &mut v, 1.0).unwrap_err();
    assert!(
        matches!(err, RtError::ForeignOperand { what: "x" }),
        "{err}"
    );
    assert!(err.to_string().contains("belongs to another Gpu"), "{err}");
    assert!(matches!(
        v.to_host(&theirs),
        Err(RtError::ForeignOperand { .. })
    ));
    // Not run: the vector is still zero; a clone of its own Gpu is accepted.
    crate::ops::fill(&mine.clone(), &mut v, 2.0).unwrap();
    assert_eq!(v.to_host(&mine).unwrap(), vec![2.0; 8]);
    let a = Csr::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap();
    let m = DeviceCsr::<f32>::upload(&mine, &a).unwrap();
    assert!(m.same_stream(&mine) && !m.same_stream(&theirs));
    assert!(matches!(
        m.check_gpu(&theirs),
        Err(RtError::ForeignOperand { what: "the matrix" })
    ));
}

#[test]
fn scalar_conversions() {
    assert_eq!(f32::from_f64(0.1).to_f64(), 0.1f32 as f64);
    assert_eq!(f64::from_f64(0.1), 0.1);
    assert_eq!(<f32 as Scalar>::TYPE, ValueType::F32);
    assert_eq!(<f64 as Scalar>::TYPE, ValueType::F64);
}
