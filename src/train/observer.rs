//! What a training run reports as it goes: its lines, and how far it is, for a progress bar.

/// How far a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Loading every kernel the step uses by running one step, before the first real one.
    Prewarm,
    /// `done` of `total` steps taken.
    Steps { done: u32, total: u32 },
}

/// Receives a run's report: every line (the setup, the reference comparison, the loss), and
/// its progress, which a command line may show as a bar.
///
/// ```
/// use ptxkit::train::{run_observed, Launch, Observer, Progress, TrainConfig};
/// struct Count(u32);
/// impl Observer for Count {
///     fn line(&mut self, _line: &str) {}
///     fn progress(&mut self, p: Progress) {
///         if let Progress::Steps { done, .. } = p {
///             self.0 = done;
///         }
///     }
/// }
/// # fn main() -> Result<(), ptxkit::train::TrainError> {
/// let cfg = TrainConfig { steps: 4, ..TrainConfig::small() };
/// let mut count = Count(0);
/// run_observed(&kernel_runtime::Device::emulator(), &cfg, Launch::Graph, &mut count)?;
/// assert_eq!(count.0, 4);
/// # Ok(()) }
/// ```
pub trait Observer {
    /// One line of the report.
    fn line(&mut self, line: &str);
    /// The run reached `progress`; ignored unless overridden.
    fn progress(&mut self, progress: Progress) {
        let _ = progress;
    }
}

/// An observer that only takes lines, for [`run`](super::run).
pub(crate) struct Lines<'a>(pub &'a mut dyn FnMut(&str));

impl Observer for Lines<'_> {
    fn line(&mut self, line: &str) {
        (self.0)(line)
    }
}
