//! NVIDIA's assembler as a checking tool: find it, assemble a module for exactly the target its
//! `.target` names, and read the resource report. ptxas itself does not enforce target parity
//! (a lower `.target` assembles silently for a higher `-arch`), so [`Ptxas::assemble`] always
//! passes the module's own target.

use crate::error::Error;
use crate::parity::read_ptx_header;
use crate::target::Target;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the project's own install script puts ptxas 12.9 (relative to the workspace root;
/// [`Ptxas::find`] looks for it under the current directory and its parents).
pub const PROJECT_PTXAS: &str = ".tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas";

/// A located ptxas binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    pub path: PathBuf,
    /// Where results are kept between runs (`$PTXKIT_PTXAS_CACHE`), if anywhere: a module
    /// already assembled for its target, by this binary, is read back rather than assembled
    /// again (the test suite's checks assemble many of the same modules).
    pub cache: Option<PathBuf>,
}

/// Registers, spills and memory of one entry, as `ptxas -v` reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceReport {
    pub entry: String,
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_bytes: u32,
    pub shared_bytes: u32,
}

/// The result of assembling one module.
#[derive(Clone, Debug)]
pub struct Assembled {
    pub target: Target,
    pub cubin: Vec<u8>,
    pub reports: Vec<ResourceReport>,
    /// Everything ptxas wrote to stderr.
    pub log: String,
}

impl Ptxas {
    /// Finds ptxas when called, from the environment of the running program:
    /// `$PTXKIT_PTXAS`, then `$CUDA_HOME/bin/ptxas`, then `PATH`, then [`PROJECT_PTXAS`]
    /// under the current directory or any of its parents. Nothing is fixed at build time, so
    /// a binary copied to another machine looks there.
    ///
    /// ```
    /// // Finds nothing only where none of those places has one.
    /// if let Some(p) = kernel_dsl::ptxas::Ptxas::find() {
    ///     assert!(p.path.is_file());
    /// }
    /// ```
    pub fn find() -> Option<Ptxas> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("PTXKIT_PTXAS") {
            candidates.push(p.into());
        }
        if let Some(home) = std::env::var_os("CUDA_HOME") {
            candidates.push(Path::new(&home).join("bin/ptxas"));
        }
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
        }
        if let Ok(dir) = std::env::current_dir() {
            candidates.extend(dir.ancestors().map(|d| d.join(PROJECT_PTXAS)));
        }
        candidates
            .into_iter()
            .find(|p| p.is_file())
            .map(|path| Ptxas {
                path,
                cache: std::env::var_os("PTXKIT_PTXAS_CACHE").map(PathBuf::from),
            })
    }

    /// `ptxas --version`'s last line.
    pub fn version(&self) -> Result<String, Error> {
        let out = Command::new(&self.path)
            .arg("--version")
            .output()
            .map_err(|e| self.io(e))?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_string())
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Ptxas {
            detail: format!("could not run {}: {e}", self.path.display()),
        }
    }

    /// Assembles `ptx` with `-arch` set to the module's own `.target`; any error or warning
    /// fails.
    pub fn assemble(&self, ptx: &str) -> Result<Assembled, Error> {
        let (target, ok, cubin, log) = self.run(ptx)?;
        let warned = log
            .lines()
            .any(|l| l.contains("warning") || l.contains("error"));
        if !ok || warned {
            return Err(Error::Ptxas {
                detail: format!("ptxas -arch={target} rejected the module:\n{log}"),
            });
        }
        Ok(Assembled {
            target,
            cubin,
            reports: parse_report(&log),
            log,
        })
    }

    /// The cubin of `ptx` for its own `.target`, for shipping: fails only where ptxas does
    /// (a performance warning still yields the cubin it describes).
    pub fn cubin(&self, ptx: &str) -> Result<Vec<u8>, Error> {
        let (target, ok, cubin, log) = self.run(ptx)?;
        if !ok || cubin.is_empty() {
            return Err(Error::Ptxas {
                detail: format!("ptxas -arch={target} rejected the module:\n{log}"),
            });
        }
        Ok(cubin)
    }

    /// What turning line info on changes in `kernel`'s machine code for `target`: `None`
    /// where the SASS of every entry and ptxas's resource report are the same with `.loc`
    /// (and `-lineinfo`) as without, else what differs.
    ///
    /// ```no_run
    /// use kernel_dsl::{ptxas::Ptxas, samples, Target};
    /// let ptxas = Ptxas::find().expect("ptxas");
    /// let k = samples::vector_add();
    /// assert_eq!(ptxas.line_info_difference(&k, Target::Sm90).unwrap(), None);
    /// ```
    pub fn line_info_difference(
        &self,
        kernel: &crate::ir::Kernel,
        target: Target,
    ) -> Result<Option<String>, Error> {
        use crate::source_map::LineInfo;
        let with = crate::emit::emit_with(kernel, target, LineInfo::On)?;
        let without = crate::emit::emit_with(kernel, target, LineInfo::Off)?;
        let (a, b) = (self.assemble(&with)?, self.assemble(&without)?);
        if a.reports != b.reports {
            return Ok(Some(format!(
                "resources differ: {:?} with line info, {:?} without",
                a.reports, b.reports
            )));
        }
        let (ta, tb) = (
            crate::cubin_sections::text_sections(&a.cubin)?,
            crate::cubin_sections::text_sections(&b.cubin)?,
        );
        if ta != tb {
            let names = |t: &[(String, Vec<u8>)]| {
                t.iter()
                    .map(|(n, b)| format!("{n} ({} bytes)", b.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Ok(Some(format!(
                "SASS differs: {} with line info, {} without",
                names(&ta),
                names(&tb)
            )));
        }
        Ok(None)
    }

    /// Runs ptxas on `ptx`: its target, whether ptxas succeeded, the cubin and the log; from
    /// the cache where it holds this module for this binary.
    fn run(&self, ptx: &str) -> Result<(Target, bool, Vec<u8>, String), Error> {
        let target = read_ptx_header(ptx)?.target;
        let Some(dir) = &self.cache else {
            let (ok, cubin, log) = self.assemble_now(ptx, target)?;
            return Ok((target, ok, cubin, log));
        };
        let stem = dir.join(format!("{:016x}", self.cache_key(ptx)));
        if let Some((ok, cubin, log)) = read_cached(&stem, ptx) {
            return Ok((target, ok, cubin, log));
        }
        let (ok, cubin, log) = self.assemble_now(ptx, target)?;
        // A cache that cannot be written only costs the next caller a run of ptxas.
        let _ = write_cached(dir, &stem, ptx, ok, &cubin, &log);
        Ok((target, ok, cubin, log))
    }

    /// The cache's name for `ptx` assembled by this binary: the module's text and the binary's
    /// path, size and modification time (a reinstalled ptxas starts afresh). A hit is also
    /// checked against the module's length and a second hash of its text ([`check_of`]), so a
    /// collision of names is a miss.
    fn cache_key(&self, ptx: &str) -> u64 {
        let meta = std::fs::metadata(&self.path).ok();
        let stamp = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let id = format!(
            "{}\0{}\0{stamp}\0",
            self.path.display(),
            meta.map_or(0, |m| m.len())
        );
        crate::artifact::fnv1a64(&[id.as_bytes(), ptx.as_bytes()].concat())
    }

    /// Runs ptxas itself on `ptx` for `target`: whether it succeeded, the cubin and the log.
    fn assemble_now(&self, ptx: &str, target: Target) -> Result<(bool, Vec<u8>, String), Error> {
        let dir = std::env::temp_dir().join(format!(
            "ptxkit-ptxas-{}-{}",
            std::process::id(),
            crate::artifact::fnv1a64(ptx.as_bytes())
        ));
        std::fs::create_dir_all(&dir).map_err(|e| self.io(e))?;
        let input = dir.join("module.ptx");
        let output = dir.join("module.cubin");
        std::fs::write(&input, ptx).map_err(|e| self.io(e))?;
        let mut command = Command::new(&self.path);
        command.arg(format!("-arch={}", target.name())).arg("-v");
        if crate::source_map::has_line_info(ptx) {
            // Keeps the `.loc` table in the cubin for compute-sanitizer and Nsight Compute.
            command.arg("-lineinfo");
        }
        let out = command
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .output()
            .map_err(|e| self.io(e))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cubin = std::fs::read(&output).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        Ok((out.status.success(), cubin, log))
    }
}

/// What a cached result records of its module, to tell it from another of the same name: the
/// length and a hash of the text alone (the name hashes it after the binary's identity).
fn check_of(ptx: &str) -> String {
    format!(
        "{} {:016x}",
        ptx.len(),
        crate::artifact::fnv1a64(ptx.as_bytes())
    )
}

/// A cached result at `stem` (`.check`, `.cubin`, `.log`, `.ok`) if it was made from `ptx`.
fn read_cached(stem: &Path, ptx: &str) -> Option<(bool, Vec<u8>, String)> {
    let stored = std::fs::read_to_string(stem.with_extension("check")).ok()?;
    if stored != check_of(ptx) {
        return None;
    }
    let ok = std::fs::read_to_string(stem.with_extension("ok")).ok()? == "1";
    let cubin = std::fs::read(stem.with_extension("cubin")).ok()?;
    let log = std::fs::read_to_string(stem.with_extension("log")).ok()?;
    Some((ok, cubin, log))
}

/// Stores a result at `stem`, each file written whole and renamed into place, the check last:
/// a reader that finds it finds the rest (tests assemble from several threads).
fn write_cached(
    dir: &Path,
    stem: &Path,
    ptx: &str,
    ok: bool,
    cubin: &[u8],
    log: &str,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let check = check_of(ptx);
    let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let files: [(&str, &[u8]); 4] = [
        ("cubin", cubin),
        ("log", log.as_bytes()),
        ("ok", if ok { b"1" } else { b"0" }),
        ("check", check.as_bytes()),
    ];
    for (ext, bytes) in files {
        let tmp = stem.with_extension(format!("{ext}.{unique}.tmp"));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, stem.with_extension(ext))?;
    }
    Ok(())
}

/// Reads `ptxas -v` output into one report per entry.
pub fn parse_report(log: &str) -> Vec<ResourceReport> {
    let mut reports: Vec<ResourceReport> = Vec::new();
    let number_before = |line: &str, word: &str| -> u32 {
        let toks: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
            .collect();
        toks.windows(2)
            .find(|w| w[1].starts_with(word))
            .and_then(|w| w[0].parse().ok())
            .unwrap_or(0)
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let entry = rest.split('\'').next().unwrap_or("").to_string();
            reports.push(ResourceReport {
                entry,
                ..Default::default()
            });
        } else if let Some(r) = reports.last_mut() {
            if line.contains("bytes stack frame") {
                r.stack_bytes = number_before(line, "bytes");
                let spills: Vec<u32> = line
                    .split(',')
                    .map(|part| {
                        part.split_whitespace()
                            .next()
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0)
                    })
                    .collect();
                if spills.len() == 3 {
                    r.spill_stores = spills[1];
                    r.spill_loads = spills[2];
                }
            } else if line.contains("Used") && line.contains("registers") {
                r.registers = number_before(line, "registers");
                if let Some(idx) = line.find("bytes smem") {
                    let before: Vec<&str> = line[..idx].split_whitespace().collect();
                    r.shared_bytes = before.last().and_then(|n| n.parse().ok()).unwrap_or(0);
                }
            }
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_report_is_read_per_entry() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k1' for 'sm_80'\n\
ptxas info    : Function properties for k1\n\
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 2304 bytes smem, 372 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'k2' for 'sm_80'\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 12 registers, 368 bytes cmem[0]\n";
        let r = parse_report(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            ResourceReport {
                entry: "k1".into(),
                registers: 40,
                spill_stores: 8,
                spill_loads: 4,
                stack_bytes: 16,
                shared_bytes: 2304
            }
        );
        assert_eq!(r[1].registers, 12);
        assert_eq!(r[1].shared_bytes, 0);
    }

    #[test]
    fn a_cached_module_is_read_back_and_a_changed_one_is_assembled_again() {
        let Some(found) = Ptxas::find() else {
            println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
            return;
        };
        let dir = std::env::temp_dir().join(format!("ptxkit-ptxas-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ptxas = Ptxas {
            cache: Some(dir.clone()),
            ..found
        };
        let ptx = crate::emit::emit(&crate::samples::vector_add(), Target::Sm80).unwrap();
        let first = ptxas.assemble(&ptx).unwrap();
        let stem = dir.join(format!("{:016x}", ptxas.cache_key(&ptx)));
        assert_eq!(
            std::fs::read_to_string(stem.with_extension("check")).unwrap(),
            check_of(&ptx)
        );
        // A stored result is what a hit returns: mark the log to tell it from a fresh run.
        let marked = format!("{}cached\n", first.log);
        std::fs::write(stem.with_extension("log"), &marked).unwrap();
        let hit = ptxas.assemble(&ptx).unwrap();
        assert_eq!(hit.log, marked);
        assert_eq!(hit.cubin, first.cubin);
        assert_eq!(hit.reports, first.reports);
        // The same name over other text (a collision) is a miss, and ptxas runs again.
        std::fs::write(stem.with_extension("check"), check_of("// another module")).unwrap();
        let again = ptxas.assemble(&ptx).unwrap();
        assert!(!again.log.ends_with("cached\n"), "{}", again.log);
        assert_eq!(again.reports, first.reports);
        assert_eq!(
            std::fs::read_to_string(stem.with_extension("check")).unwrap(),
            check_of(&ptx)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
