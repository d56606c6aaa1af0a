use crate::{Device, DeviceKind, Error};

#[test]
fn opening_a_cuda_device_without_a_driver_is_an_error_not_a_panic() {
    // SAFETY: probing only tries to dlopen the driver library.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    match Device::cuda(0) {
        Ok(device) => assert!(present, "opened {device:?} without a driver library"),
        Err(Error::NoDriver { .. }) => {
            assert!(!present);
            let msg = Device::cuda(0).unwrap_err().to_string();
            assert!(msg.contains("Device::emulator()"), "{msg}");
        }
        Err(e) => assert!(present, "unexpected error without a driver: {e}"),
    }
}

#[test]
fn best_falls_back_to_the_emulator_without_a_gpu() {
    let device = Device::best();
    if Device::cuda(0).is_err() {
        assert_eq!(device.props().kind, DeviceKind::Emulator);
    } else {
        assert!(matches!(
            device.props().kind,
            DeviceKind::Cuda { ordinal: 0 }
        ));
    }
}
