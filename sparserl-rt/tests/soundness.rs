//! Runtime checks of the misuses that safe code can still attempt: graphs
//! replayed after their operands were replaced, device work from another
//! thread during a capture, a panic inside a capture, foreign PTX under a
//! crate kernel's name, coefficient updates.
//!
//! They need a GPU: without one each test prints why it did not run and
//! returns (the messages name the test). On a GPU machine run
//! `cargo test -p sparserl-rt --release --test soundness` (or the binary
//! `target/release/deps/soundness-*`) and look for `test result: ok` with no
//! "skipped (no GPU)" lines.

use sparserl_rt::{Coef, DeviceCoefs, DeviceVec, Layouts, RtError, ops};
use std::cell::RefCell;
use std::sync::Mutex;

mod common;
use common::gpu_or_skip;

const N: usize = 1 << 20;

/// The first reproduction: the captured `y` replaced inside a
/// `RefCell`, a new `z` allocated; replays must not touch `z` (before, they
/// wrote its 2^20 values: the freed memory was `z`'s).
#[test]
fn replay_after_refcell_replacement_never_touches_a_new_vector() {
    let Some(gpu) = gpu_or_skip("replay_after_refcell_replacement") else {
        return;
    };
    let x = DeviceVec::from_host(&gpu, &vec![1.0f32; N]).unwrap();
    let y = RefCell::new(DeviceVec::<f32>::zeros(&gpu, N).unwrap());
    let graph = gpu
        .capture(|| ops::axpy(&gpu, Coef::host(1.0), &x, &mut y.borrow_mut()))
        .unwrap();
    assert!(graph.pinned() >= 2, "the graph pins x and y");
    *y.borrow_mut() = DeviceVec::zeros(&gpu, 1).unwrap();
    let z = DeviceVec::<f32>::zeros(&gpu, N).unwrap();
    for _ in 0..3 {
        graph.launch(&gpu).unwrap();
    }
    let zh = z.to_host(&gpu).unwrap();
    let touched = zh.iter().filter(|&&v| v != 0.0).count();
    assert_eq!(
        touched, 0,
        "a replay wrote {touched} values of a vector it never named"
    );
    assert_eq!(y.borrow().to_host(&gpu).unwrap(), vec![0.0]);
}

/// The same through a `Mutex` and with the old vector dropped before the
/// replay: the replay still writes the (pinned) old buffer, which a fresh
/// vector cannot share.
#[test]
fn replay_after_mutex_replacement_writes_only_the_pinned_buffer() {
    let Some(gpu) = gpu_or_skip("replay_after_mutex_replacement") else {
        return;
    };
    let x = DeviceVec::from_host(&gpu, &vec![2.0f64; N]).unwrap();
    let y = Mutex::new(DeviceVec::<f64>::zeros(&gpu, N).unwrap());
    let graph = gpu
        .capture(|| ops::axpy(&gpu, Coef::host(1.0), &x, &mut y.lock().unwrap()))
        .unwrap();
    drop(std::mem::replace(
        &mut *y.lock().unwrap(),
        DeviceVec::zeros(&gpu, 1).unwrap(),
    ));
    let fresh: Vec<DeviceVec<f64>> = (0..4).map(|_| DeviceVec::zeros(&gpu, N).unwrap()).collect();
    graph.launch(&gpu).unwrap();
    graph.launch(&gpu).unwrap();
    for v in &fresh {
        assert!(v.to_host(&gpu).unwrap().iter().all(|&e| e == 0.0));
    }
}

/// A renumbered matrix inside a `RefCell`, replaced after a capture of
/// its conversion (a launch on its permutation): the replay still reads the
/// old permutation and writes the captured output only.
#[test]
fn replay_after_matrix_replacement_reads_the_pinned_permutation() {
    let Some(gpu) = gpu_or_skip("replay_after_matrix_replacement") else {
        return;
    };
    let n = 4096;
    let t: Vec<(u32, u32, f64)> = (0..n as u32)
        .flat_map(|r| [(r, r, 4.0), (r, (r * 7 + 3) % n as u32, 1.0)])
        .collect();
    let a = sparserl_rt::Csr::from_triplets(n, n, &t).unwrap();
    let layouts = Layouts {
        reorder: sparserl_rt::reorder::Reorder::Rcm,
        ..Layouts::NONE
    };
    let m = RefCell::new(sparserl_rt::DeviceCsr::<f32>::upload_with(&gpu, &a, layouts).unwrap());
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let v = DeviceVec::from_host(&gpu, &host).unwrap();
    let mut out = DeviceVec::<f32>::zeros(&gpu, n).unwrap();
    let graph = gpu
        .capture(|| m.borrow().to_internal(&gpu, &v, &mut out))
        .unwrap();
    let small = sparserl_rt::Csr::from_triplets(1, 1, &[(0, 0, 1.0)]).unwrap();
    let mut replaced = sparserl_rt::DeviceCsr::<f32>::upload(&gpu, &small).unwrap();
    replaced.drop_layouts();
    drop(m.replace(replaced));
    let z = DeviceVec::<f32>::zeros(&gpu, n).unwrap();
    ops::fill(&gpu, &mut out, -1.0).unwrap();
    graph.launch(&gpu).unwrap();
    let mut got = out.to_host(&gpu).unwrap();
    got.sort_by(f32::total_cmp);
    assert_eq!(got, host, "the replay gathers a permutation of v");
    assert!(z.to_host(&gpu).unwrap().iter().all(|&e| e == 0.0));
}

/// The second reproduction: another thread's `ops::fill` during a
/// capture used to return `Ok` and never run. It must error (and its vector
/// keep its value) or run; it may never be silently recorded.
#[test]
fn another_threads_fill_during_a_capture_errors_and_is_not_recorded() {
    let Some(gpu) = gpu_or_skip("another_threads_fill_during_a_capture") else {
        return;
    };
    let x = DeviceVec::from_host(&gpu, &vec![1.0f32; 1024]).unwrap();
    let mut y = DeviceVec::<f32>::zeros(&gpu, 1024).unwrap();
    let mut w = DeviceVec::<f32>::zeros(&gpu, 1024).unwrap();
    let other = gpu.clone();
    let outcome = std::thread::scope(|s| {
        let graph = gpu.capture(|| {
            let r = s
                .spawn(|| ops::fill(&other, &mut w, 2.0))
                .join()
                .expect("no panic");
            ops::axpy(&gpu, Coef::host(1.0), &x, &mut y)?;
            assert!(
                matches!(r, Err(RtError::Capturing { .. })),
                "the other thread's fill must be refused: {r:?}"
            );
            Ok(())
        });
        graph.map(|g| g.pinned())
    });
    assert!(outcome.unwrap() > 0);
    // Not recorded: w is still zero, and a fill after the capture runs.
    assert!(w.to_host(&gpu).unwrap().iter().all(|&v| v == 0.0));
    ops::fill(&gpu, &mut w, 2.0).unwrap();
    assert!(w.to_host(&gpu).unwrap().iter().all(|&v| v == 2.0));
}

/// Host calls from any thread and allocations are refused during a capture.
#[test]
fn host_calls_are_refused_during_a_capture_from_every_thread() {
    let Some(gpu) = gpu_or_skip("host_calls_are_refused_during_a_capture") else {
        return;
    };
    let x = DeviceVec::from_host(&gpu, &[1.0f64; 16]).unwrap();
    let mut y = DeviceVec::<f64>::zeros(&gpu, 16).unwrap();
    let graph = gpu.capture(|| {
        let here = DeviceVec::<f64>::zeros(&gpu, 4);
        assert!(matches!(here, Err(RtError::Capturing { .. })));
        assert!(matches!(x.to_host(&gpu), Err(RtError::Capturing { .. })));
        std::thread::scope(|s| {
            let g = gpu.clone();
            let r = s.spawn(move || g.synchronize()).join().unwrap();
            assert!(matches!(r, Err(RtError::Capturing { .. })), "{r:?}");
        });
        ops::axpy(&gpu, Coef::host(1.0), &x, &mut y)
    });
    graph.unwrap().launch(&gpu).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), vec![1.0; 16]);
}

/// A panic inside the closure ends the capture: later work runs.
#[test]
fn a_panic_inside_a_capture_leaves_the_stream_usable() {
    let Some(gpu) = gpu_or_skip("a_panic_inside_a_capture") else {
        return;
    };
    let mut y = DeviceVec::<f32>::zeros(&gpu, 256).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = gpu.capture(|| {
            ops::fill(&gpu, &mut y, 5.0)?;
            panic!("inside the capture");
        });
    }));
    assert!(caught.is_err());
    assert!(!gpu.is_capturing(), "the capture state is cleared");
    ops::fill(&gpu, &mut y, 3.0).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), vec![3.0; 256]);
    // And a new capture works.
    let g = gpu.capture(|| ops::fill(&gpu, &mut y, 4.0)).unwrap();
    g.launch(&gpu).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), vec![4.0; 256]);
}

/// A vector dropped inside the closure is freed after the capture, not by a
/// free recorded into the graph (a replay would free it again).
#[test]
fn a_vector_dropped_during_a_capture_is_not_freed_by_the_graph() {
    let Some(gpu) = gpu_or_skip("a_vector_dropped_during_a_capture") else {
        return;
    };
    let tmp = DeviceVec::<f32>::zeros(&gpu, N).unwrap();
    let mut y = DeviceVec::<f32>::zeros(&gpu, 64).unwrap();
    let g = gpu
        .capture(|| {
            drop(tmp);
            ops::fill(&gpu, &mut y, 1.0)
        })
        .unwrap();
    let keep: Vec<DeviceVec<f32>> = (0..3).map(|_| DeviceVec::zeros(&gpu, N).unwrap()).collect();
    for _ in 0..3 {
        g.launch(&gpu).unwrap();
    }
    gpu.synchronize().unwrap();
    for v in &keep {
        assert!(v.to_host(&gpu).unwrap().iter().all(|&e| e == 0.0));
    }
    assert_eq!(y.to_host(&gpu).unwrap(), vec![1.0; 64]);
}

/// PTX loaded (through the unsafe loader) under the name of the crate's
/// fill kernel does not replace it: `ops::fill` still fills.
#[test]
fn foreign_ptx_under_a_crate_kernel_name_does_not_hijack_it() {
    let Some(gpu) = gpu_or_skip("foreign_ptx_under_a_crate_kernel_name") else {
        return;
    };
    // A kernel of the fill signature that writes nothing.
    let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\
               .visible .entry sparserl_fill_f32(.param .u32 n, .param .f32 v, .param .u64 x)\n\
               { ret; }\n";
    // SAFETY: the foreign function is never launched by this test.
    let foreign = unsafe { gpu.load_ptx("sparserl_fill_f32", ptx) };
    assert!(foreign.is_ok(), "{foreign:?}");
    let mut y = DeviceVec::<f32>::zeros(&gpu, 1000).unwrap();
    ops::fill(&gpu, &mut y, 7.0).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), vec![7.0; 1000]);
}

/// `DeviceCoefs::set` keeps `gamma_dot` (PageRank's dangling-mass term).
#[test]
fn coefficient_updates_keep_gamma_dot() {
    let Some(gpu) = gpu_or_skip("coefficient_updates_keep_gamma_dot") else {
        return;
    };
    let mut c = DeviceCoefs::with_gamma_dot(&gpu, 1.0, 2.0, 3.0, 0.25).unwrap();
    c.set(&gpu, 4.0, 5.0, 6.0).unwrap();
    assert_eq!(c.get(&gpu).unwrap(), [4.0, 5.0, 6.0, 0.25]);
    c.set_all(&gpu, [1.0, 0.0, 0.0, 0.0]).unwrap();
    assert_eq!(c.get(&gpu).unwrap(), [1.0, 0.0, 0.0, 0.0]);
}
