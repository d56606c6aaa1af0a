//! NCCL's unique id: rank 0 makes one and every rank of a multi-process run joins with it. It
//! travels as hex text, in an environment variable or a file.

use super::library::nccl_available;
use crate::error::{Error, Result};
use std::path::Path;

/// The environment variable [`UniqueId::from_env`] reads.
pub const NCCL_ID_ENV: &str = "PTXKIT_NCCL_ID";

const ID_BYTES: usize = 128;

/// The rendezvous token of one communicator: rank 0 creates it with [`UniqueId::new`] and
/// passes it to the other ranks ([`UniqueId::to_hex`], [`UniqueId::write_to`]).
///
/// ```
/// use kernel_runtime::UniqueId;
/// let text = "00".repeat(128);
/// let id = UniqueId::from_hex(&text).unwrap();
/// assert_eq!(id.to_hex(), text);
/// assert!(UniqueId::from_hex("zz").is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    bytes: [u8; ID_BYTES],
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UniqueId({}…)", &self.to_hex()[..16])
    }
}

impl UniqueId {
    /// A fresh id from NCCL (it also starts NCCL's bootstrap listener in this process).
    /// Without libnccl this is [`Error::NcclMissing`].
    ///
    /// ```
    /// match kernel_runtime::UniqueId::new() {
    ///     Ok(id) => println!("{}", id.to_hex()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    pub fn new() -> Result<UniqueId> {
        nccl_available()?;
        let raw = cudarc::nccl::result::get_uniqueid().map_err(|e| Error::Nccl {
            call: "ncclGetUniqueId",
            code: format!("{:?}", e.0),
        })?;
        Ok(UniqueId {
            bytes: raw.internal.map(|c| c as u8),
        })
    }

    /// The id as 256 lowercase hex digits.
    ///
    /// ```
    /// let id = kernel_runtime::UniqueId::from_hex(&"ab".repeat(128)).unwrap();
    /// assert_eq!(id.to_hex().len(), 256);
    /// ```
    pub fn to_hex(&self) -> String {
        self.bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`UniqueId::to_hex`]'s text (surrounding whitespace ignored).
    ///
    /// ```
    /// assert!(kernel_runtime::UniqueId::from_hex("00").is_err()); // too short
    /// ```
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let text = text.trim();
        if text.len() != 2 * ID_BYTES {
            return Err(Error::InvalidUniqueId {
                detail: format!("{} hex digits, expected {}", text.len(), 2 * ID_BYTES),
            });
        }
        let mut bytes = [0u8; ID_BYTES];
        for (i, byte) in bytes.iter_mut().enumerate() {
            let pair = text.get(2 * i..2 * i + 2).unwrap_or("");
            *byte = u8::from_str_radix(pair, 16).map_err(|_| Error::InvalidUniqueId {
                detail: format!("`{pair}` at byte {i} is not hex"),
            })?;
        }
        Ok(UniqueId { bytes })
    }

    /// Reads the id from [`NCCL_ID_ENV`].
    ///
    /// ```
    /// std::env::remove_var(kernel_runtime::NCCL_ID_ENV);
    /// assert!(kernel_runtime::UniqueId::from_env().is_err());
    /// ```
    pub fn from_env() -> Result<UniqueId> {
        let text = std::env::var(NCCL_ID_ENV).map_err(|_| Error::InvalidUniqueId {
            detail: format!("{NCCL_ID_ENV} is not set"),
        })?;
        UniqueId::from_hex(&text)
    }

    /// Writes the id to `path` as hex, for ranks that read it with [`UniqueId::read_from`].
    ///
    /// ```
    /// let id = kernel_runtime::UniqueId::from_hex(&"01".repeat(128)).unwrap();
    /// let path = std::env::temp_dir().join("ptxkit-doc-nccl-id");
    /// id.write_to(&path).unwrap();
    /// assert_eq!(kernel_runtime::UniqueId::read_from(&path).unwrap(), id);
    /// ```
    pub fn write_to(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_hex()).map_err(|e| Error::InvalidUniqueId {
            detail: format!("cannot write {}: {e}", path.display()),
        })
    }

    /// Reads an id [`UniqueId::write_to`] wrote.
    ///
    /// ```
    /// assert!(kernel_runtime::UniqueId::read_from(std::path::Path::new("/nonexistent")).is_err());
    /// ```
    pub fn read_from(path: &Path) -> Result<UniqueId> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::InvalidUniqueId {
            detail: format!("cannot read {}: {e}", path.display()),
        })?;
        UniqueId::from_hex(&text)
    }

    pub(crate) fn raw(&self) -> cudarc::nccl::sys::ncclUniqueId {
        cudarc::nccl::sys::ncclUniqueId {
            internal: self.bytes.map(|b| b as std::ffi::c_char),
        }
    }
}
