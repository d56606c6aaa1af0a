//! Unit tests of the runtime's behaviour through its public API, on an emulator device backed by
//! the mock engine.

mod collectives;
mod emulated_launch;
mod fork_join;
mod graphs;
mod no_driver;
mod sealed;
mod tensor_maps;
mod validation;

use crate::testing::MockEngine;
use crate::Device;
use kernel_dsl::Target;

pub(crate) fn mock_device() -> Device {
    Device::emulator_with_engine(Target::Sm80, Box::new(MockEngine::default()))
}

/// A mock device plus a counter of the launches its engine ran.
pub(crate) fn counting_device() -> (Device, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let engine = MockEngine::default();
    let launches = engine.launches.clone();
    (
        Device::emulator_with_engine(Target::Sm80, Box::new(engine)),
        launches,
    )
}
