//! What an emulator device is built with: the target it runs kernels as, and the emulator's
//! limits.

use crate::device::EMULATOR_DEFAULT_TARGET;
use kernel_dsl::Target;

/// Settings for [`Device::emulator_with`](crate::Device::emulator_with).
///
/// ```
/// use kernel_runtime::{Device, EmulatorOptions};
/// let options = EmulatorOptions::new()
///     .target(kernel_dsl::Target::Sm90)
///     .step_budget(100_000_000_000);
/// let device = Device::emulator_with(options);
/// assert_eq!(device.target(), kernel_dsl::Target::Sm90);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmulatorOptions {
    pub(crate) target: Target,
    pub(crate) step_budget: Option<u64>,
    pub(crate) sm_count: u32,
}

impl Default for EmulatorOptions {
    fn default() -> EmulatorOptions {
        EmulatorOptions::new()
    }
}

impl EmulatorOptions {
    /// [`EMULATOR_DEFAULT_TARGET`] and the emulator's default step budget.
    ///
    /// ```
    /// let options = kernel_runtime::EmulatorOptions::new();
    /// assert_eq!(options, kernel_runtime::EmulatorOptions::default());
    /// ```
    pub fn new() -> EmulatorOptions {
        EmulatorOptions {
            target: EMULATOR_DEFAULT_TARGET,
            step_budget: None,
            sm_count: 1,
        }
    }

    /// Runs kernels as `target` (modules must be for exactly this target, as on a GPU).
    ///
    /// ```
    /// let options = kernel_runtime::EmulatorOptions::new().target(kernel_dsl::Target::Sm90);
    /// # let _ = options;
    /// ```
    pub fn target(mut self, target: Target) -> EmulatorOptions {
        self.target = target;
        self
    }

    /// Stops a launch once its threads have run `instructions` instructions in all, as an
    /// error naming the kernel, thread and instruction: an endless loop becomes an error
    /// instead of a hang. Without this, the budget is the `PTXKIT_EMULATOR_STEP_BUDGET`
    /// environment variable where set, else [`ptx_emulator::DEFAULT_STEP_BUDGET`] (about 8.6
    /// billion). Raise it for a kernel that is just long.
    ///
    /// ```
    /// let options = kernel_runtime::EmulatorOptions::new().step_budget(1_000_000);
    /// # let _ = options;
    /// ```
    pub fn step_budget(mut self, instructions: u64) -> EmulatorOptions {
        self.step_budget = Some(instructions);
        self
    }

    /// Reports `sms` SMs in the device's properties (1 unless set). Blocks still run one at a
    /// time; what changes is what the library plans from the count (persistent grids, split-k),
    /// so such plans can be tested on the emulator as a GPU of that size would run them.
    ///
    /// ```
    /// use kernel_runtime::{Device, EmulatorOptions};
    /// let device = Device::emulator_with(EmulatorOptions::new().sm_count(132));
    /// assert_eq!(device.props().sm_count, 132);
    /// ```
    pub fn sm_count(mut self, sms: u32) -> EmulatorOptions {
        self.sm_count = sms.max(1);
        self
    }
}
