//! GPU checks of the fused epilogues and of CUDA-graph replay: every
//! variant that fuses, with every epilogue, on matrices that exercise every
//! layout, against a float64 reference (the vector and the fused scalar).

use super::kernel;
use anyhow::{Result, bail};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sparserl_rt::{
    Coef, Csr, DeviceCoefs, DeviceScalar, DeviceVec, Epilogue, Fused, Gpu, Scalar, SpmvKernel,
    Variant, ops, synth,
};

/// Counts of one fused check run.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct FusedCheck {
    /// (variant, epilogue, matrix, value) combinations checked.
    pub checked: usize,
    /// Of those, passed.
    pub passed: usize,
    /// The first failures (at most 20), described.
    pub failures: Vec<String>,
    /// Largest relative error of y / of the fused dot seen.
    pub max_err_y: f64,
    /// Largest relative error of the fused dot.
    pub max_err_dot: f64,
    /// Whether the graph-replay check passed.
    pub graph_replay: bool,
    /// API misuse tried on the device, each refused with the expected error
    /// (operands of another Gpu, host reads and nested captures inside a
    /// capture, an undeclared epilogue): (what, refused).
    #[serde(default)]
    pub misuse: Vec<(String, bool)>,
    /// Renumbered uploads (see [`renumbered`]): combinations checked.
    #[serde(default)]
    pub renumbered_checked: usize,
    /// Of those, passed.
    #[serde(default)]
    pub renumbered_passed: usize,
}

/// The check matrices: a 2-D stencil (diagonal, narrow), a power-law graph
/// with long rows (binned, tiled), and a matrix with empty rows and one
/// dense row.
pub fn matrices() -> Result<Vec<(String, Csr)>> {
    let mut out = vec![
        ("stencil-2d-96".to_string(), synth::stencil(&[96, 96], 5)?),
        (
            "power-law-20k".to_string(),
            synth::power_law(20_000, 12.0, 1.9, 5)?,
        ),
    ];
    // Rows 0..n: empty every 7th, row 3 dense, others 1..5 entries.
    let n = 3000;
    let mut t = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for i in 0..n {
        if i % 7 == 0 {
            continue;
        }
        let len = if i == 3 { n } else { rng.random_range(1..6) };
        for k in 0..len {
            let j = if i == 3 { k } else { rng.random_range(0..n) };
            t.push((i as u32, j as u32, rng.random_range(-1.0..1.0)));
        }
    }
    out.push(("empty-and-dense-rows".into(), Csr::from_triplets(n, n, &t)?));
    Ok(out)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-30)
}

fn check_one<T: Scalar>(
    gpu: &Gpu,
    k: &kernel::RuntimeKernel<T>,
    a: &Csr,
    out: &mut FusedCheck,
    label: &str,
) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let x: Vec<T> = (0..a.cols())
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let y0: Vec<T> = (0..a.rows())
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let w: Vec<T> = (0..a.rows())
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let ax = a.spmv_f64(&xf);
    let (alpha, beta, gamma) = (1.5, -0.5, 0.25);
    let da = k.upload(gpu, a)?;
    let dx = DeviceVec::from_host(gpu, &x)?;
    let dw = DeviceVec::from_host(gpu, &w)?;
    let coefs = DeviceCoefs::new(gpu, alpha, beta, gamma)?;
    let dot = DeviceScalar::new(gpu)?;
    let tol = sparserl_rt::tolerance(T::TYPE);
    for ep in Epilogue::ALL {
        let mut dy = DeviceVec::from_host(gpu, &y0)?;
        let fused = match ep {
            Epilogue::Axpby => Fused::Axpby { coefs: &coefs },
            Epilogue::Dot => Fused::Dot { w: &dw, dot: &dot },
            Epilogue::AxpbyDot => Fused::AxpbyDot {
                coefs: &coefs,
                w: &dw,
                dot: &dot,
            },
        };
        // Twice: the second run checks that the accumulator and ticket were
        // left zeroed by the first.
        k.spmv_fused(gpu, &da, &dx, &mut dy, fused)?;
        k.spmv_fused(gpu, &da, &dx, &mut dy, fused)?;
        let y = dy.to_host(gpu)?;
        // Expected y after two applications (axpby reads y, so apply twice).
        let mut want: Vec<f64> = y0.iter().map(|v| v.to_f64()).collect();
        for _ in 0..2 {
            for (i, wv) in want.iter_mut().enumerate() {
                *wv = if ep.has_axpby() {
                    alpha * ax[i] + beta * *wv + gamma
                } else {
                    ax[i]
                };
            }
        }
        let yf: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
        let err_y = sparserl_rt::measure::rel_err(&yf, &want);
        let mut err_d = 0.0;
        if ep.has_dot() {
            let got = dot.get(gpu)?;
            // The fused scalar against the float64 dot of the y it wrote.
            let want_d: f64 = yf.iter().zip(&w).map(|(a, b)| a * b.to_f64()).sum();
            err_d = rel(got, want_d);
        }
        out.checked += 1;
        out.max_err_y = out.max_err_y.max(err_y);
        out.max_err_dot = out.max_err_dot.max(err_d);
        // y of f32 after two axpby steps carries two roundings.
        if err_y <= 2.0 * tol && err_d <= 1e-9 && err_y.is_finite() {
            out.passed += 1;
        } else if out.failures.len() < 20 {
            out.failures.push(format!(
                "{label} {ep} {}: rel err y {err_y:.2e}, dot {err_d:.2e}",
                T::TYPE
            ));
        }
    }
    Ok(())
}

/// Captures ten axpys and a dot, replays the graph twice, compares with the
/// host.
fn graph_replay(gpu: &Gpu) -> Result<bool> {
    let n = 100_000;
    let xs: Vec<f64> = (0..n).map(|i| (i % 13) as f64 * 0.25).collect();
    let x = DeviceVec::from_host(gpu, &xs)?;
    let mut y = DeviceVec::<f64>::zeros(gpu, n)?;
    let d = DeviceScalar::new(gpu)?;
    {
        let graph = gpu.capture(|| {
            for _ in 0..10 {
                ops::axpy(gpu, Coef::host(0.5), &x, &mut y)?;
            }
            ops::dot(gpu, &x, &y, &d)
        })?;
        // A host read inside a capture must be refused, not hang or break it.
        let refused = gpu.capture(|| d.get(gpu).map(|_| ()));
        if !matches!(refused, Err(sparserl_rt::RtError::Capturing { .. })) {
            bail!("a host read inside a capture was not refused");
        }
        graph.launch(gpu)?;
        graph.launch(gpu)?;
    }
    let want: f64 = xs.iter().map(|v| v * v * 10.0).sum();
    let y_host = y.to_host(gpu)?;
    let ok_y = y_host
        .iter()
        .zip(&xs)
        .all(|(a, b)| (a - b * 10.0).abs() <= 1e-12 * b.abs().max(1.0));
    Ok(ok_y && rel(d.get(gpu)?, want) <= 1e-12)
}

/// Misuse of the safe API on a real device: each must be refused with the
/// error that names it, and the stream must stay usable afterwards.
fn misuse(gpu: &Gpu) -> Result<Vec<(String, bool)>> {
    use sparserl_rt::RtError;
    let other = Gpu::new(0)?; // same device, another stream
    let a = synth::stencil(&[16, 16], 5)?;
    let k = kernel::build::<f64>("misuse", &Variant::FALLBACK, &[], &gpu.arch())?;
    let da = k.upload(gpu, &a)?;
    let da_other = k.upload(&other, &a)?;
    let x = DeviceVec::from_host(gpu, &vec![1.0f64; a.cols()])?;
    let x_other = DeviceVec::from_host(&other, &vec![1.0f64; a.cols()])?;
    let mut y = DeviceVec::<f64>::zeros(gpu, a.rows())?;
    let d = DeviceScalar::new(gpu)?;
    let d_other = DeviceScalar::new(&other)?;
    let foreign = |r: Result<(), RtError>| matches!(r, Err(RtError::ForeignOperand { .. }));
    let capturing = |r: Result<(), RtError>| matches!(r, Err(RtError::Capturing { .. }));
    let mut out = vec![
        (
            "spmv with a matrix of another Gpu".to_string(),
            foreign(k.spmv(gpu, &da_other, &x, &mut y)),
        ),
        (
            "spmv with x of another Gpu".to_string(),
            foreign(k.spmv(gpu, &da, &x_other, &mut y)),
        ),
        (
            "dot of vectors of two Gpus".to_string(),
            foreign(ops::dot(gpu, &x, &x_other, &d)),
        ),
        (
            "dot into a scalar of another Gpu".to_string(),
            foreign(ops::dot(gpu, &x, &x, &d_other)),
        ),
        (
            "download inside a capture".to_string(),
            capturing(gpu.capture(|| y.to_host(gpu).map(|_| ())).map(|_| ())),
        ),
        (
            "synchronize inside a capture".to_string(),
            capturing(gpu.capture(|| gpu.synchronize()).map(|_| ())),
        ),
        (
            "capture inside a capture".to_string(),
            capturing(
                gpu.capture(|| gpu.capture(|| Ok(())).map(|_| ()))
                    .map(|_| ()),
            ),
        ),
        (
            "allocation inside a capture".to_string(),
            capturing(
                gpu.capture(|| DeviceVec::<f64>::zeros(gpu, 8).map(|_| ()))
                    .map(|_| ()),
            ),
        ),
        (
            "undeclared epilogue".to_string(),
            matches!(
                k.spmv_dot(gpu, &da, &x, &mut y, &d),
                Err(RtError::EpilogueNotGenerated { .. })
            ),
        ),
    ];
    // The stream still works after every refusal.
    k.spmv(gpu, &da, &x, &mut y)?;
    let want = a.spmv_f64(&vec![1.0; a.cols()]);
    let got = y.to_host(gpu)?;
    out.push((
        "stream usable afterwards".to_string(),
        sparserl_rt::measure::rel_err(&got, &want) <= 1e-12,
    ));
    Ok(out)
}

/// Arguments of `fused-check` (what gpu-check and the sanitizer runs call).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the small edge-case matrix (for compute-sanitizer runs).
    #[arg(long)]
    pub small: bool,
    /// Where to write `fused-check.json`.
    #[arg(long, default_value = "target/gpu-check")]
    pub out: std::path::PathBuf,
}

/// `cargo xtask fused-check`: runs [`run`] and writes its JSON; fails when
/// any combination or the graph replay failed.
pub fn command(args: Args) -> Result<()> {
    let gpu = Gpu::new(0).map_err(|e| anyhow::anyhow!("fused-check needs a GPU: {e}"))?;
    let r = run(&gpu, args.small)?;
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(
        args.out.join("fused-check.json"),
        serde_json::to_string_pretty(&r)?,
    )?;
    println!(
        "fused-check: {}/{} passed, graph replay {}",
        r.passed, r.checked, r.graph_replay
    );
    for (what, ok) in &r.misuse {
        println!("fused-check: misuse refused: {what}: {ok}");
    }
    println!(
        "fused-check: renumbered {}/{} passed",
        r.renumbered_passed, r.renumbered_checked
    );
    if r.passed != r.checked
        || r.renumbered_passed != r.renumbered_checked
        || !r.graph_replay
        || r.misuse.iter().any(|m| !m.1)
    {
        bail!("fused-check failed: {:?}", r.failures);
    }
    if !args.small {
        // The build's own check of what it embeds, through the build path.
        for line in super::shipped::run(&args.out.join("shipped-check"), 3.0)? {
            println!("{line}");
        }
    }
    println!("fused-check: done");
    Ok(())
}

/// Runs every check (`small`: the edge-case matrix only); compile work is
/// spread over threads.
pub fn run(gpu: &Gpu, small: bool) -> Result<FusedCheck> {
    let mut out = FusedCheck {
        graph_replay: graph_replay(gpu)?,
        misuse: misuse(gpu)?,
        ..FusedCheck::default()
    };
    eprintln!("fused check: graph replay {}", out.graph_replay);
    let mut mats = matrices()?;
    if small {
        mats.retain(|(n, _)| n == "empty-and-dense-rows");
    }
    renumbered(gpu, &mats, &mut out)?;
    eprintln!(
        "fused check: renumbered {}/{} passed",
        out.renumbered_passed, out.renumbered_checked
    );
    let variants: Vec<Variant> = sparserl_rt::full_space()
        .into_iter()
        .filter(|v| v.strategy.fuses_epilogue())
        .collect();
    for value in [sparserl_rt::ValueType::F32, sparserl_rt::ValueType::F64] {
        let arch = gpu.arch();
        // Compile in parallel, then check on the one stream.
        let built: Vec<Result<(Variant, BuiltKernel)>> = std::thread::scope(|s| {
            let chunks: Vec<&[Variant]> = variants.chunks(variants.len().div_ceil(12)).collect();
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|c| {
                    let arch = arch.clone();
                    s.spawn(move || {
                        c.iter()
                            .map(|v| {
                                let k = match value {
                                    sparserl_rt::ValueType::F32 => BuiltKernel::F32(
                                        kernel::build::<f32>("check", v, &Epilogue::ALL, &arch)?,
                                    ),
                                    sparserl_rt::ValueType::F64 => BuiltKernel::F64(
                                        kernel::build::<f64>("check", v, &Epilogue::ALL, &arch)?,
                                    ),
                                };
                                Ok((*v, k))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for b in built {
            let (v, k) = b?;
            for (name, a) in &mats {
                let label = format!("{} {name}", v.id());
                // Layout variants run only where the matrix has the layout.
                let probe = sparserl_rt::DeviceCsr::<f32>::upload_with(
                    gpu,
                    a,
                    sparserl_rt::Layouts::for_variants(&[v]),
                )?;
                if !probe.has_layout(v.strategy) {
                    continue;
                }
                drop(probe);
                match &k {
                    BuiltKernel::F32(k) => check_one(gpu, k, a, &mut out, &label)?,
                    BuiltKernel::F64(k) => check_one(gpu, k, a, &mut out, &label)?,
                }
            }
        }
        eprintln!(
            "fused check {value}: {}/{} passed so far",
            out.passed, out.checked
        );
    }
    Ok(out)
}

/// Renumbered uploads, for each ordering, on each check matrix plus a
/// randomly numbered mesh, with one kernel per strategy that reads CSR or
/// tiles (f64, every epilogue): transparent launches (plain through `spmv`,
/// fused through [`check_one`]) against the float64 reference; permuted
/// space (`to_internal`, a launch on `internal()`, `to_user`) against it too;
/// the conversions round trip exactly; and CG on the mesh, solved in
/// permuted space, reaches a true residual below 1e-8.
fn renumbered(gpu: &Gpu, mats: &[(String, Csr)], out: &mut FusedCheck) -> Result<()> {
    use sparserl_rt::reorder::Reorder;
    use sparserl_rt::solvers::{Cg, CgOptions, jacobi_inverse};
    let mesh = synth::irregular::mesh_2d(60, 60, 3)?;
    let mut all: Vec<(String, Csr)> = mats.to_vec();
    all.push(("mesh-2d-random".into(), mesh.clone()));
    let record = |out: &mut FusedCheck, ok: bool, what: String| {
        out.renumbered_checked += 1;
        if ok {
            out.renumbered_passed += 1;
        } else if out.failures.len() < 20 {
            out.failures.push(what);
        }
    };
    let tol = sparserl_rt::tolerance(sparserl_rt::ValueType::F64);
    for strategy in [
        sparserl_rt::Strategy::GroupPerRow,
        sparserl_rt::Strategy::ThreadPerRow,
        sparserl_rt::Strategy::Tiled,
        sparserl_rt::Strategy::NnzSplit,
    ] {
        for reorder in [Reorder::Rcm, Reorder::Degree] {
            let v = Variant {
                reorder,
                ..Variant::of(strategy)
            };
            let eps: &[Epilogue] = if strategy.fuses_epilogue() {
                &Epilogue::ALL
            } else {
                &[]
            };
            let k = kernel::build::<f64>("renumbered", &v, eps, &gpu.arch())?;
            for (name, a) in &all {
                let label = format!("{} {name}", v.id());
                let da = k.upload(gpu, a)?;
                record(
                    out,
                    da.renumbering() == reorder,
                    format!("{label}: upload kept the given order"),
                );
                let x: Vec<f64> = (0..a.cols())
                    .map(|i| ((i * 37 % 101) as f64) / 50.0 - 1.0)
                    .collect();
                let want = a.spmv_f64(&x);
                let dx = DeviceVec::from_host(gpu, &x)?;
                let mut dy = DeviceVec::<f64>::zeros(gpu, a.rows())?;
                k.spmv(gpu, &da, &dx, &mut dy)?;
                let err = sparserl_rt::measure::rel_err(&dy.to_host(gpu)?, &want);
                record(
                    out,
                    err <= tol,
                    format!("{label}: transparent y rel err {err:.2e}"),
                );
                let mut xi = DeviceVec::<f64>::zeros(gpu, a.cols())?;
                let mut yi = DeviceVec::<f64>::zeros(gpu, a.rows())?;
                let mut back = DeviceVec::<f64>::zeros(gpu, a.cols())?;
                da.to_internal(gpu, &dx, &mut xi)?;
                da.to_user(gpu, &xi, &mut back)?;
                record(
                    out,
                    back.to_host(gpu)? == x,
                    format!("{label}: to_internal then to_user is not the identity"),
                );
                k.spmv(gpu, &da.internal(), &xi, &mut yi)?;
                da.to_user(gpu, &yi, &mut dy)?;
                let err = sparserl_rt::measure::rel_err(&dy.to_host(gpu)?, &want);
                record(
                    out,
                    err <= tol,
                    format!("{label}: permuted-space y rel err {err:.2e}"),
                );
                if !eps.is_empty() {
                    let (before_checked, before_passed) = (out.checked, out.passed);
                    check_one(gpu, &k, a, out, &label)?;
                    let (c, p) = (out.checked - before_checked, out.passed - before_passed);
                    // Counted as renumbered checks, not as plain fused ones.
                    out.checked = before_checked;
                    out.passed = before_passed;
                    out.renumbered_checked += c;
                    out.renumbered_passed += p;
                }
            }
            if strategy.fuses_epilogue() {
                let dm = k.upload(gpu, &mesh)?;
                let jac = jacobi_inverse(&mesh)?;
                let mut cg = Cg::new(gpu, &k, &dm, Some(&jac))?;
                let b: Vec<f64> = (0..mesh.rows()).map(|i| 1.0 + (i % 7) as f64).collect();
                let db = DeviceVec::from_host(gpu, &b)?;
                let mut dx = DeviceVec::<f64>::zeros(gpu, mesh.rows())?;
                let opts = CgOptions {
                    tol: 1e-10,
                    max_iters: 2000,
                    chunk: 20,
                };
                cg.solve(gpu, &dm, &db, &mut dx, &opts)?;
                let sol = dx.to_host(gpu)?;
                let ax = mesh.spmv_f64(&sol);
                let num: f64 = ax.iter().zip(&b).map(|(p, q)| (p - q) * (p - q)).sum();
                let den: f64 = b.iter().map(|q| q * q).sum();
                let res = (num / den).sqrt();
                record(
                    out,
                    res <= 1e-8,
                    format!("{}: CG in permuted space, true residual {res:.2e}", v.id()),
                );
            }
        }
    }
    Ok(())
}

enum BuiltKernel {
    F32(kernel::RuntimeKernel<f32>),
    F64(kernel::RuntimeKernel<f64>),
}
