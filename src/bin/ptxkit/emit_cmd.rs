use crate::args::EmitArgs;
use crate::error::CliError;
use crate::progress::Progress;
use ptxkit::dsl::ptxas::Ptxas;
use ptxkit::dsl::{emit, ir::Kernel, Error as DslError};

/// Emits every selected kernel for every target, writes `<kernel>@<target>.ptx` files and
/// prints a kernel × target table with ptxas's resource report where ptxas is installed.
pub fn run(args: &EmitArgs) -> Result<(), CliError> {
    let kernels = select(ptxkit::available_kernels(), args.kernels.as_deref())?;
    std::fs::create_dir_all(&args.out).map_err(|source| CliError::Io {
        path: args.out.display().to_string(),
        source,
    })?;
    let ptxas = Ptxas::find();
    let progress = Progress::new();
    progress.start(
        "emit",
        (kernels.len() * args.targets.len()) as u64,
        "modules",
    );
    progress.line(&format!(
        "{:<22} {:<8} {:<7} {:>5} {:>7} {:>7} {:>7}  file",
        "kernel", "target", "isa", "regs", "spill", "smem", "stack"
    ));
    let mut written = 0;
    let mut done = 0;
    for k in &kernels {
        for &t in &args.targets {
            progress.set(done, Some(&format!("emit {}@{}", k.name, t.name())));
            done += 1;
            let ptx = match emit::emit(k, t) {
                Ok(p) => p,
                Err(DslError::BeyondTarget { .. }) => {
                    // The whole kernel's need, not the first instruction's: `setmaxnreg` alone
                    // runs on any `a` target, but beside `wgmma` only sm_90a will do.
                    let need = ptxkit::dsl::catalog::kernel_requirement(k);
                    progress.line(&format!(
                        "{:<22} {:<8} refused: needs {need}",
                        k.name,
                        t.name()
                    ));
                    continue;
                }
                Err(e) => {
                    progress.line(&format!("{:<22} {:<8} error: {e}", k.name, t.name()));
                    continue;
                }
            };
            let path = args.out.join(format!("{}@{}.ptx", k.name, t.name()));
            std::fs::write(&path, &ptx).map_err(|source| CliError::Io {
                path: path.display().to_string(),
                source,
            })?;
            written += 1;
            let isa = ptxkit::dsl::read_ptx_header(&ptx)
                .map(|h| h.version.to_string())
                .unwrap_or_default();
            let resources = match &ptxas {
                Some(p) => match p.assemble(&ptx) {
                    Ok(a) => a
                        .reports
                        .first()
                        .map(|r| {
                            format!(
                                "{:>5} {:>7} {:>7} {:>7}",
                                r.registers,
                                r.spill_stores + r.spill_loads,
                                r.shared_bytes,
                                r.stack_bytes
                            )
                        })
                        .unwrap_or_default(),
                    Err(e) => format!(
                        "ptxas rejected it: {}",
                        e.to_string().lines().nth(1).unwrap_or("")
                    ),
                },
                None => format!("{:>5} {:>7} {:>7} {:>7}", "-", "-", "-", "-"),
            };
            progress.line(&format!(
                "{:<22} {:<8} {:<7} {resources}  {}",
                k.name,
                t.name(),
                isa,
                path.display()
            ));
        }
    }
    progress.finish();
    match &ptxas {
        Some(p) => println!("\nresources from {} ({})", p.path.display(), p.version().unwrap_or_default()),
        None => println!("\nptxas not found: run `bash scripts/install-ptxas.sh` (ptxas 12.9 from PyPI, no GPU needed) or set PTXKIT_PTXAS to fill the resource columns"),
    }
    if written == 0 {
        return Err(CliError::NothingEmitted(args.targets.clone()));
    }
    Ok(())
}

fn select(all: Vec<Kernel>, names: Option<&[String]>) -> Result<Vec<Kernel>, CliError> {
    let Some(names) = names else { return Ok(all) };
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|k| &k.name == n)
                .cloned()
                .ok_or_else(|| CliError::UnknownKernel(n.clone()))
        })
        .collect()
}
