//! Energy per call through NVML (feature `nvml`): the driver's total-energy
//! counter (`nvmlDeviceGetTotalEnergyConsumption`, millijoules) read around
//! a busy loop of back-to-back launches.
//!
//! The counter changes only every few milliseconds (its update interval,
//! measured by [`EnergyMeter::probe_counter`]: poll it and time the
//! changes). A measurement therefore keeps the GPU busy for a loop much
//! longer than that interval: chunks of launches, each followed by an event,
//! at most two chunks in flight; while waiting for a chunk the host polls
//! the counter, so every change and every chunk completion gets a host
//! timestamp within one poll (a few microseconds). Energy is taken between
//! two counter changes that both lie inside the busy loop (no idle edge is
//! ever counted), and the calls in between are interpolated from the chunk
//! completions. Consecutive such windows are the repeated measurements whose
//! spread says what difference is noise; idle power is measured next to it
//! over an idle sleep of one window's length.
//!
//! Nothing here changes a clock, a power limit or any other setting of the
//! card: only read-only NVML queries are made. libnvidia-ml is loaded at run
//! time; its absence is an [`EnergyError::NoLibrary`], never a panic.

mod blocking;
mod stats;
#[cfg(test)]
mod tests;

pub use stats::{
    Completion, CounterSample, CounterStats, EnergyMeasurement, EnergyPick, Window, busy_windows,
    counter_stats, energy_pick, idle_power,
};

use crate::{Gpu, RtError};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::time::{Duration, Instant};
use thiserror::Error;

/// The NVML library's file name.
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";

/// What can go wrong measuring energy.
#[derive(Debug, Error)]
pub enum EnergyError {
    /// libnvidia-ml could not be loaded.
    #[error(
        "cannot load the NVIDIA Management Library `{library}` ({reason}); energy is read from \
         the driver's counters through it (it is installed with the NVIDIA driver): nothing \
         else needs it"
    )]
    NoLibrary {
        /// The library name or path tried.
        library: String,
        /// The loader's message.
        reason: String,
    },
    /// An NVML call failed.
    #[error("NVML call {call} failed: {source}")]
    Nvml {
        /// The NVML function.
        call: &'static str,
        /// NVML's error.
        #[source]
        source: NvmlError,
    },
    /// The device has no total-energy counter (before Volta, or not exposed).
    #[error(
        "the GPU at PCI {bus_id} does not report its total energy consumption (NVML: not \
         supported; Volta or newer needed)"
    )]
    Unsupported {
        /// The device's PCI bus id.
        bus_id: String,
    },
    /// The counter did not change often enough to measure anything.
    #[error(
        "the energy counter changed {changes} time(s) in {seconds:.2} s: too few to measure \
         (a longer window is needed)"
    )]
    TooFewUpdates {
        /// Changes seen.
        changes: usize,
        /// Seconds recorded.
        seconds: f64,
    },
    /// A device call failed.
    #[error(transparent)]
    Rt(#[from] RtError),
}

fn nvml_err(call: &'static str) -> impl FnOnce(NvmlError) -> EnergyError {
    move |source| EnergyError::Nvml { call, source }
}

/// Checks that the NVML library at `library` (a name the loader searches
/// for, or a path) can be loaded, without calling any of its functions.
pub fn library_present_at(library: &OsStr) -> Result<(), EnergyError> {
    // SAFETY: loading libnvidia-ml runs only its ELF initialisers, which
    // the NVML wrapper runs as well when it loads the same library; no NVML
    // function is called and the handle is dropped at once.
    match unsafe { libloading::Library::new(library) } {
        Ok(_) => Ok(()),
        Err(e) => Err(EnergyError::NoLibrary {
            library: library.to_string_lossy().into_owned(),
            reason: e.to_string(),
        }),
    }
}

/// Checks that [`NVML_LIBRARY`] can be loaded.
pub fn library_present() -> Result<(), EnergyError> {
    library_present_at(OsStr::new(NVML_LIBRARY))
}

/// Loads and initialises NVML from `library` (checked first).
fn init_at(library: &OsStr) -> Result<Nvml, EnergyError> {
    library_present_at(library)?;
    Nvml::builder()
        .lib_path(library)
        .init()
        .map_err(|e| match e {
            NvmlError::LibloadingError(l) => EnergyError::NoLibrary {
                library: library.to_string_lossy().into_owned(),
                reason: l.to_string(),
            },
            e => EnergyError::Nvml {
                call: "nvmlInit",
                source: e,
            },
        })
}

/// The PCI bus id in NVML's form, `DDDDDDDD:BB:DD.0` (hexadecimal).
pub fn pci_bus_id(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:08X}:{bus:02X}:{device:02X}.0")
}

/// `gpu`'s PCI bus id, from the CUDA device attributes.
pub fn gpu_bus_id(gpu: &Gpu) -> Result<String, EnergyError> {
    // SAFETY: the context is used only to read three device attributes; no
    // stream, buffer or module is created or touched through it.
    let ctx = unsafe { gpu.context() };
    let get = |a| -> Result<u32, EnergyError> {
        let v = ctx.attribute(a).map_err(RtError::from)?;
        Ok(v.max(0) as u32)
    };
    Ok(pci_bus_id(
        get(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
        get(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
        get(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
    ))
}

/// Knobs of [`EnergyMeter::measure`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyOptions {
    /// Busy seconds before the first window (clocks and power settle).
    pub warmup_s: f64,
    /// Minimum length of one window, seconds (make it many counter intervals).
    pub window_s: f64,
    /// Windows (repeated measurements).
    pub repeats: usize,
    /// GPU seconds of work per chunk of launches.
    pub chunk_s: f64,
    /// Also measure idle power over one window's length after the loop.
    pub idle: bool,
}

impl Default for EnergyOptions {
    fn default() -> Self {
        EnergyOptions {
            warmup_s: 0.1,
            window_s: 0.2,
            repeats: 4,
            chunk_s: 0.002,
            idle: false,
        }
    }
}

/// A recording of the counter (and of chunk completions) over one loop.
#[derive(Debug, Default)]
struct Recording {
    edges: Vec<CounterSample>,
    done: Vec<Completion>,
    polls: usize,
    last: Option<u64>,
}

/// Reads the energy counter of one GPU through NVML.
pub struct EnergyMeter {
    nvml: Nvml,
    bus_id: String,
    name: String,
}

impl std::fmt::Debug for EnergyMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnergyMeter")
            .field("bus_id", &self.bus_id)
            .field("name", &self.name)
            .finish()
    }
}

impl EnergyMeter {
    /// Opens NVML and finds `gpu`'s NVML device by PCI bus id (not by
    /// ordinal: CUDA and NVML may number devices differently); checks that
    /// it reports total energy.
    pub fn new(gpu: &Gpu) -> Result<Self, EnergyError> {
        Self::with_library(gpu, OsStr::new(NVML_LIBRARY))
    }

    /// As [`EnergyMeter::new`], with NVML loaded from `library`.
    pub fn with_library(gpu: &Gpu, library: &OsStr) -> Result<Self, EnergyError> {
        let nvml = init_at(library)?;
        let bus_id = gpu_bus_id(gpu)?;
        let (name, read) = {
            let d = nvml
                .device_by_pci_bus_id(bus_id.as_str())
                .map_err(nvml_err("nvmlDeviceGetHandleByPciBusId"))?;
            (d.name().unwrap_or_default(), d.total_energy_consumption())
        };
        match read {
            Ok(_) => Ok(EnergyMeter { nvml, bus_id, name }),
            Err(NvmlError::NotSupported) => Err(EnergyError::Unsupported { bus_id }),
            Err(e) => Err(nvml_err("nvmlDeviceGetTotalEnergyConsumption")(e)),
        }
    }

    /// The device's PCI bus id.
    pub fn bus_id(&self) -> &str {
        &self.bus_id
    }

    /// The device's name as NVML reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn device(&self) -> Result<nvml_wrapper::Device<'_>, EnergyError> {
        self.nvml
            .device_by_pci_bus_id(self.bus_id.as_str())
            .map_err(nvml_err("nvmlDeviceGetHandleByPciBusId"))
    }

    /// Polls the counter for `seconds` with the GPU left alone (sleeping
    /// `pause` between polls): the changes seen.
    fn record_idle(&self, seconds: f64, pause: Duration) -> Result<Recording, EnergyError> {
        let dev = self.device()?;
        let mut rec = Recording::default();
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < seconds {
            rec.poll(&dev, t0)?;
            if !pause.is_zero() {
                std::thread::sleep(pause);
            }
        }
        Ok(rec)
    }

    /// The counter's update interval and resolution: polls it as fast as
    /// possible for `seconds` (GPU idle) and times its changes; also returns
    /// the idle power over that time.
    pub fn probe_counter(&self, seconds: f64) -> Result<(CounterStats, f64), EnergyError> {
        let rec = self.record_idle(seconds, Duration::ZERO)?;
        let too_few = || EnergyError::TooFewUpdates {
            changes: rec.edges.len(),
            seconds,
        };
        let stats = counter_stats(&rec.edges, rec.polls, seconds).ok_or_else(too_few)?;
        let idle = idle_power(&rec.edges).ok_or_else(too_few)?;
        Ok((stats, idle))
    }

    /// Idle power, watts: the counter over an idle sleep of `seconds`.
    pub fn idle_power(&self, seconds: f64) -> Result<f64, EnergyError> {
        let rec = self.record_idle(seconds, Duration::from_micros(200))?;
        idle_power(&rec.edges).ok_or(EnergyError::TooFewUpdates {
            changes: rec.edges.len(),
            seconds,
        })
    }
}

impl Recording {
    /// Reads the counter once; records a change.
    fn poll(&mut self, dev: &nvml_wrapper::Device<'_>, t0: Instant) -> Result<(), EnergyError> {
        let mj = dev
            .total_energy_consumption()
            .map_err(nvml_err("nvmlDeviceGetTotalEnergyConsumption"))?;
        let t_ns = t0.elapsed().as_nanos() as u64;
        self.polls += 1;
        if self.last.is_some_and(|l| l != mj) {
            self.edges.push(CounterSample { t_ns, mj });
        }
        self.last = Some(mj);
        Ok(())
    }
}

impl EnergyMeter {
    /// Energy per call of `launch` (asynchronous, on `gpu`'s stream): a busy
    /// loop of back-to-back launches in chunks of about `opts.chunk_s`, at
    /// most two chunks in flight, the counter polled while waiting; after
    /// `opts.warmup_s`, up to `opts.repeats` windows of at least
    /// `opts.window_s` between counter changes inside the loop.
    pub fn measure<E>(
        &self,
        gpu: &Gpu,
        launch: &mut dyn FnMut() -> Result<(), E>,
        opts: &EnergyOptions,
    ) -> Result<EnergyMeasurement, E>
    where
        E: From<EnergyError> + From<RtError>,
    {
        let chunk = chunk_calls(gpu, launch, opts.chunk_s)?;
        // The loop runs past the last window by a margin of several updates.
        let busy_s = opts.warmup_s + opts.window_s * (opts.repeats as f64 + 0.5) + 0.05;
        let rec = self.record_busy(gpu, launch, chunk, busy_s)?;
        self.conclude(rec, busy_s, opts)
    }

    /// The measurement of a busy loop of `busy_s` seconds recorded in
    /// `rec` (counter changes and completions): the changes after the
    /// warm-up cut into `opts.repeats` windows, the counter's update
    /// interval, the idle power when `opts.idle`.
    fn conclude<E: From<EnergyError>>(
        &self,
        rec: Recording,
        busy_s: f64,
        opts: &EnergyOptions,
    ) -> Result<EnergyMeasurement, E> {
        let warm_ns = (opts.warmup_s * 1e9) as u64;
        let edges: Vec<CounterSample> = rec
            .edges
            .into_iter()
            .filter(|e| e.t_ns >= warm_ns)
            .collect();
        let windows = busy_windows(&edges, &rec.done, opts.window_s, opts.repeats);
        let interval = counter_stats(&edges, rec.polls, busy_s).map_or(f64::NAN, |s| s.interval_ms);
        let idle = if opts.idle {
            Some(self.idle_power(opts.window_s)?)
        } else {
            None
        };
        EnergyMeasurement::from_windows(&windows, idle, interval).ok_or_else(|| {
            E::from(EnergyError::TooFewUpdates {
                changes: edges.len(),
                seconds: busy_s - opts.warmup_s,
            })
        })
    }

    /// Runs the busy loop for `seconds`, recording counter changes and chunk
    /// completions.
    fn record_busy<E>(
        &self,
        gpu: &Gpu,
        launch: &mut dyn FnMut() -> Result<(), E>,
        chunk: u64,
        seconds: f64,
    ) -> Result<Recording, E>
    where
        E: From<EnergyError> + From<RtError>,
    {
        let dev = self.device()?;
        // Events and waits on the host: never inside a capture.
        let guard = gpu
            .outside_capture("EnergyMeter::measure")
            .map_err(E::from)?;
        let stream = &*guard;
        let mut rec = Recording::default();
        let mut in_flight: VecDeque<(cudarc::driver::CudaEvent, u64)> = VecDeque::new();
        let (t0, mut calls) = (Instant::now(), 0u64);
        loop {
            let more = t0.elapsed().as_secs_f64() < seconds;
            if more {
                for _ in 0..chunk {
                    launch()?;
                }
                calls += chunk;
                let ev = stream.record_event(None).map_err(RtError::from)?;
                in_flight.push_back((ev, calls));
            }
            let keep = if more { 1 } else { 0 };
            while in_flight.len() > keep {
                let Some((ev, n)) = in_flight.pop_front() else {
                    break;
                };
                while !ev.try_is_complete().map_err(RtError::from)? {
                    rec.poll(&dev, t0)?;
                }
                let t_ns = t0.elapsed().as_nanos() as u64;
                rec.done.push(Completion { t_ns, calls: n });
                rec.poll(&dev, t0)?;
            }
            if !more {
                return Ok(rec);
            }
        }
    }
}

/// Calls per chunk for about `chunk_s` of GPU time: a probe of 4 launches
/// (after one), timed with host synchronisation (an overestimate for short
/// launches, which only makes chunks smaller); 1 to 65536.
fn chunk_calls<E>(
    gpu: &Gpu,
    launch: &mut dyn FnMut() -> Result<(), E>,
    chunk_s: f64,
) -> Result<u64, E>
where
    E: From<RtError>,
{
    launch()?;
    gpu.synchronize()?;
    let t = Instant::now();
    for _ in 0..4 {
        launch()?;
    }
    gpu.synchronize()?;
    let per_call = t.elapsed().as_secs_f64() / 4.0;
    Ok((chunk_s / per_call.max(1e-9)).clamp(1.0, 65536.0) as u64)
}
