use super::*;

fn s(t_ms: f64, mj: u64) -> CounterSample {
    CounterSample {
        t_ns: (t_ms * 1e6) as u64,
        mj,
    }
}

fn c(t_ms: f64, calls: u64) -> Completion {
    Completion {
        t_ns: (t_ms * 1e6) as u64,
        calls,
    }
}

#[test]
fn a_missing_library_is_a_clear_error_not_a_panic() {
    let lib = OsStr::new("libnvidia-ml-not-installed-here.so.1");
    let e = library_present_at(lib).unwrap_err();
    assert!(matches!(e, EnergyError::NoLibrary { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("libnvidia-ml-not-installed-here.so.1"),
        "{msg}"
    );
    assert!(msg.contains("NVIDIA driver"), "{msg}");
    // Initialising through the same path fails the same way, before any
    // NVML call.
    let e = init_at(lib).unwrap_err();
    assert!(matches!(e, EnergyError::NoLibrary { .. }), "{e:?}");
}

#[test]
fn the_default_library_is_present_or_named_in_the_error() {
    // Without a driver (CI) the library is absent: the error names it; on
    // a GPU machine it loads.
    match library_present() {
        Ok(()) => {}
        Err(EnergyError::NoLibrary { library, .. }) => assert_eq!(library, NVML_LIBRARY),
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[test]
fn bus_id_has_nvml_form() {
    assert_eq!(pci_bus_id(0, 0x1b, 0), "00000000:1B:00.0");
    assert_eq!(pci_bus_id(1, 0xc3, 0x1f), "00000001:C3:1F.0");
}

#[test]
fn counter_interval_and_resolution_from_recorded_changes() {
    // Changes every 20 ms except one late one (25 ms), steps of 3000 and
    // 2500 mJ: gcd 500.
    let edges = [
        s(0.0, 10_000),
        s(20.0, 13_000),
        s(40.0, 16_000),
        s(65.0, 18_500),
        s(85.0, 21_500),
    ];
    let st = counter_stats(&edges, 1000, 0.1).unwrap();
    assert!((st.interval_ms - 20.0).abs() < 1e-6, "{st:?}");
    assert!(st.interval_p90_ms > 20.0 && st.interval_p90_ms <= 25.0);
    assert_eq!(st.min_step_mj, 2500);
    assert_eq!(st.step_gcd_mj, 500);
    assert_eq!(st.updates, 5);
    assert!((st.poll_us - 100.0).abs() < 1e-9);
    // Too few changes, or a counter that goes backwards: nothing to say.
    assert!(counter_stats(&edges[..2], 10, 0.1).is_none());
    assert!(counter_stats(&[s(0.0, 5), s(1.0, 9), s(2.0, 7)], 10, 0.1).is_none());
}

#[test]
fn windows_lie_inside_the_busy_loop_and_count_interpolated_calls() {
    // 1000 calls per 10 ms chunk, completions from 5 ms to 205 ms.
    let done: Vec<Completion> = (0..=20)
        .map(|k| c(5.0 + 10.0 * k as f64, 1000 * k))
        .collect();
    // 500 W: 10 J per 20 ms, counter changes every 20 ms from 0 to 240 ms;
    // the change at 0 ms (before the first completion) and those after
    // 205 ms are outside the loop.
    let edges: Vec<CounterSample> = (0..=12)
        .map(|k| s(20.0 * k as f64, 10_000 * k as u64))
        .collect();
    let w = busy_windows(&edges, &done, 0.05, 10);
    // Inside: 20..200 ms; windows of >= 50 ms: 20-80, 80-140, 140-200.
    assert_eq!(w.len(), 3, "{w:?}");
    for win in &w {
        assert!((win.seconds - 0.06).abs() < 1e-9);
        assert!((win.joules - 30.0).abs() < 1e-9);
        // 60 ms at 100 calls per ms.
        assert!((win.calls - 6000.0).abs() < 1e-6, "{win:?}");
        assert!((win.watts() - 500.0).abs() < 1e-6);
        assert!((win.joules_per_call() - 0.005).abs() < 1e-12);
    }
    assert_eq!(busy_windows(&edges, &done, 0.05, 2).len(), 2);
    // No completion range, no window.
    assert!(busy_windows(&edges, &done[..1], 0.05, 10).is_empty());
}

#[test]
fn idle_power_is_energy_over_time_between_changes() {
    let edges = [s(10.0, 1_000), s(30.0, 3_000), s(110.0, 11_000)];
    assert!((idle_power(&edges).unwrap() - 100.0).abs() < 1e-9);
    assert!(idle_power(&edges[..1]).is_none());
}

fn window(jpc: f64) -> Window {
    Window {
        joules: jpc * 1000.0,
        seconds: 1.0,
        calls: 1000.0,
    }
}

fn measured(jpcs: &[f64]) -> EnergyMeasurement {
    let w: Vec<Window> = jpcs.iter().map(|&j| window(j)).collect();
    EnergyMeasurement::from_windows(&w, Some(90.0), 20.0).unwrap()
}

#[test]
fn summary_has_median_percentiles_and_spread() {
    let m = measured(&[1.0, 1.1, 0.9, 1.0, 1.2]);
    assert!((m.joules_per_call - 1.0).abs() < 1e-12);
    assert!(m.joules_per_call_p10 < 1.0 && m.joules_per_call_p90 > 1.0);
    assert!((m.spread - 0.3).abs() < 1e-12);
    assert_eq!(m.windows, 5);
    assert!((m.calls - 5000.0).abs() < 1e-9);
    assert_eq!(m.idle_power_w, Some(90.0));
    assert!(EnergyMeasurement::from_windows(&[], None, 1.0).is_none());
}

#[test]
fn energy_pick_only_beyond_the_noise() {
    // Candidate 1 is 10% below the time pick with 2% spreads: chosen.
    let tight = [
        measured(&[1.0, 1.01, 0.99]),
        measured(&[0.9, 0.91, 0.89]),
        measured(&[1.2, 1.2, 1.2]),
    ];
    let p = energy_pick(0, &tight, 0.01).unwrap();
    assert_eq!(p.index, 1);
    assert!(p.by_energy);
    assert!((p.noise - 0.02 / 0.9).abs() < 1e-9);
    // The same medians with 15% spread on the time pick: noise, keep it.
    let noisy = [measured(&[1.0, 1.08, 0.93]), measured(&[0.9, 0.91, 0.89])];
    let p = energy_pick(0, &noisy, 0.01).unwrap();
    assert_eq!(p.index, 0);
    assert!(!p.by_energy);
    // A 0.5% lower median is below the 1% floor: noise.
    let close = [measured(&[1.0, 1.0, 1.0]), measured(&[0.995, 0.995, 0.995])];
    assert_eq!(energy_pick(0, &close, 0.01).unwrap().index, 0);
    // The time pick already the lowest: itself.
    assert_eq!(energy_pick(1, &tight, 0.01).unwrap().index, 1);
    assert!(energy_pick(5, &tight, 0.01).is_none());
}
