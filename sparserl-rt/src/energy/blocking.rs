//! Energy per unit of work of a *synchronous* workload (a whole solver call
//! that waits for the GPU before it returns, such as a CG solve of a fixed
//! number of iterations): the counter is polled on a second thread while
//! the calling thread runs the workload back to back, each call's return
//! timestamped with the units of work (iterations) done so far. The
//! windows, the warm-up and the summary are those of
//! [`EnergyMeter::measure`]; the host gaps between calls (their set-up,
//! e.g. a graph capture) are inside the windows and so are charged to the
//! work, which is why each call should be long against them.

use super::{Completion, EnergyError, EnergyMeasurement, EnergyMeter, EnergyOptions, Recording};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

impl EnergyMeter {
    /// Energy per unit of work of `run`, a synchronous call returning the
    /// units of work it completed: `run` is called back to back for
    /// `opts.warmup_s` plus `opts.repeats` windows of at least
    /// `opts.window_s` (and a margin), the counter polled every 100 us on
    /// another thread. `seconds_per_call` and `joules_per_call` of the
    /// result are per unit of work. `opts.chunk_s` is not used.
    pub fn measure_blocking<E>(
        &self,
        run: &mut dyn FnMut() -> Result<u64, E>,
        opts: &EnergyOptions,
    ) -> Result<EnergyMeasurement, E>
    where
        E: From<EnergyError>,
    {
        let busy_s = opts.warmup_s + opts.window_s * (opts.repeats as f64 + 0.5) + 0.05;
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let (rec, done) = std::thread::scope(|s| {
            let poller = s.spawn(|| self.poll_until(&stop, t0));
            let work = run_for(run, t0, busy_s);
            stop.store(true, Ordering::Relaxed);
            // The poller only reads NVML: a panic there is a bug, re-raised.
            let rec = poller
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (rec, work)
        });
        let (mut rec, done) = (rec?, done?);
        rec.done = done;
        self.conclude(rec, busy_s, opts)
    }

    /// Polls the counter every 100 us until `stop` is set.
    fn poll_until(&self, stop: &AtomicBool, t0: Instant) -> Result<Recording, EnergyError> {
        let dev = self.device()?;
        let mut rec = Recording::default();
        while !stop.load(Ordering::Relaxed) {
            rec.poll(&dev, t0)?;
            std::thread::sleep(Duration::from_micros(100));
        }
        rec.poll(&dev, t0)?;
        Ok(rec)
    }
}

/// Calls `run` back to back until `seconds` have passed since `t0`: the
/// completions (a zero one at the start).
fn run_for<E>(
    run: &mut dyn FnMut() -> Result<u64, E>,
    t0: Instant,
    seconds: f64,
) -> Result<Vec<Completion>, E> {
    let mut done = vec![Completion {
        t_ns: t0.elapsed().as_nanos() as u64,
        calls: 0,
    }];
    let mut calls = 0u64;
    while t0.elapsed().as_secs_f64() < seconds {
        calls += run()?;
        done.push(Completion {
            t_ns: t0.elapsed().as_nanos() as u64,
            calls,
        });
    }
    Ok(done)
}
