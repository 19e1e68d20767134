//! `cargo xtask kernel-lab`: a developer tool for kernel work. It times
//! candidate builds of generated kernels (a variant plus extra `#define`s
//! that the fragments read) side by side with cuSPARSE and the gather floor
//! on chosen matrices in chosen orders, and the cost of the device
//! permutations of a renumbered launch. It is not a benchmark: nothing it
//! prints goes into a report; what it finds must be confirmed by
//! `xtask bench`.
//!
//! A candidate is `label=variant-id` or `label=variant-id:NAME=V;NAME=V`
//! (defines put before the generated source, e.g. to switch a code path of a
//! fragment under study). Candidates whose label starts with `diag-` are
//! diagnostics (e.g. a kernel with a phase switched off): timed without the
//! reference check and never called correct.
//!
//! Two defines are read by the lab itself, not by the fragments: `LAB_LOAD_X`
//! replaces the body of `load_x` (the gather of `x`) and `LAB_LOAD_M` that of
//! the tiled kernel's streaming matrix loads, each by an expression of the
//! pointer (`x + i`, `p`), e.g. `LAB_LOAD_X=lab_ld_el(x + i)`; the helpers in
//! `LAB_PRELUDE` (cache-policy qualified loads) are available to them.

use crate::bench::irregular_suite;
use crate::cusparse::{self, CusparseSpmv};
use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use cudarc::driver::{CudaFunction, PushKernelArg};
use sparserl_rt::measure::time_launches;
use sparserl_rt::reorder::Reorder;
use sparserl_rt::{Bench, Csr, Gpu, MeasureOptions, ValueType, Variant, full_space};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `cargo xtask kernel-lab`.
#[derive(ClapArgs)]
pub struct Args {
    /// Matrices: names of the irregular suite, or `power-law-1M` (the
    /// PageRank link matrix of bench-app).
    #[arg(long, value_delimiter = ',', default_value = "rmat-s20,power-law-1M")]
    pub matrices: Vec<String>,
    /// Orders to run each matrix in: none, rcm, degree.
    #[arg(long, value_delimiter = ',', default_value = "degree")]
    pub orders: Vec<String>,
    /// Candidates (see the module docs).
    #[arg(long = "candidate")]
    pub candidates: Vec<String>,
    /// Timed repetitions per candidate.
    #[arg(long, default_value_t = 30)]
    pub reps: u32,
    /// Also time the device permutations of a renumbered launch on a
    /// random permutation of this many elements (0: skip).
    #[arg(long, default_value_t = 0)]
    pub perm_n: usize,
    /// Where to write the text report (also printed).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

struct Candidate {
    label: String,
    variant: Variant,
    defines: Vec<(String, String)>,
    diagnostic: bool,
}

fn parse_candidate(s: &str) -> Result<Candidate> {
    let (label, rest) = s
        .split_once('=')
        .with_context(|| format!("candidate `{s}`: expected label=variant[:NAME=V;...]"))?;
    let (id, defs) = rest.split_once(':').unwrap_or((rest, ""));
    let variant = lookup(id).with_context(|| {
        let strategy = id.split('.').next().unwrap_or("");
        let near: Vec<String> = full_space()
            .iter()
            .map(|v| v.id())
            .filter(|v| v.starts_with(strategy))
            .collect();
        format!(
            "candidate `{s}`: no variant `{id}` in the design space; {strategy}: {}",
            near.join(" ")
        )
    })?;
    let mut defines = Vec::new();
    for d in defs.split(';').filter(|d| !d.is_empty()) {
        let (k, v) = d
            .split_once('=')
            .with_context(|| format!("candidate `{s}`: define `{d}` is not NAME=V"))?;
        defines.push((k.to_string(), v.to_string()));
    }
    Ok(Candidate {
        label: label.to_string(),
        variant,
        defines,
        diagnostic: label.starts_with("diag-"),
    })
}

/// The variant of `id`: one of the design space, or one with the fine
/// knobs the search refines (`.cs` streaming loads, `.mN` minimum blocks)
/// appended to the id of one.
fn lookup(id: &str) -> Option<Variant> {
    let mut base = id;
    let mut stream_y = false;
    let mut min_blocks = 0;
    loop {
        if let Some(b) = base.strip_suffix(".cs") {
            stream_y = true;
            base = b;
        } else if let Some((b, m)) = base.rsplit_once(".m")
            && let Ok(n) = m.parse::<u32>()
        {
            min_blocks = n;
            base = b;
        } else {
            break;
        }
    }
    let mut v = full_space().into_iter().find(|v| v.id() == base)?;
    v.stream_y |= stream_y;
    if min_blocks > 0 {
        v.min_blocks = min_blocks;
    }
    (v.id() == id).then_some(v)
}

fn build_matrix(name: &str) -> Result<Csr> {
    if name == "power-law-1M" {
        return crate::bench_app::link_matrix(&sparserl_rt::synth::power_law(
            1_000_000, 16.0, 2.1, 7,
        )?);
    }
    if let Some(s) = irregular_suite(false).into_iter().find(|s| s.name == name) {
        return s.build(1);
    }
    match crate::bench::large_suite(false)
        .into_iter()
        .find(|s| s.name == name)
    {
        Some(s) => s.build(1),
        None => bail!("unknown matrix `{name}`"),
    }
}

/// Loads with cache qualifiers, for `LAB_LOAD_X` / `LAB_LOAD_M`, read-only
/// path (`.nc`) throughout: `na` no L1 allocation; `el` / `ef` an L2
/// evict-last / evict-first cache-hint policy (sm_90 takes L2 eviction
/// priorities only as a `createpolicy` hint on scalar loads).
const LAB_PRELUDE: &str = r#"
__device__ __forceinline__ float lab_ld_na(const float* p) {
    float v;
    asm("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ int lab_ld_na(const int* p) {
    int v;
    asm("ld.global.nc.L1::no_allocate.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
#define LAB_LD_HINT(NAME, L1, POLICY)                                                       \
    __device__ __forceinline__ float NAME(const float* p) {                                 \
        float v;                                                                            \
        unsigned long long pol;                                                             \
        asm("createpolicy.fractional.L2::" POLICY ".b64 %0, 1.0;" : "=l"(pol));             \
        asm("ld.global.nc" L1 ".L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol)); \
        return v;                                                                           \
    }                                                                                       \
    __device__ __forceinline__ int NAME(const int* p) {                                     \
        int v;                                                                              \
        unsigned long long pol;                                                             \
        asm("createpolicy.fractional.L2::" POLICY ".b64 %0, 1.0;" : "=l"(pol));             \
        asm("ld.global.nc" L1 ".L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(pol)); \
        return v;                                                                           \
    }
LAB_LD_HINT(lab_ld_el, "", "evict_last")
LAB_LD_HINT(lab_ld_ef, "", "evict_first")
LAB_LD_HINT(lab_ld_na_el, ".L1::no_allocate", "evict_last")
LAB_LD_HINT(lab_ld_na_ef, ".L1::no_allocate", "evict_first")
"#;

const LOAD_X_BODY: &str =
    "#if SPARSERL_LDG_X\n    return __ldg(x + i);\n#else\n    return x[i];\n#endif";
const LOAD_M_BODY: &str =
    "#if SPARSERL_STREAM_Y\n    return __ldcs(p);\n#else\n    return *p;\n#endif";

/// The source of candidate `c` (f32) under the entry name `{entry}_lab{idx}`:
/// `(entry, text)`.
fn lab_source(c: &Candidate, idx: usize) -> Result<(String, String)> {
    let src = sparserl_build::codegen::generate(&c.variant, ValueType::F32)?;
    let entry = format!("{}_lab{idx}", src.entry);
    let mut text = String::from(LAB_PRELUDE);
    let mut source = src.source.replace(&src.entry, &entry);
    for (k, v) in &c.defines {
        let body = match k.as_str() {
            "LAB_LOAD_X" => LOAD_X_BODY,
            "LAB_LOAD_M" => LOAD_M_BODY,
            _ => {
                let _ = writeln!(text, "#define {k} {v}");
                continue;
            }
        };
        if !source.contains(body) {
            bail!("candidate `{}`: {k}: the source has no such load", c.label);
        }
        source = source.replace(body, &format!("    return {v};"));
    }
    text.push_str(&source);
    Ok((entry, text))
}

/// Compiles `c` with its defines under an entry name of its own.
fn compile(gpu: &Gpu, c: &Candidate, idx: usize) -> Result<CudaFunction> {
    let (entry, text) = lab_source(c, idx)?;
    let arch = gpu.arch();
    let opts: Vec<String> = sparserl_build::builder::COMPILE_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let build = || {
        sparserl_rt::nvrtc::compile_ptx(&text, &arch, &opts)
            .map_err(|e| sparserl_rt::RtError::Compile(e.to_string()))
    };
    // SAFETY: `lab_source` gives every candidate an entry name of its own
    // (its index); launched with the kernel ABI of its variant.
    Ok(unsafe { gpu.function_or_load(&entry, build) }?)
}

/// Runs the lab.
pub fn run(args: Args) -> Result<()> {
    let cands: Vec<Candidate> = args
        .candidates
        .iter()
        .map(|s| parse_candidate(s))
        .collect::<Result<_>>()?;
    let gpu = Gpu::new(0).context("opening the GPU")?;
    let mut out = String::new();
    let _ = writeln!(out, "GPU {}", gpu.name());
    let opts = MeasureOptions {
        reps: args.reps,
        ..MeasureOptions::default()
    };
    for name in args.matrices.iter().filter(|n| !n.is_empty()) {
        let base = build_matrix(name)?;
        for order in &args.orders {
            let reorder = Reorder::ALL
                .into_iter()
                .find(|r| r.as_str() == order)
                .with_context(|| format!("unknown order `{order}` (none, rcm, degree)"))?;
            let csr = match reorder.permutation(&base) {
                Some(p) => p.apply(&base).context("the permutation does not fit")?,
                None => base.clone(),
            };
            let bytes = csr.compulsory_bytes(4) as f64;
            let ip = csr.indptr();
            let long: Vec<usize> = (0..csr.rows())
                .map(|r| (ip[r + 1] - ip[r]) as usize)
                .filter(|&l| l > sparserl_rt::tiled::TILE)
                .collect();
            let _ = writeln!(
                out,
                "  rows over {} nonzeros: {} holding {:.1}% of the nonzeros, longest {}",
                sparserl_rt::tiled::TILE,
                long.len(),
                100.0 * long.iter().sum::<usize>() as f64 / csr.nnz().max(1) as f64,
                long.iter().max().unwrap_or(&0)
            );
            let bench = Bench::<f32>::new(&gpu, &csr)?;
            let _ = writeln!(
                out,
                "\n{name} order {order}: {} rows, {} nnz, {:.1} MB compulsory",
                csr.rows(),
                csr.nnz(),
                bytes / 1e6
            );
            if let Some((g, load)) =
                crate::bench::gather::floor_gbs(&gpu, bench.device_csr(), &csr, bench.copies(), 20)?
            {
                let _ = writeln!(
                    out,
                    "  gather floor      {g:7.0} GB/s {:8.1} us ({})",
                    bytes / g / 1e3,
                    load.name()
                );
            }
            cusparse_rows(&gpu, &bench, &csr, bytes, args.reps, &mut out)?;
            for (i, c) in cands.iter().enumerate() {
                let line = match candidate_row(&gpu, &bench, c, i, &opts, bytes) {
                    Ok(l) => l,
                    Err(e) => format!("error: {e:#}"),
                };
                let _ = writeln!(out, "  {:<18}{line}", c.label);
            }
            print!("{out}");
            out.clear();
        }
    }
    if args.perm_n > 0 {
        perm_rows(&gpu, args.perm_n, args.reps, &mut out)?;
        print!("{out}");
    }
    if let Some(p) = &args.out {
        std::fs::write(p, &out)?;
    }
    Ok(())
}

fn candidate_row(
    gpu: &Gpu,
    bench: &Bench<f32>,
    c: &Candidate,
    idx: usize,
    opts: &MeasureOptions,
    bytes: f64,
) -> Result<String> {
    let f = compile(gpu, c, idx)?;
    let v = c.variant.kernel();
    if !c.diagnostic {
        // SAFETY: `f` is the generated kernel of `v` for f32 (the defines
        // only select between code paths of the same ABI).
        let m = unsafe { bench.measure(&f, &v, opts) }?;
        return Ok(if m.correct {
            format!("{:7.0} GB/s {:8.1} us", m.gbs, m.median_us)
        } else {
            format!("FAILED {}", m.error.unwrap_or_default())
        });
    }
    let a = bench.device_csr();
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let stream = unsafe { gpu.stream() };
    let x = stream.alloc_zeros::<f32>(a.cols().max(1))?;
    let mut y = stream.alloc_zeros::<f32>(a.rows().max(1))?;
    let times = time_launches::<anyhow::Error>(
        gpu,
        // SAFETY: as above; a diagnostic kernel reads and writes the same
        // buffers as the full one and is never checked or used.
        &mut || Ok(unsafe { sparserl_rt::launch_variant(gpu, &f, &v, a, &x, &mut y) }?),
        5,
        opts.reps,
        2.0,
    )?;
    let m = crate::bench::median(&times).context("no samples")?;
    Ok(format!(
        "{:7.0} GB/s {:8.1} us (diagnostic, unchecked)",
        bytes / m / 1e3,
        m
    ))
}

fn cusparse_rows(
    gpu: &Gpu,
    bench: &Bench<f32>,
    csr: &Csr,
    bytes: f64,
    reps: u32,
    out: &mut String,
) -> Result<()> {
    let x = vec![1.0f32; csr.cols()];
    let mut cs = CusparseSpmv::new(gpu, bench.device_csr(), &x, bench.copies())?;
    for alg in cusparse::ALGS {
        cs.prepare(alg)?;
        let times = time_launches::<anyhow::Error>(gpu, &mut || cs.launch_next(alg), 5, reps, 2.0)?;
        if let Some(m) = crate::bench::median(&times) {
            let _ = writeln!(
                out,
                "  cuSPARSE {:<9}{:7.0} GB/s {:8.1} us",
                alg.name(),
                bytes / m / 1e3,
                m
            );
        }
    }
    Ok(())
}

/// Gather into the stored order, the scatter back, and the scatter written
/// as a gather through the inverse permutation, each after a 256 MB
/// device copy that evicts L2 (as the SpMV between them does); the gathers
/// one per thread and loop trip, and with 4 or 8 indices loaded first, then
/// all their gathers (the runtime's `sparserl_gather` does 4).
const PERM_SRC: &str = r#"
extern "C" __global__ void lab_gather(int n, const int* __restrict__ p, const float* __restrict__ s, float* __restrict__ d) {
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) d[i] = __ldg(s + p[i]);
}
extern "C" __global__ void lab_scatter(int n, const int* __restrict__ p, const float* __restrict__ s, float* __restrict__ d) {
    for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) d[p[i]] = s[i];
}
template <int U>
__device__ void lab_gather_mlp(int n, const int* __restrict__ p, const float* __restrict__ s, float* __restrict__ d) {
    const long long stride = (long long)gridDim.x * 256;
    long long i = (long long)blockIdx.x * 256 + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        int q[U];
        float v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) q[u] = p[i + u * stride];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldg(s + q[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) d[i + u * stride] = v[u];
    }
    for (; i < n; i += stride) d[i] = __ldg(s + p[i]);
}
extern "C" __global__ void lab_gather4(int n, const int* __restrict__ p, const float* __restrict__ s, float* __restrict__ d) {
    lab_gather_mlp<4>(n, p, s, d);
}
extern "C" __global__ void lab_gather8(int n, const int* __restrict__ p, const float* __restrict__ s, float* __restrict__ d) {
    lab_gather_mlp<8>(n, p, s, d);
}
"#;

fn perm_rows(gpu: &Gpu, n: usize, reps: u32, out: &mut String) -> Result<()> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut perm: Vec<i32> = (0..n as i32).collect();
    perm.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(5));
    let mut inv = vec![0i32; n];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i32;
    }
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let stream = unsafe { gpu.stream() };
    let arch = gpu.arch();
    // One compilation; each entry is loaded from the same PTX.
    let ptx = sparserl_rt::nvrtc::compile_ptx(PERM_SRC, &arch, &[])?;
    // SAFETY: the `lab_*` entries exist only in PERM_SRC and are launched
    // with its argument lists below.
    let load = |name: &str| unsafe { gpu.function_or_load(name, || Ok(ptx.clone())) };
    let (g, s, g4, g8) = (
        load("lab_gather")?,
        load("lab_scatter")?,
        load("lab_gather4")?,
        load("lab_gather8")?,
    );
    let dp = stream.clone_htod(&perm)?;
    let di = stream.clone_htod(&inv)?;
    let src = stream.clone_htod(&vec![1.0f32; n])?;
    let mut dst = stream.alloc_zeros::<f32>(n)?;
    let big = 64 << 20;
    let ba = stream.alloc_zeros::<f32>(big)?;
    let mut bb = stream.alloc_zeros::<f32>(big)?;
    let ni = n as i32;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: ((gpu.sm_count() * 8) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let _ = writeln!(out, "\npermutations of {n} f32 (each after a 256 MB copy)");
    for (label, which) in [
        ("copy only", 0),
        ("gather", 1),
        ("scatter", 2),
        ("inverse gather", 3),
        ("gather x4", 4),
        ("gather x8", 5),
        ("inverse gather x4", 6),
    ] {
        let mut launch = || -> Result<()> {
            stream.memcpy_dtod(&ba, &mut bb)?;
            let (f, p) = match which {
                0 => return Ok(()),
                1 => (&g, &dp),
                2 => (&s, &dp),
                3 => (&g, &di),
                4 => (&g4, &dp),
                5 => (&g8, &dp),
                _ => (&g4, &di),
            };
            let mut b = stream.launch_builder(f);
            b.arg(&ni).arg(p).arg(&src).arg(&mut dst);
            // SAFETY: (int n, const int* p, const float* s, float* d), p a
            // permutation of 0..n, s and d of n elements, all on `stream`.
            unsafe { b.launch(cfg) }?;
            Ok(())
        };
        let times = time_launches::<anyhow::Error>(gpu, &mut launch, 3, reps, 2.0)?;
        if let Some(m) = crate::bench::median(&times) {
            let _ = writeln!(out, "  {label:<16}{m:8.1} us");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_loads_replace_the_fragments_loads_and_compile() {
        let require = std::env::var("SPARSERL_REQUIRE_CUDA").is_ok_and(|v| v == "1");
        if let Err(e) = sparserl_rt::nvrtc::locate() {
            assert!(!require, "SPARSERL_REQUIRE_CUDA=1 but {e}");
            eprintln!("lab loads: SKIPPED (no NVRTC)\n{e}");
            return;
        }
        let c = parse_candidate(
            "t=tiled.b256.u1.cs:LAB_LOAD_X=lab_ld_na_el(x + i);LAB_LOAD_M=lab_ld_na_ef(p)",
        )
        .unwrap();
        let (entry, text) = lab_source(&c, 3).unwrap();
        assert!(!text.contains("__ldcs(p)") && !text.contains("__ldg(x + i)"));
        let ptx = sparserl_rt::nvrtc::compile_ptx(&text, "sm_90", &[]).unwrap();
        assert!(ptx.contains(&format!(".entry {entry}(")));
        assert!(ptx.contains("createpolicy.fractional.L2::evict_last.b64"));
        assert!(ptx.contains("createpolicy.fractional.L2::evict_first.b64"));
        assert!(ptx.contains("ld.global.nc.L1::no_allocate.L2::cache_hint.f32"));
        assert!(ptx.contains("ld.global.nc.L1::no_allocate.L2::cache_hint.b32"));
        // ptxas accepts them (an L2 eviction priority written on the load
        // itself would need a vector type on sm_90).
        if sparserl_rt::nvrtc::ptxas_available() {
            sparserl_rt::nvrtc::assemble_cubin(&ptx, "sm_90").unwrap();
        }
        // A load the candidate's fragments do not have is an error, not a no-op.
        let bad = parse_candidate("t=thread-per-row.b128.u2:LAB_LOAD_M=lab_ld_ef(p)").unwrap();
        assert!(lab_source(&bad, 0).is_err());
    }
}
