//! The one dense solver of the record picks' regressions: their normal
//! equations (a Gram matrix plus a ridge penalty) are symmetric positive
//! definite, so a Cholesky factorisation solves them.

/// Solves `a x = b` for a symmetric positive definite `a` (row-major,
/// `b.len()` square) by Cholesky factorisation; `None` if it is not
/// positive definite.
pub fn cholesky_solve(mut a: Vec<f64>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    // Lower factor in place: a = L Lᵀ.
    for j in 0..n {
        let (done, rest) = a.split_at_mut(j * n);
        let row_j = &mut rest[..n];
        for k in 0..j {
            let row_k = &done[k * n..k * n + n];
            let s: f64 = row_j[..k].iter().zip(&row_k[..k]).map(|(x, y)| x * y).sum();
            row_j[k] = (row_j[k] - s) / row_k[k];
        }
        let d = row_j[j] - row_j[..j].iter().map(|x| x * x).sum::<f64>();
        if d <= 0.0 || !d.is_finite() {
            return None;
        }
        row_j[j] = d.sqrt();
    }
    for i in 0..n {
        let s: f64 = (0..i).map(|k| a[i * n + k] * b[k]).sum();
        b[i] = (b[i] - s) / a[i * n + i];
    }
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[k * n + i] * b[k]).sum();
        b[i] = (b[i] - s) / a[i * n + i];
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_solves_a_positive_definite_system() {
        // [[4, 2], [2, 3]] x = [2, 5] has x = [-0.5, 2].
        let x =
            cholesky_solve(vec![4.0, 2.0, 2.0, 3.0], vec![2.0, 5.0]).expect("positive definite");
        assert!(
            (x[0] + 0.5).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12,
            "{x:?}"
        );
        let x = cholesky_solve(vec![2.0, 1.0, 1.0, 3.0], vec![3.0, 5.0]).expect("regular");
        assert!((x[0] - 0.8).abs() < 1e-12 && (x[1] - 1.4).abs() < 1e-12);
    }

    #[test]
    fn an_indefinite_or_singular_system_has_no_solution() {
        assert!(cholesky_solve(vec![1.0, 2.0, 2.0, 1.0], vec![1.0, 1.0]).is_none());
        assert!(cholesky_solve(vec![1.0, 2.0, 2.0, 4.0], vec![1.0, 2.0]).is_none());
    }
}
