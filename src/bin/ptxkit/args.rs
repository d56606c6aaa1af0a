use crate::error::CliError;
use ptxkit::dsl::Target;
use std::path::PathBuf;

/// Arguments of `ptxkit emit`.
pub struct EmitArgs {
    pub targets: Vec<Target>,
    pub out: PathBuf,
    pub kernels: Option<Vec<String>>,
}

impl EmitArgs {
    pub fn parse(args: &[String]) -> Result<EmitArgs, CliError> {
        let mut targets = None;
        let mut out = PathBuf::from("target/ptx");
        let mut kernels = None;
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| CliError::Usage(format!("`{flag}` needs a value")))
            };
            match flag.as_str() {
                "--targets" => {
                    let list: Result<Vec<Target>, _> =
                        value()?.split(',').map(str::parse).collect();
                    targets = Some(list?);
                }
                "--out" => out = PathBuf::from(value()?),
                "--kernels" => kernels = Some(value()?.split(',').map(str::to_string).collect()),
                other => return Err(CliError::Usage(format!("unknown option `{other}`"))),
            }
        }
        let targets = targets.ok_or_else(|| {
            CliError::Usage("`--targets` is required, e.g. --targets sm_89,sm_121".into())
        })?;
        Ok(EmitArgs {
            targets,
            out,
            kernels,
        })
    }
}
