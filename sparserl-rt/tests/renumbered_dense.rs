//! The rows of dense matrices between the two numberings of a renumbered
//! matrix (`DeviceCsr::dense_to_internal` / `dense_to_user`), on the device,
//! against the permutation computed on the host: both layouts, padded
//! leading dimensions, f32 and f64, round trips, and the given order.
//!
//! They need a GPU: without one each test prints why it did not run and
//! returns. On a GPU machine run
//! `cargo test -p sparserl-rt --release --test renumbered_dense`.

use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::reorder::Reorder;
use sparserl_rt::{Csr, DeviceCsr, Gpu, Layouts, Scalar};

mod common;
use common::gpu_or_skip;

/// A symmetric banded pattern numbered at random: renumbering moves rows.
fn shuffled_band(n: usize) -> Csr {
    let perm: Vec<usize> = (0..n).map(|i| (i * 7919 + 13) % n).collect();
    let mut t = Vec::new();
    for i in 0..n {
        for d in 0..3 {
            let j = (i + d) % n;
            t.push((perm[i] as u32, perm[j] as u32, 1.0 + d as f64));
            t.push((perm[j] as u32, perm[i] as u32, 1.0 + d as f64));
        }
    }
    Csr::from_triplets(n, n, &t).unwrap()
}

/// Packed host values of a `rows x cols` matrix: element (i, j) is i + j / 1000.
fn values<T: Scalar>(rows: usize, cols: usize, layout: DenseLayout) -> Vec<T> {
    let mut v = vec![T::from_f64(0.0); rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            v[layout.index(i, j, layout.packed_ld(rows, cols))] =
                T::from_f64(i as f64 + j as f64 / 1000.0);
        }
    }
    v
}

fn check_layout<T: Scalar>(gpu: &Gpu, reorder: Reorder, layout: DenseLayout) {
    let (n, cols) = (1000, 5);
    let a = shuffled_band(n);
    let m = DeviceCsr::<T>::upload_with(
        gpu,
        &a,
        Layouts {
            reorder,
            ..Layouts::NONE
        },
    )
    .unwrap();
    assert_eq!(m.renumbering(), reorder);
    let new_to_old: Vec<usize> = match reorder.permutation(&a) {
        Some(p) => p.new_to_old().iter().map(|&v| v as usize).collect(),
        None => (0..n).collect(),
    };
    let x = DeviceDense::from_host(gpu, n, cols, layout, &values::<T>(n, cols, layout)).unwrap();
    // A padded output: its leading dimension differs from the input's.
    let ld = layout.packed_ld(n, cols) + 3;
    let mut xi = DeviceDense::<T>::zeros_with_ld(gpu, n, cols, layout, ld).unwrap();
    m.dense_to_internal(gpu, &x, &mut xi).unwrap();
    let got = xi.to_host(gpu).unwrap();
    let packed = layout.packed_ld(n, cols);
    for (i, &old) in new_to_old.iter().enumerate() {
        for j in 0..cols {
            let want = old as f64 + j as f64 / 1000.0;
            let v = got[layout.index(i, j, packed)].to_f64();
            assert!(
                (v - want).abs() < 1e-3,
                "row {i} col {j}: {v} (want {want})"
            );
        }
    }
    let mut back = DeviceDense::<T>::zeros(gpu, n, cols, layout).unwrap();
    m.dense_to_user(gpu, &xi, &mut back).unwrap();
    let f64s = |d: &DeviceDense<T>| -> Vec<f64> {
        d.to_host(gpu).unwrap().into_iter().map(T::to_f64).collect()
    };
    assert_eq!(f64s(&back), f64s(&x), "a round trip gives X back");
}

#[test]
fn dense_rows_follow_the_permutation_in_both_layouts_and_types() {
    let Some(gpu) = gpu_or_skip("dense_rows_follow_the_permutation") else {
        return;
    };
    for reorder in [Reorder::Rcm, Reorder::Degree, Reorder::None] {
        for layout in DenseLayout::ALL {
            check_layout::<f32>(&gpu, reorder, layout);
            check_layout::<f64>(&gpu, reorder, layout);
        }
    }
}

#[test]
fn wrong_shapes_and_foreign_operands_are_errors() {
    let Some(gpu) = gpu_or_skip("wrong_shapes_and_foreign_operands_are_errors") else {
        return;
    };
    let a = shuffled_band(100);
    let m = DeviceCsr::<f32>::upload_with(
        &gpu,
        &a,
        Layouts {
            reorder: Reorder::Rcm,
            ..Layouts::NONE
        },
    )
    .unwrap();
    let x = DeviceDense::<f32>::zeros(&gpu, 100, 4, DenseLayout::RowMajor).unwrap();
    let mut short = DeviceDense::<f32>::zeros(&gpu, 99, 4, DenseLayout::RowMajor).unwrap();
    assert!(m.dense_to_internal(&gpu, &x, &mut short).is_err());
    let mut cm = DeviceDense::<f32>::zeros(&gpu, 100, 4, DenseLayout::ColMajor).unwrap();
    assert!(m.dense_to_user(&gpu, &x, &mut cm).is_err());
    let other = Gpu::new(0).unwrap();
    let mut foreign = DeviceDense::<f32>::zeros(&other, 100, 4, DenseLayout::RowMajor).unwrap();
    assert!(m.dense_to_internal(&gpu, &x, &mut foreign).is_err());
}
